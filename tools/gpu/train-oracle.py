#!/usr/bin/env python3
"""train-oracle: runs cgtviz traces under PyTorch's CUDAGraph Trees like
../shared/tools/torch-oracle2.py, but runs each forward/backward def pair as
a real autograd pair (issue 13 item 6), and prints PyTorch's decisions in
torch-oracle2's format, so the Go side compares them as it compares the rest.

    python3 tools/gpu/train-oracle.py [--oracle2 PATH] TRACE... > oracle.jsonl
    (--jobs N, --deadline S, --logdir DIR as torch-oracle2.py)

torch-oracle2.py (found at --oracle2, $TORCH_ORACLE2, ../shared/tools/,
shared/tools/ or .bin/ of this checkout) is imported, not copied: its source generation,
tensors, expect checks, tree bookkeeping, time limits and workers are used
as they are. In traces with forward or backward defs:

- The tensors a forward call takes that are `param` records require grad
  (a module's parameters), so torch.compile makes a forward graph (mode
  FORWARD, a backward pending) and its backward graph.
- A forward def's body is made differentiable where the recorder
  synthesised a constant (fill, empty): every fresh output gets
  `+ 0 * (sum of every input)`, the same values, now depending on the
  inputs, so autograd has a backward to run.
- A forward call keeps, instead of its outputs, one scalar per call (the sum
  of its outputs that require grad, made eagerly outside the graph pool): it
  holds the autograd graph as a program's loss does, not the outputs, whose
  lives stay the trace's.
- A backward call is paired with the most recent forward call whose backward
  has not run (autograd runs mod2's backward before mod1's); it runs
  torch.autograd.grad(that scalar, the forward's grad-requiring inputs), so
  PyTorch's own backward graph reaches the tree (named after the trace's
  backward def), and binds the call's `out` to the gradients (zeros for any
  it has no gradient for). The backward def's body is not run: autograd's
  backward of the forward is the real one.
- A backward call with no pending forward runs its def as torch-oracle2 does.

Each result also has "training": {"pairs": [[forward line, backward line],
...], "unpaired": [lines], "notes": [...]}.

Every trace given runs through this loop, a trace without forward or
backward defs as torch-oracle2 runs it, with three additions (issue 33
item 6):

- A call that raised has the action PyTorch took before raising, as cgtrace
  writes it: the last of the tree's entry points it entered (run_eager:
  warmup, record_function: record, execute_node: replay, with node_fn and
  parent_fn of the node execute_node made current), "eager" when it raised
  in CUDAGraphTreeManager.run before any of them, and null when it never
  reached the tree. torch-oracle2 gives such a call no action, so an
  expect record's action after a raised call fails there; here PyTorch is
  held to it.
- The header's config keys that are PyTorch knobs (KNOBS) are set for the
  trace and restored after it; the others (cgtviz's own limits) are left
  out, and a note names the ones PyTorch has no knob for.
- Each trace whose expectations PyTorch failed is named on stderr (the
  step's log in tools/gpu/gpu.sh).
"""
import importlib.util
import os
import sys
import traceback
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def find_oracle2(argv):
    """The path of torch-oracle2.py and argv without --oracle2."""
    path, rest, i = None, [], 0
    while i < len(argv):
        if argv[i] == "--oracle2" and i + 1 < len(argv):
            path = argv[i + 1]
            i += 2
            continue
        rest.append(argv[i])
        i += 1
    cands = [path, os.environ.get("TORCH_ORACLE2"),
             os.path.join(ROOT, "..", "shared", "tools", "torch-oracle2.py"),
             os.path.join(ROOT, "shared", "tools", "torch-oracle2.py"),
             os.path.join(ROOT, ".bin", "torch-oracle2.py")]
    for c in cands:
        if c and os.path.isfile(c):
            return os.path.abspath(c), rest
    raise SystemExit("train-oracle: torch-oracle2.py not found (give --oracle2 PATH or $TORCH_ORACLE2)")


