#!/usr/bin/env python3
"""oracle-probe: torch-oracle.py with more to say, to settle the open
differences of docs/oracle-differences.md on the GPU machine.

It loads ../shared/tools/torch-oracle.py (copied to .bin/ by `make
gpu-build`) and changes two things:

1. Every trace function is compiled from its own code object, as in a real
   program. torch-oracle.py compiles them all from one closure, so Dynamo's
   cache, its recompile limit and its automatic-dynamic shape history are
   shared by all of a trace's functions; cgtviz models separate functions.
   `--shared` keeps the oracle's behaviour, to compare the two.
2. Each trace's output gains "probe": one entry per call record, in order,
   with every check_invariants that PyTorch ran during the call (the
   candidate node, its function and the status) and, for a node the call
   recorded, its static and cudagraph-managed input indices.

The output is torch-oracle.py's, one JSON object per trace, so the engine's
TestOracle reads it as it is (CGTVIZ_ORACLE=...):

    python3 tools/gpu/oracle-probe.py .bin/torch-oracle.py TRACE... > probe.jsonl
"""
import importlib.util
import itertools
import json
import sys
import traceback
import types

# Code objects get distinct first line numbers as well as names, so that
# Dynamo's CodeId (file, first line, name) differs even when two traces in
# one process define functions of the same name.
_serial = itertools.count(1)


def separate_code(f, name):
    """Returns f rebuilt on a code object of its own, named name: the same
    body and closure, but a cache, recompile count and shape history of its
    own in Dynamo, whose state is keyed by the code object."""
    fields = {"co_name": name, "co_firstlineno": 100000 + next(_serial)}
    if hasattr(f.__code__, "co_qualname"):  # Python 3.11 and later
        fields["co_qualname"] = name
    code = f.__code__.replace(**fields)
    g = types.FunctionType(code, f.__globals__, name, f.__defaults__, f.__closure__)
    g.__qualname__ = name
    return g


def function_body(run_stmt, d):
    """The trace function d as plain Python, the way torch-oracle.py runs a
    def: statements over an environment seeded with the arguments."""
    params, body, returns = d["params"], d["body"], d["returns"]

    def f(*args):
        env = dict(zip(params, args))
        for st in body:
            env[st["out"]] = run_stmt(st, env, params)
        return tuple(env[r] for r in returns)

    return f


class Probe:
    """What PyTorch checked during each call of the current trace."""

    def __init__(self):
        self.calls = []

    def begin(self, fn):
        self.calls.append({"fn": fn, "checks": []})

    def check(self, entry):
        if self.calls:
            self.calls[-1]["checks"].append(entry)

    def recorded(self, node):
        if self.calls and node is not None and hasattr(node, "static_input_idxs"):
            self.calls[-1]["recorded"] = {
                "node": node.id.id,
                "static_input_idxs": sorted(int(i) for i in node.static_input_idxs),
                "cudagraph_managed_idxs": sorted(int(i) for i in node.cudagraph_managed_idxs),
            }


def load_oracle(path):
    spec = importlib.util.spec_from_file_location("torch_oracle", path)
    mod = importlib.util.module_from_spec(spec)
    # Dynamo looks a traced function's module up by name (its globals'
    # __name__): a module loaded from a file path must be in sys.modules,
    # or every compiled call fails with "No module named 'torch_oracle'".
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def install(oracle, probe, shared):
    """Patches the loaded oracle: per-function code objects (unless shared),
    the probe around each compiled call and around check_invariants."""
    torch, cgt = oracle.torch, oracle.cgt
    orig_make_fn = oracle.make_fn

    def make_fn(d):
        if shared:
            compiled = orig_make_fn(d)
        else:
            f = separate_code(function_body(oracle.run_stmt, d), d["fn"])
            compiled = torch.compile(f, mode="reduce-overhead")

        def call(*args):
            probe.begin(d["fn"])
            try:
                return compiled(*args)
            finally:
                m = oracle.mgr()
                if m is not None and oracle.LOG.actions and oracle.LOG.actions[-1] == "record":
                    probe.recorded(m.current_node)

        return call

    oracle.make_fn = make_fn

    orig_check = cgt.CUDAGraphNode.check_invariants

    def check_invariants(self, inputs):
        res = orig_check(self, inputs)
        status = res[0] if isinstance(res, tuple) else res
        probe.check({"node": self.id.id, "fn": oracle.fn_name(self), "status": str(status)})
        return res

    cgt.CUDAGraphNode.check_invariants = check_invariants


def main(argv):
    args = argv[1:]
    shared = "--shared" in args
    args = [a for a in args if a != "--shared"]
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    oracle = load_oracle(args[0])
    probe = Probe()
    install(oracle, probe, shared)
    oracle._patch()
    for path in args[1:]:
        probe.calls = []
        try:
            out = oracle.run_trace(path)
        except Exception as e:  # one trace's crash must not hide the others
            out = {"trace": path, "crash": "%s: %s" % (type(e).__name__, e),
                   "where": traceback.format_exc(limit=3)[-800:]}
        out["code_objects"] = "shared" if shared else "per function"
        out["probe"] = probe.calls
        print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