def load_oracle2(path):
    spec = importlib.util.spec_from_file_location("torch_oracle2", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["torch_oracle2"] = mod
    spec.loader.exec_module(mod)
    return mod


# ---------------------------------------------------------------- torch-free planning

def def_modes(recs):
    return {r["fn"]: r.get("mode", "inference") for _, r in recs if r.get("op") == "def"}


def is_training(recs):
    return any(m in ("forward", "backward") for m in def_modes(recs).values())


def plan(recs):
    """Pairs each backward call with the most recent forward call whose
    backward is pending. Returns (pairs {backward line: forward line},
    unpaired backward lines, names of params that require grad)."""
    modes = def_modes(recs)
    params = {r["name"] for _, r in recs if r.get("op") == "param"}
    pending, pairs, unpaired, grad = [], {}, [], set()
    for line, r in recs:
        if r.get("op") != "call":
            continue
        mode = modes.get(r["fn"], "inference")
        if mode == "forward":
            pending.append(line)
            grad.update(a for a in r["args"] if a in params)
        elif mode == "backward":
            if pending:
                pairs[line] = pending.pop()
            else:
                unpaired.append(line)
    return pairs, unpaired, grad


def differentiable_def(d):
    """A forward def whose fresh outputs depend on every input (+ 0 * sums),
    so autograd has a backward; values, shapes and aliasing unchanged."""
    params = list(d["params"])
    body = [dict(st) for st in d.get("body") or []]
    if not params:
        return d
    produced = {st["out"]: st for st in body}
    fresh = [r for r in d.get("returns") or [] if r in produced and r not in params
             and produced[r]["k"] != "view"]
    if not fresh:
        return d
    taken = set(params) | set(produced) | set(d.get("returns") or [])

    def new(base):
        n, name = 0, base
        while name in taken:
            n += 1
            name = "%s_%d" % (base, n)
        taken.add(name)
        return name

    extra, sums = [], []
    for p in params:
        s = new("dep_sum")
        extra.append({"out": s, "k": "sum", "a": p})
        sums.append(s)
    acc = sums[0]
    for s in sums[1:]:
        t = new("dep_acc")
        extra.append({"out": t, "k": "add", "a": acc, "b": s})
        acc = t
    zero = new("dep_zero")
    extra.append({"out": zero, "k": "mul", "a": acc, "b": 0})
    returns = list(d["returns"])
    for r in fresh:
        orig = new(r + "_const")
        for st in body:  # rename where r is made, and where it is read after
            if st["out"] == r:
                st["out"] = orig
            elif st.get("a") == r:
                st["a"] = orig
            elif st.get("b") == r:
                st["b"] = orig
        extra.append({"out": r, "k": "add", "a": orig, "b": zero})
    return dict(d, body=body + extra, returns=returns)


# The header config keys that name PyTorch knobs: key -> (the knob's object
# under torch, its attribute, the knob's value for the key's value).
KNOBS = {
    "support_input_mutation": ("_inductor.config.triton", "cudagraph_support_input_mutation", bool),
    "inline_inbuilt_nn_modules": ("_dynamo.config", "inline_inbuilt_nn_modules", bool),
    "cudagraph_or_error": ("_inductor.config.triton", "cudagraph_or_error", bool),
    "warmup_runs": ("_inductor.config.triton", "skip_cudagraph_warmup", lambda n: n == 0),
}


def knob_settings(header):
    """The knobs a trace's header config sets, [(object path, attribute,
    value)], and notes for the keys PyTorch has no knob for."""
    sets, notes = [], []
    for key, value in sorted((header.get("config") or {}).items()):
        k = KNOBS.get(key)
        if k is None or (key == "warmup_runs" and value not in (0, 1)):
            notes.append("config %s=%r: PyTorch has no knob for it, left out" % (key, value))
            continue
        sets.append((k[0], k[1], k[2](value)))
    return sets, notes


def raised_action(actions, entered):
    """The action of a call that raised, as cgtrace writes it (see above)."""
    if actions:
        return actions[-1]
    return "eager" if entered else None


class Entered:
    """Whether the current call entered CUDAGraphTreeManager.run."""
    flag = False


def _patch_entered(M):
    if getattr(M, "_train_oracle_entered", False):
        return
    orig = M.run

    def run(self, *a, **k):
        Entered.flag = True
        return orig(self, *a, **k)

    M.run = run
    M._train_oracle_entered = True


def _knob_object(torch, path):
    obj = torch
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


# ---------------------------------------------------------------- the run

def make_runner(o2):
    def run_trace(path, builder):
        header, recs = o2.read_trace(path)
        res = run_training(o2, path, builder, header, recs)
        failed = res.get("expect_failures") or []
        if failed:
            print("%s: PyTorch failed %d expectation(s): %s" % (path, len(failed), "; ".join(
                "line %d: %s" % (f["line"], ", ".join(f["failed"])) for f in failed)), file=sys.stderr)
        return res

    return run_trace


def run_training(o2, path, builder, header, recs):
    torch = o2.torch
    o2.fresh_state()
    _patch_entered(o2.cgt.CUDAGraphTreeManager)
    knobs, notes = knob_settings(header)
    saved = []
    for obj_path, attr, value in knobs:
        obj = _knob_object(torch, obj_path)
        saved.append((obj, attr, getattr(obj, attr)))
        setattr(obj, attr, value)
    try:
        return _run_loop(o2, path, builder, header, recs, notes)
    finally:
        for obj, attr, value in reversed(saved):
            setattr(obj, attr, value)


def _run_loop(o2, path, builder, header, recs, notes):
    torch = o2.torch
    modes = def_modes(recs)
    pairs, unpaired, grad_names = plan(recs)
    fns, names, rand_names = {}, {}, set()
    handles = {}  # forward call line -> (scalar holding its graph, [grad-requiring input names])
    steps, expect_failures = [], []
    last = {}
    for lineno, rec in recs:
        op = rec["op"]
        step = {"line": lineno, "op": op}
        raised = False
        # The warnings PyTorch issues during the record (the tree's "Unable
        # to hit fast path" among them), for the engine to be compared on.
        catcher = warnings.catch_warnings(record=True)
        caught = catcher.__enter__()
        warnings.simplefilter("always")
        try:
            if op == "def":
                d = differentiable_def(rec) if modes.get(rec["fn"]) == "forward" else rec
                fns[rec["fn"]] = torch.compile(builder.build(d), mode="reduce-overhead")
            elif op in ("tensor", "param"):
                t = o2.make_tensor(rec)
                if op == "param":
                    torch._dynamo.mark_static_address(t, guard=False)
                if rec["name"] in grad_names:
                    t.requires_grad_(True)
                names[rec["name"]] = t
                del t
                (rand_names.add if rec.get("init") == "rand" else rand_names.discard)(rec["name"])
            elif op == "call":
                o2.LOG.actions = []
                o2.LOG.current_fn = rec["fn"]
                Entered.flag = False
                mode = modes.get(rec["fn"], "inference")
                if mode == "backward" and lineno in pairs:
                    fwd = pairs[lineno]
                    step["pair"] = fwd
                    res = _backward(torch, names, handles.pop(fwd, None), len(_returns(recs, rec["fn"])))
                else:
                    if mode == "forward":
                        _ensure_grad(names, rec["args"], lineno, notes)
                    res = o2.invoke(fns[rec["fn"]], names, rec["args"])
                    if mode == "forward":
                        handles[lineno] = _handle(torch, res, names, rec["args"])
                o2.LOG.current_fn = None
                o2.bind(names, rand_names, rec.get("out") or [], res)
                del res
                m = o2.mgr()
                acts = list(o2.LOG.actions)
                step["actions"] = acts
                step["action"] = acts[-1] if acts else "eager"
                node = m.current_node if m is not None else None
                if step["action"] in ("record", "replay") and node is not None:
                    step["node_fn"] = o2.fn_name(node)
                    step["parent_fn"] = o2.fn_name(node.parent)
            elif op == "eager":
                t = o2.run_eager_stmt(rec, names)
                if rec["out"] != "_":
                    names[rec["out"]] = t
                    rand_names.discard(rec["out"])
                del t
            elif op == "del":
                for n in rec["names"]:
                    del names[n]
            elif op == "step":
                torch.compiler.cudagraph_mark_step_begin()
            elif op == "empty_cache":
                torch.cuda.empty_cache()
            elif op == "read":
                names[rec["name"]].detach().cpu()
            elif op == "expect":
                f = o2.check_expect(rec, last, names, rand_names)
                step["failed"] = f
                if f:
                    expect_failures.append({"line": lineno, "failed": f})
            step["error"] = None
        except Exception as e:  # the trace's error, as PyTorch raised it
            o2.LOG.current_fn = None
            if op == "call":
                acts = list(o2.LOG.actions)
                step["actions"] = acts
                step["action"] = raised_action(acts, Entered.flag)
                m = o2.mgr()
                node = m.current_node if m is not None else None
                if step["action"] == "replay" and node is not None:
                    step["node_fn"] = o2.fn_name(node)
                    step["parent_fn"] = o2.fn_name(node.parent)
            step["error"] = o2.error_text(e)
            step["trace"] = traceback.format_exc(limit=2)[-600:]
            e.__traceback__ = None
            del e
            raised = True
        finally:
            catcher.__exit__(None, None, None)
        step["warnings"] = [str(w.message) for w in caught]
        if raised:
            o2.gc.collect()
        st = o2.tree_state()
        step["checkpoints"] = st["checkpoints"]
        steps.append(step)
        if op != "expect":
            last = step
    torch.cuda.synchronize()
    final = o2.tree_state()
    del names, fns, handles
    return {"trace": path, "name": header.get("name"), "torch": torch.__version__,
            "steps": steps, "final": final, "expect_failures": expect_failures,
            "training": {"pairs": sorted([f, b] for b, f in pairs.items()), "unpaired": unpaired,
                         "notes": notes}}


def _returns(recs, fn):
    for _, r in recs:
        if r.get("op") == "def" and r["fn"] == fn:
            return r.get("returns") or []
    return []


def _ensure_grad(names, args, lineno, notes):
    """A forward needs an input that requires grad, or torch.compile makes an
    inference graph: the first floating leaf argument is made to."""
    ts = [names[a] for a in args]
    if any(t.requires_grad for t in ts):
        return
    for a, t in zip(args, ts):
        if t.is_leaf and t.is_floating_point():
            t.requires_grad_(True)
            notes.append("line %d: no argument of the forward required grad; %s does now" % (lineno, a))
            return


def _handle(torch, res, names, args):
    """The scalar that keeps a forward's autograd graph alive (as a loss
    does), and the names of its inputs that require grad."""
    outs = [o for o in res if torch.is_tensor(o) and o.requires_grad]
    scalar = None
    for o in outs:
        s = o.sum()
        scalar = s if scalar is None else scalar + s
    wanted = [a for a in args if names[a].requires_grad]
    return scalar, wanted


def _backward(torch, names, handle, n_returns):
    """Runs autograd's backward of a forward call; the gradients of its
    grad-requiring inputs, padded with zeros (or cut) to the backward def's
    returns."""
    grads = []
    if handle is not None and handle[0] is not None:
        scalar, wanted = handle
        inputs = [names[a] for a in wanted if a in names]
        if inputs:
            got = torch.autograd.grad(scalar, inputs, allow_unused=True)
            grads = [g if g is not None else torch.zeros_like(i) for g, i in zip(got, inputs)]
            del got
        del scalar, inputs
    while len(grads) < n_returns:
        grads.append(torch.zeros(1, device="cuda"))
    return tuple(grads[:n_returns])


def main(argv):
    path, argv = find_oracle2(argv)
    o2 = load_oracle2(path)
    o2.run_trace = make_runner(o2)
    # --jobs workers run o2's __file__: make them run this script instead,
    # with the same oracle2.
    o2.__file__ = os.path.abspath(__file__)
    os.environ["TORCH_ORACLE2"] = path
    return o2.main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
