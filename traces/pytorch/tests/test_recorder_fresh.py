"""A loop with a new input at every call (issue 33 item 5): each new
tensor like the last one made for its slot is written from that record's
line (Session._tensor_record's template), which must be the line the
record dict gives."""

import json
import os
import sys
import unittest
from unittest import mock

import fake_torch as fake  # (puts the recorder on sys.path)

import cgtrace  # noqa: E402
from cgtrace.freshq import _FQ_BOUND  # noqa: E402


def one_function():
    """The loops' tree: one function f on a static [8, 8] param w, a new
    [16, 8] output at each call, replays handing out cached outputs.
    Returns (the cudagraph_trees module, the manager, f, w)."""
    mgr = fake.CUDAGraphTreeManager()
    mgr.cache_replays = True
    f = mgr.add(0, static=[0])
    mgr.models[0] = lambda ins: [fake.Tensor([16, 8])]
    return sys.modules["torch._inductor.cudagraph_trees"], mgr, f, fake.Tensor([8, 8])


def fresh_loop(path, n=24):
    """Calls of two functions: f on a static param and a new [64, 1024]
    input at every call (a data loader's batches), some bfloat16, the last
    ones of another shape (each new kind takes the dict path, then the
    template), g on f's output; a host read. Returns the trace's text and
    how many tensor records were written from a template."""
    cgt = sys.modules["torch._inductor.cudagraph_trees"]
    mgr = fake.CUDAGraphTreeManager()
    mgr.cache_replays = True
    f = mgr.add(0, static=[0])
    g = mgr.add(1)
    mgr.models[0] = lambda ins: [fake.Tensor([64, 1024])]
    mgr.models[1] = lambda ins: [fake.Tensor([64, 1024])]
    w = fake.Tensor([1024, 1024])
    with cgtrace.record(path) as rec:
        for i in range(n):
            cgt.mark_step_begin()
            fake._invocation()
            dtype = fake.bfloat16 if 8 <= i < 12 else fake.float32
            x = fake.Tensor([64, 1024], dtype=dtype)
            if i >= 16:
                x = fake.Tensor([32, 1024])
            y, = mgr._run([w, x], f)
            z, = mgr._run([y], g)
            if i == 5:
                z.item()
            del x, y, z
    assert rec.error is None, rec.error
    with open(path) as fh:
        return fh.read(), rec.session.counts["tensors"] - sum(1 for k in rec.session._tensor_lines if k[0] == "tensor")


class FreshInputTest(fake.FakeTorchTest):
    def test_template_lines_are_the_records_lines(self):
        on, templated = fake.at_one_line(fresh_loop, os.path.join(self.dir.name, "on.cgt.jsonl"))
        self.assertEqual(templated, 24 - 3)  # all but the first of each kind
        self.tearDown()
        self.setUp()
        with mock.patch.object(cgtrace.Session, "templates", False):
            off, _ = fake.at_one_line(fresh_loop, os.path.join(self.dir.name, "off.cgt.jsonl"))
        self.assertEqual(on.split("\n", 1)[1], off.split("\n", 1)[1])
        recs = [json.loads(x) for x in on.splitlines()[1:]]
        tensors = [r for r in recs if r["op"] == "tensor"]
        self.assertEqual(len(tensors), 24)
        self.assertEqual({r["init"] for r in tensors}, {"rand"})
        self.assertEqual({r.get("dtype", "float32") for r in tensors}, {"bfloat16", "float32"})


def settled_state(rec):
    """The session's state once what the recorder holds is written: what
    the scenarios compare between the recorder's paths."""
    with rec.lock:
        rec._settle()
    ss = rec.session
    return (list(ss.entries), [list(v) for v in ss.by_storage.values()], list(ss._watch),
            sorted(ss.by_view.values()), ss.order, ss.epoch, ss.seed, sorted(ss.names_used),
            dict(ss.counts), [(e.name, e.order) for e in ss.entries.values()],
            sorted(ss._held_wr.values()), rec._mark_counter)


def written(rec, path, state):
    """A scenario's result: the trace's text, the session's state at the
    end, the calls the short path took."""
    assert rec.error is None, rec.error
    with open(path) as fh:
        return fh.read(), state, rec.fresh_calls


def fresh_scenario(path, follow=False):
    """A loop over new inputs through what a short path before the call
    (Recorder._fresh_before) must see as the general path does: inputs
    dying after their call, kept a while, kept by a view of their storage,
    a view of a named tensor's storage as the new input, two new inputs
    at once, none or several steps (a 64th among them), a knob set, a host
    read, a call that raises, another shape, a swapped parameter, another
    function between, an output the program drops, and a new input dying
    inside its call. follow: the trace streamed for a follower. Returns
    (the trace's text, the session's state at the
    end, the calls the short path took)."""
    cgt = sys.modules["torch._inductor.cudagraph_trees"]
    ind = sys.modules["torch._inductor.config"]
    mgr = fake.CUDAGraphTreeManager()
    mgr.cache_replays = True
    f = mgr.add(0, static=[0])
    g = mgr.add(1)
    two = mgr.add(2, static=[0])
    rnn = mgr.add(3, static=[0])
    mgr.models[0] = lambda ins: [fake.Tensor([16, 8])]
    mgr.models[1] = lambda ins: [fake.Tensor([16, 8])]
    mgr.models[2] = lambda ins: [fake.Tensor([16, 8]), fake.Tensor([2])]
    mgr.models[3] = lambda ins: [fake.Tensor([16, 8])]
    w = fake.Tensor([8, 8])
    with cgtrace.record(path, follow=follow) as rec:
        kept, keep, y = [], None, None
        for i in range(150):
            for _ in range({7: 0, 9: 3, 70: 64}.get(i, 1)):
                cgt.mark_step_begin()
            fake._invocation()
            x = fake.Tensor([16, 8])
            if i in (12, 13):
                kept.append(x)  # kept past its call, let go at 20
            if i == 20:
                kept = []  # between two steps
                cgt.mark_step_begin()
            if i == 25:
                keep = fake.Tensor([128], storage=x._storage)  # its storage kept by a view
            if i == 31:
                keep = None
            if i == 40 and y is not None:
                x = fake.Tensor([16, 8], storage=y._storage)  # over a named output's storage
            if i == 45:
                ind.triton.skip_cudagraph_warmup = True
            if i == 50:
                mgr.fail.add(0)
            if i == 51:
                mgr.fail.discard(0)
            if i == 55:
                x = fake.Tensor([32, 8])  # another shape: a template of its own
            if i == 60:
                w = fake.Tensor([8, 8])  # the parameter swapped for another
            if i == 65:
                st = fake.Storage(256)
                st._users.add(w)
                w._storage = st  # `w.data = new`: the object keeps, its data moves
            if i == 80:
                y = None  # the program drops the output before the call
            ins = [w, x]
            if 90 <= i < 95:
                x = None  # the new input dies inside the call (the tree clears its list)
            try:
                y, = mgr._run(ins, f)
            except RuntimeError:
                pass
            ins = None
            if i == 33:
                y.item()
            if 100 <= i < 110:
                pair = mgr._run([w, fake.Tensor([16, 8]), fake.Tensor([16, 8])], two)
                pair = None
            if 120 <= i < 130:
                z, = mgr._run([fake.Tensor([16, 8])], g)  # g between f's calls
                z = None
            if i >= 130:
                # a new input and the function's own last output (a
                # recurrent state, renamed at every call)
                xr = fake.Tensor([16, 8])
                state, = mgr._run([w, xr, state if i > 130 else fake.Tensor([16, 8])], rnn)
                xr = None
            x = None
        for _ in range(10):  # the recurrent function alone: its state renamed between its calls only
            cgt.mark_step_begin()
            fake._invocation()
            xr = fake.Tensor([16, 8])
            state, = mgr._run([w, xr, state], rnn)
            xr = None
        del y, kept, state
        state = settled_state(rec)
    return written(rec, path, state)


def _tree(mgr, ins, fid):
    """The tree's _run called one frame down (a compiled function's
    wrapper): the src is then its caller's caller."""
    return mgr._run(ins, fid)


# _own: the tree's _run called from a frame the test makes the recorder
# take for its own (Recorder._own_file, which judges frames by their
# file: so _own is made from a file of its own name): the src is looked
# for past it, as if the tree were called directly.
_OWN_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "<own frames>.py")
_own_ns = {}
exec(compile("def _own(mgr, ins, fid):\n    return mgr._run(ins, fid)\n", _OWN_FILE, "exec"), _own_ns)
_own = _own_ns["_own"]


def src_scenario(path, follow=False):
    """A loop over new inputs whose calls reach the tree's _run from
    frames at several depths below the loop's line: directly, through one
    frame (_tree), through one the recorder takes for its own (_own), in
    runs and alternating, so that the src frame the fresh path finds by
    its depth (Recorder._check_fresh) is sometimes at another depth than
    the plan's, or past a frame of this package; then 40 calls whose new
    input dies inside the call. Returns what fresh_scenario returns."""
    cgt, mgr, f, w = one_function()
    ways = [lambda ins: mgr._run(ins, f), lambda ins: _tree(mgr, ins, f), lambda ins: _own(mgr, ins, f)]
    with cgtrace.record(path, follow=follow) as rec:
        rec._own_file[_OWN_FILE] = True
        for i in range(120):
            cgt.mark_step_begin()
            fake._invocation()
            way = ways[(i // 20) % 3] if i < 60 else ways[i % 3] if i < 90 else ways[(i // 10) % 3]
            x = fake.Tensor([16, 8])  # (held past the call, as a caller holds its batch)
            y, = way([w, x])
            x = None
        for i in range(40):  # then a new input only the tree's list holds: it dies inside its call
            cgt.mark_step_begin()
            fake._invocation()
            y, = ways[(i // 10) % 3]([w, fake.Tensor([16, 8])])
        del y
        state = settled_state(rec)
    return written(rec, path, state)


def mixed_scenario(path, follow=False):
    """A loop over new inputs (f's, through the _run wrapper's whole call,
    Recorder._fresh_call) interleaved with everything else the recorder
    sees: runs of steady replays of f on one input (deferred) between
    runs of new ones, g's steady replays (deferred) between f's calls, h
    called on f's output (its memo holds f's output entry), a
    host read of f's output, an input kept over calls and let go, one
    kept by a view of its storage, an input passed again, a knob set
    and set back, a call that raises, a reset of the trees, no step and
    several steps before a call (a 64th among them), a swapped
    parameter, calls from another thread (one at a time), and the
    journal's bound of calls held unwritten crossed many times, a new
    input over the storage of the last one (kept alive), one over a new
    storage at the address of an earlier one's (dead), and the parameter's
    data swapped and back around another function's call. Returns
    (the trace's text, the session's state at the end, the calls the
    fresh path took)."""
    import threading
    cgt = sys.modules["torch._inductor.cudagraph_trees"]
    ind = sys.modules["torch._inductor.config"]
    mgr = fake.CUDAGraphTreeManager()
    mgr.cache_replays = True
    f = mgr.add(0, static=[0])
    g = mgr.add(1)
    h = mgr.add(2)
    k = mgr.add(3, static=[0])
    mgr.models[3] = lambda ins: [fake.Tensor([2])]
    mgr.models[0] = lambda ins: [fake.Tensor([16, 8])]
    mgr.models[1] = lambda ins: [fake.Tensor([4])]
    mgr.models[2] = lambda ins: [fake.Tensor([2])]
    w = fake.Tensor([8, 8])
    u = fake.Tensor([4])
    box = {}

    def call(i, x):
        for _ in range({30: 0, 31: 0, 44: 2, 70: 65}.get(i, 1)):
            cgt.mark_step_begin()
        fake._invocation()
        try:
            box["y"], = mgr._run([w, x], f)
        except RuntimeError:
            pass

    with cgtrace.record(path, follow=follow) as rec:
        kept, view, same, cdatas = [], None, None, {}
        for i in range(220):
            x = fake.Tensor([16, 8])
            if 50 <= i < 60 or 150 <= i < 158:
                if same is None:
                    same = x
                x = same  # the same input again: steady replays, deferred
            elif same is not None:
                same = None
            if i == 20:
                kept.append(x)  # kept past its call, let go at 40
            if i == 40:
                kept = []
            if i == 25:
                view = fake.Tensor([16], storage=x._storage)  # its storage kept, let go at 35
            if i == 35:
                view = None
            if i == 64:
                x = box_x  # noqa: F821 (the input of call 63 passed again)
            if i == 180:
                # A new storage where the last input's was (it dies on the
                # next line): the allocator giving its address again.
                gone = box_x._storage._cdata  # noqa: F821
                st = fake.Storage(16 * 8 * 4)
                fake.Storage._live[gone] = st
                st._cdata = gone
                x = fake.Tensor([16, 8], storage=st)
                st = None
            if i == 185:
                kept = [box_x]  # noqa: F821 (the last input kept, till 190)
                x = fake.Tensor([16, 8], storage=box_x._storage)  # (over the last input's storage)
            if i == 190:
                kept = []
            if i == 196:
                # A new storage where call 194's input's was, dead before
                # call 195 (its del written there).
                st = fake.Storage(16 * 8 * 4)
                fake.Storage._live[cdatas[194]] = st
                st._cdata = cdatas[194]
                x = fake.Tensor([16, 8], storage=st)
                st = None
            cdatas[i] = x._storage._cdata
            box_x = x
            if i == 80:
                ind.triton.skip_cudagraph_warmup = True
            if i == 84:
                ind.triton.skip_cudagraph_warmup = False
            if i == 90:
                mgr.fail.add(0)
            if i == 91:
                mgr.fail.discard(0)
            if i == 100:
                cgt.reset_cudagraph_trees()
            if i == 120:
                w = fake.Tensor([8, 8])  # the parameter swapped for another
            if i == 200:
                # The parameter's data swapped, named so by another
                # function's call (a new entry for it), and swapped back:
                # its old data pointer under the new entry.
                old = w._storage
                st = fake.Storage(8 * 8 * 4)
                st._users.add(w)
                w._storage = st
                box["k"], = mgr._run([w], k)  # (its output kept: a polled death would decline the next call)
                w._storage = old
                st = old = None
            if 160 <= i < 170:
                t = threading.Thread(target=call, args=(i, x))
                t.start()
                t.join()
            else:
                call(i, x)
            if i == 33:
                box["y"].item()
            if 130 <= i < 140:
                cgt.mark_step_begin()
                z, = mgr._run([u], g)  # g's steady replays between f's calls
                box["g"] = z  # (the last one kept till 147: a polled name dying while f's calls are queued)
                z = None
            if i == 147:
                del box["g"]
            if i in (141, 142):
                # h on f's output: its memo holds f's output entry, whose
                # every rename from here on moves the epoch.
                z, = mgr._run([box["y"]], h)
                z = None
            x = None
        box.clear()
        del kept, view, same, box_x
        state = settled_state(rec)
    return written(rec, path, state)


def lean_scenario(path, follow=False):
    """A loop over new inputs (the lean fresh path's: the queue armed)
    meeting, inside its queue, what only a call can show: the tree
    recording anew (no replay of the plan's node), the tree raising, the
    program dropping the output before the call, two inputs dying before
    one step (one kept a call longer), a new input kept past the next
    call, another shape, a second step, a new input passed again, and an
    input the tree's list alone holds. Returns what fresh_scenario
    returns."""
    cgt, mgr, f, w = one_function()
    with cgtrace.record(path, follow=follow) as rec:
        y, kept = None, []
        for i in range(160):
            for _ in range({60: 2, 90: 0}.get(i, 1)):
                cgt.mark_step_begin()
            fake._invocation()
            x = fake.Tensor([16, 8] if i != 120 else [32, 8])
            if i == 40:
                mgr.calls[f] = 1  # the tree records f again at this call
            if i == 70:
                mgr.fail.add(f.id)
            if i == 71:
                mgr.fail.discard(f.id)
            if i == 100:
                y = None  # dropped before the call
            if i in (110, 130):
                kept.append(x)  # kept a call longer: two deaths before the next step
            if i == 140:
                kept = [x]  # kept past several calls
            if i == 146:
                kept = []
            if i == 150:
                x = box_x  # noqa: F821 (the last call's input passed again)
            box_x = x
            ins = [w, x]
            if i == 155:
                x = box_x = None  # only the tree's list holds it: it dies inside the call
            try:
                y, = mgr._run(ins, f)
            except RuntimeError:
                pass
            ins = x = None
            if i in (111, 131):
                kept = []  # (with this call's input: two deaths before the next step)
        del y, kept, box_x
        state = settled_state(rec)
    return written(rec, path, state)


# bound_scenario's calls after which the queue's bound write left a call
# queued, as it saw them; and, once a first recording found them
# (schedule None), the events it fires after them in every recording,
# by call: {call: event}, so each way of recording runs one program.
BOUND_WRITES = []
BOUND_SCHEDULE = {"at": None}


def bound_scenario(path, follow=False):
    """A long loop over new inputs (the lean fresh path's queue, written at
    its bound with its last call left queued), meeting right after each
    bound write, in turn: nothing, a host read of the output, the kept
    call's input passed again, that input kept past the next call, the
    tree recording anew, the tree raising, the output dropped, another
    shape, two steps, another function's call, and the recording's end.
    Returns what fresh_scenario returns."""
    cgt, mgr, f, w = one_function()
    g = mgr.add(1)
    mgr.models[1] = lambda ins: [fake.Tensor([4])]
    del BOUND_WRITES[:]
    at = BOUND_SCHEDULE["at"]
    with cgtrace.record(path, follow=follow) as rec:
        y, kept, x_last, event, before = None, [], None, None, 0
        for i in range(13 * (_FQ_BOUND + 2)):  # (room for eleven bound writes, whatever the bound)
            if at is not None:
                event = at.get(i - 1)
                if event == "end":
                    break  # the recording's end right after a bound write
            for _ in range(2 if event == 8 else 1):
                cgt.mark_step_begin()
            fake._invocation()
            x = fake.Tensor([16, 8] if event != 7 else [32, 8])
            if event == 1:
                y.item()
            if event == 2:
                x = x_last  # the queued call's input passed again
            if event == 3:
                kept = [x_last]
            if event == 4:
                mgr.calls[f] = 1  # the tree records f again at this call
            if event == 5:
                mgr.fail.add(f.id)
            if event == 6:
                y = None
            if event == 9:
                mgr._run([fake.Tensor([4])], g)
            ins = [w, x]
            try:
                y, = mgr._run(ins, f)
            except RuntimeError:
                pass
            mgr.fail.discard(f.id)
            if event == 3:
                kept = []
            x_last = x
            ins = x = None
            n = rec._fq_calls()
            if before > 1 and n == 1:
                BOUND_WRITES.append(i)
            before = n
            if at is None:
                event = None
                if BOUND_WRITES and BOUND_WRITES[-1] == i:
                    if len(BOUND_WRITES) == 11:
                        break
                    event = len(BOUND_WRITES) % 10
        del y, kept, x_last
        state = settled_state(rec)
    return written(rec, path, state)


def forward_backward(static, fwd_shapes, bwd_shapes):
    """A tree whose replays hand out their cached outputs, as PyTorch's
    do: a forward (function 0, static at those positions, outputs of
    fwd_shapes) and its backward (function 1, on a saved tensor and a
    gradient; outputs of bwd_shapes). Returns (mgr, fwd, bwd)."""
    mgr = fake.CUDAGraphTreeManager()
    mgr.cache_replays = True
    fwd = mgr.add(0, static=static)
    bwd = mgr.add(1, mode="BACKWARD", placeholders=["saved_0", "tangents_1"])
    mgr.models[0] = lambda ins: [fake.Tensor(s) for s in fwd_shapes]
    mgr.models[1] = lambda ins: [fake.Tensor(s) for s in bwd_shapes]
    return mgr, fwd, bwd


def train_scenario(path, follow=False):
    """A training loop's shape: each step a forward on a new batch and the
    parameter, then its backward on the forward's output (saved) and a new
    gradient (tangents), a host read of the loss every 10th step: two
    functions alternating, each with a new input at every call, so that
    between two calls of one the other named and renamed tensors (the
    fresh path's other way, and _fresh_call's). Returns what
    fresh_scenario returns."""
    cgt = sys.modules["torch._inductor.cudagraph_trees"]
    mgr, fwd, bwd = forward_backward([0], [[16, 8]], [[8, 8]])
    w = fake.Tensor([8, 8])
    with cgtrace.record(path, follow=follow) as rec:
        for i in range(120):
            cgt.mark_step_begin()
            fake._invocation()
            y, = mgr._run([w, fake.Tensor([16, 8])], fwd)
            dw, = mgr._run([y, fake.Tensor([16, 8])], bwd)
            if i % 10 == 9:
                y.item()
            dw = None
        del y
        state = settled_state(rec)
    return written(rec, path, state)


def saved_activation_scenario(path, follow=False):
    """A training step of the CPU stand-in (recorder-overhead.py's --fake
    --train loop; torch's differs, docs/pytorch-bridge.md): the forward
    on the parameters and a new batch hands
    out the loss and an activation saved for the backward, the backward
    takes that activation and a new gradient and hands out gradients the
    program drops; the loss is held till the next step's, read on the
    host every 9th step. The activation is a new output of each forward
    call, so the backward's kept input is named anew at every step (an
    entry other than its last call's). Returns what fresh_scenario
    returns."""
    cgt = sys.modules["torch._inductor.cudagraph_trees"]
    mgr, fwd, bwd = forward_backward([0, 1], [[16, 8], [16, 8]], [[8, 8], [8]])
    w, b = fake.Tensor([8, 8]), fake.Tensor([8])
    with cgtrace.record(path, follow=follow) as rec:
        loss = None
        for i in range(120):
            cgt.mark_step_begin()
            fake._invocation()
            loss, saved = mgr._run([w, b, fake.Tensor([16, 8])], fwd)
            fake._invocation()
            mgr._run([saved, fake.Tensor([16, 8])], bwd)
            saved = None
            if i % 9 == 8:
                loss.item()
        del loss
        state = settled_state(rec)
    return written(rec, path, state)


def engine_train_scenario(path, follow=False, saves_weight=False):
    """A training step as torch runs one on a GPU: the gradients let go
    (zero_grad's set_to_none), a forward on two parameters and a new
    batch handing out the logits (held till the next step's) and two
    activations saved for the backward; the backward run by autograd's
    engine in its device thread (fake.AutogradEngine: no frame of the
    program's above it, so its calls have no src) on the activations and
    the logits' gradient (new at every step), handing out the
    parameters' gradients, held till the next step; the logits read on
    the host every 11th step. saves_weight: the forward also hands out
    its weight as is (a training forward's graph returns the inputs it
    saves for the backward), which the tree does not wrap. Returns what
    fresh_scenario returns."""
    cgt = sys.modules["torch._inductor.cudagraph_trees"]
    mgr = fake.CUDAGraphTreeManager()
    mgr.cache_replays = True
    fwd = mgr.add(0, static=[0, 1])
    bwd = mgr.add(1, mode="BACKWARD", placeholders=["saved_0", "saved_1", "tangents_1"])
    mgr.models[0] = lambda ins: [fake.Tensor([16, 8]) for _ in range(3)] + ([ins[0]] if saves_weight else [])
    mgr.models[1] = lambda ins: [fake.Tensor([8, 8]), fake.Tensor([8])]
    w, b = fake.Tensor([8, 8]), fake.Tensor([8])
    engine = fake.AutogradEngine()
    try:
        with cgtrace.record(path, follow=follow) as rec:
            logits = grads = None
            for i in range(120):
                cgt.mark_step_begin()
                fake._invocation()
                grads = None
                outs = mgr._run([w, b, fake.Tensor([16, 8])], fwd)
                logits, saved = outs[0], outs[1:3]
                outs = None
                fake._invocation()
                grads = engine.run(mgr._run, saved + [fake.Tensor([16, 8])], bwd)
                saved = None
                if i % 11 == 10:
                    logits.item()
            del logits, grads
            state = settled_state(rec)
    finally:
        engine.stop()
    return written(rec, path, state)


def dropped_grads_scenario(path, follow=False):
    """A training loop whose backward hands out gradients the program lets
    go at once (an optimizer's zero_grad at the next step; here three,
    dropped as they come): at every step the backward's replay hands out
    the same cached objects, whose names died since, to be named again
    (Recorder._fast_after's rebound outputs); the forward's output held
    till the next step, a host read of it every 7th, two backward outputs
    kept once past their step, a step with two backwards. Returns what
    fresh_scenario returns."""
    cgt = sys.modules["torch._inductor.cudagraph_trees"]
    mgr, fwd, bwd = fake.training_tree()
    w, b = fake.Tensor([8, 8]), fake.Tensor([8])
    with cgtrace.record(path, follow=follow) as rec:
        kept = None
        for i in range(120):
            cgt.mark_step_begin()
            fake._invocation()
            x = fake.Tensor([16, 8])
            y, = mgr._run([w, b, x], fwd)
            x = None
            grads = mgr._run([y, fake.Tensor([16, 8])], bwd)
            if i == 50:
                kept = grads[:2]  # two of them kept past the next step
            if i == 52:
                kept = None
            if i == 80:
                grads = mgr._run([y, fake.Tensor([16, 8])], bwd)  # a second backward in one step
            grads = None
            if i % 7 == 6:
                y.item()
        del y, kept
        state = settled_state(rec)
    return written(rec, path, state)


def knob_written_directly_scenario(path, follow=False):
    """A loop over new inputs (the lean fresh path's) during which a knob's
    entry is written directly, past its config module's __setattr__
    (nothing counts the write, nothing disarms). Returns what
    fresh_scenario returns."""
    ind = sys.modules["torch._inductor.config"]
    cgt, mgr, f, w = one_function()
    with cgtrace.record(path, follow=follow) as rec:
        for i in range(80):
            cgt.mark_step_begin()
            fake._invocation()
            if i == 40:
                ind._config["triton.cudagraph_unexpected_rerecord_limit"].user_override = 9
            x = fake.Tensor([16, 8])
            y, = mgr._run([w, x], f)
            x = None
        del y
        state = settled_state(rec)
    return written(rec, path, state)


def read_output(cgt, y, i, raising):
    """The host reads of the read scenarios' call i of its output y: ten
    after the 30th call, of a view of it after the 31st to 35th, after a
    step at the 50th, one whose method raises (the overwritten error) at
    call `raising`, else one."""
    if i == 30:
        for _ in range(10):
            y.item()
    elif 31 <= i < 36:
        y[:, 1].item()  # a view of the output
    elif i == 50:
        cgt.mark_step_begin()  # a step between the call and the read
        y.item()
    elif i == raising:
        y.overwritten = True  # (recorded as any read that raises)
        try:
            y.item()
        except RuntimeError:
            pass
        y.overwritten = False
    else:
        y.item()


def read_scenario(path, follow=False):
    """A loop over new inputs that reads its output on the host at every
    call (a training loop logging its loss, a decoder looking at its
    token): reads queued behind the lean fresh path's calls
    (Recorder._queue_read) among every read that is not: two and ten
    reads after one call, a read of a view of the output, the input
    kept past the read and let go after it, an older input let go
    before it, a step between the call and the read, a read of another
    function's output, a read whose method raises (the overwritten
    error), a steady call between, the queue's bound reached between
    reads, calls with no read. Returns what fresh_scenario returns."""
    cgt, mgr, f, w = one_function()
    g = mgr.add(1, static=[0])
    mgr.models[1] = lambda ins: [fake.Tensor([2])]
    with cgtrace.record(path, follow=follow) as rec:
        old = z = None
        for i in range(260):
            cgt.mark_step_begin()
            fake._invocation()
            x = fake.Tensor([16, 8])
            if i == 60:
                old = x  # let go at 63, after its call's read and the next call
            y, = mgr._run([w, x], f)
            if i == 90:
                z, = mgr._run([w, y], g)  # another function's output, read at 91
            if 40 <= i < 45:
                keep, x = x, None  # let go after the read below
            x = None
            if i == 63:
                old = None  # an older queued input's death, before this call's read
            if i == 20:
                y.item()
                y.tolist()
            elif i == 91:
                z.item()
                y.item()
            elif i == 110:
                mgr._run([w, fake.Tensor([16, 8])], f)  # a call whose output nobody reads
            elif i % 50 == 49 or 200 <= i < 215:
                pass  # calls with no read
            else:
                read_output(cgt, y, i, raising=100)
            if 40 <= i < 45:
                keep = None
        z = None
        del y
        state = settled_state(rec)
    return written(rec, path, state)


def steady_read_scenario(path, follow=False):
    """A loop of steady replays (the same inputs at every call: a decoder
    writing its token into a static buffer) that reads an output on the
    host at every call: reads queued behind the deferred replays
    (Recorder._queue_read) among every read that is not: a function of
    two outputs read twice, a view of an output, a step or another
    function's call between, a raising read, an input let go before
    the read, a polled name dead before it, ten reads after one call,
    calls with no read. Returns
    what fresh_scenario returns."""
    cgt, mgr, f, w = one_function()
    two = mgr.add(1, static=[0])
    mgr.models[1] = lambda ins: [fake.Tensor([16, 8]), fake.Tensor([2])]
    x = fake.Tensor([16, 8])
    with cgtrace.record(path, follow=follow) as rec:
        for i in range(200):
            cgt.mark_step_begin()
            fake._invocation()
            if i == 70:
                x = fake.Tensor([16, 8])  # a new input, then steady again
            if 100 <= i < 120:
                a, b = mgr._run([w, x], two)
                a.item()
                b.tolist()
                a = b = None
                continue
            y, = mgr._run([w, x], f)
            if i == 60:
                mgr._run([w, x], two)  # another function's call between
                y.item()
            elif i == 90:
                x = fake.Tensor([16, 8])  # the input let go before the read: a death
                y.item()
            elif i == 150:
                # a tensor named by another function's call, whose storage
                # another object keeps: once it goes, its name is polled by
                # that storage, which dies at 160 between f's call and its
                # read (a polled name dead: the read not queued)
                z = fake.Tensor([16, 8])
                keep = fake.Tensor([16, 8], storage=z._storage)
                mgr._run([w, z], two)
                z = None
                y.item()
            elif i % 40 != 39:
                if i == 160:
                    keep = None
                read_output(cgt, y, i, raising=80)
        del y
        state = settled_state(rec)
    return written(rec, path, state)


class FreshPathTest(fake.FakeTorchTest):
    """Recorder._fresh_before, and the _run wrapper's whole call on new
    inputs (Recorder._fresh_call), write what the general path writes
    for a call with new inputs, and leave the session as it does."""

    def recorded(self, scenario, name, follow, **off):
        """scenario's (text, state, fresh calls, calls _fresh_call took),
        with the Recorder's attributes in off set so."""
        self.tearDown()
        self.setUp()
        took = {}
        real = cgtrace.Recorder.stop

        def stop(rec):  # (the counts of the recording the scenario made)
            took["lean"] = rec.lean_fresh_calls
            took["armed"] = rec.lean_queued_calls
            took["rebound"] = rec.rebound_calls
            took["reads"] = rec.lean_reads
            return real(rec)

        # (The journal written by its bounds in calls only, where the test
        # sets no time: the ways the calls took, compared between
        # recordings, would otherwise hang on where a loaded machine's slow
        # calls reach Recorder.JOURNAL_MS, and a due journal's writing sends
        # the next call of an unarmed queue another way; the traces are the
        # same either way.)
        pin = {} if "CGTRACE_JOURNAL_MS" in os.environ else {"CGTRACE_JOURNAL_MS": "600000"}
        with mock.patch.multiple(cgtrace.Recorder, stop=stop, **off), mock.patch.dict(os.environ, pin):
            got = fake.at_one_line(scenario, os.path.join(self.dir.name, name), follow)
        self.took_armed, self.took_rebound, self.took_reads = took["armed"], took["rebound"], took["reads"]
        return got + (took["lean"],)

    def assert_same(self, lines, state, other, other_state, way=""):
        """Two recordings' lines (header dropped) and states the same."""
        self.assertEqual(len(lines), len(other), way)
        for i, (a, b) in enumerate(zip(lines, other)):
            self.assertEqual(a, b, "%s line %d" % (way, i + 2))
        self.assertEqual(state, other_state, way)

    def against_general(self, follow, scenario=fresh_scenario, least=100, lean=None, armed=None):
        """The trace and state with the fresh path, _fresh_call and the
        lean fresh path, with the first two alone, with the fresh path
        alone, and with none (the general path), line by line the same;
        the fresh path taken for more than least calls, _fresh_call for
        more than lean, the lean fresh path (queued calls a journaled
        trace does not hold: follow off) for more than armed."""
        on, on_state, took, whole = self.recorded(scenario, "on.cgt.jsonl", follow)
        self.assertGreater(took, least)  # most of the calls: the test compares something
        if lean is not None:
            self.assertGreater(whole, lean)
        if armed is not None:
            self.assertGreater(self.took_armed, armed)
        import test_recorded_examples
        self.assertEqual(test_recorded_examples.check_trace(os.path.join(self.dir.name, "on.cgt.jsonl")), [])
        unarmed, unarmed_state, _, whole_unarmed = self.recorded(scenario, "unarmed.cgt.jsonl", follow,
                                                                 _fresh_armed=False)
        self.assertEqual(self.took_armed, 0)
        # (The lean path takes every call _fresh_call would queue, and
        # more: one past a 64th step, which _fresh_call leaves to the
        # general path's look at the knobs.)
        self.assertGreaterEqual(whole, whole_unarmed)
        part, part_state, took_part, none = self.recorded(scenario, "part.cgt.jsonl", follow, _fresh_lean=False)
        self.assertEqual(none, 0)
        self.assertGreater(took_part, least)
        off, off_state, none, _ = self.recorded(scenario, "off.cgt.jsonl", follow, _fresh_path=False)
        self.assertEqual(none, 0)
        on, part, off = on.split("\n")[1:], part.split("\n")[1:], off.split("\n")[1:]  # (the header names the file)
        unarmed = unarmed.split("\n")[1:]
        for other, other_state in ((unarmed, unarmed_state), (part, part_state), (off, off_state)):
            self.assert_same(on, on_state, other, other_state)

    def test_recorder_failure_keeps_the_deferred_calls(self):
        # The recorder's own failure (here at a host read) while calls on
        # new inputs are deferred: they are written before its note, the
        # trace the general path's, and the calls after it unrecorded.
        def failing(scenario):
            def run(path, follow):
                def read(session, *a, **k):
                    raise RuntimeError("injected")
                with mock.patch.object(cgtrace.Session, "read", read), \
                        mock.patch.object(sys.modules["cgtrace.events"], "_warn", lambda text: None):
                    cgt, mgr, f, w = one_function()
                    with cgtrace.record(path, follow=follow) as rec:
                        for i in range(60):
                            cgt.mark_step_begin()
                            fake._invocation()
                            y, = mgr._run([w, fake.Tensor([16, 8])], f)
                            if i == 40:
                                y.item()
                    assert rec.error is not None and "injected" in rec.error, rec.error
                    with open(path) as fh:
                        return fh.read(), rec.session.counts["calls"], rec.fresh_calls
            return run

        on, off = [], []
        for got, patch in ((on, {}), (off, {"_fresh_path": False})):
            text, calls, took = self.recorded(failing(None), "t.cgt.jsonl", False, **patch)[:3]
            got.extend([text.split("\n")[1:], calls, took])
        self.assertEqual(on[1], 41)  # (the calls up to the failing read)
        self.assertGreater(on[2], 30)
        self.assertEqual(on[0], off[0])
        self.assertIn("cgtrace stopped recording here: recording a read: RuntimeError: injected", "\n".join(on[0]))

    def test_failure_queuing_a_call_never_reaches_the_program(self):
        # The recorder failing as it queues a call (here its weak reference
        # to the new input): the call runs, its output is the program's,
        # the calls queued before are written, and recording stops.
        cgt, mgr, f, w = one_function()
        path = os.path.join(self.dir.name, "fail.cgt.jsonl")
        outs = []

        class Refs:
            ref = None

        def loop(rec):
            for i in range(30):
                cgt.mark_step_begin()
                fake._invocation()
                if i == 20:
                    Refs.ref = lambda *a: (_ for _ in ()).throw(TypeError("no weak reference"))
                y, = mgr._run([w, fake.Tensor([16, 8])], f)
                outs.append(y)

        real = sys.modules["cgtrace.freshq"].weakref
        Refs.ref = real.ref
        with mock.patch.object(sys.modules["cgtrace.freshq"], "weakref", Refs), \
                mock.patch.object(sys.modules["cgtrace.events"], "_warn", lambda text: None):
            with cgtrace.record(path) as rec:
                fake.at_one_line(loop, rec)
        self.assertEqual(len(outs), 30)
        self.assertIsInstance(outs[-1], fake.Tensor)
        self.assertIn("before a call: TypeError: no weak reference", rec.error)
        with open(path) as fh:
            recs = [json.loads(x) for x in fh.read().splitlines()[1:]]
        calls = [r for r in recs if r["op"] == "call"]
        self.assertEqual(len(calls), 20)  # (the queued ones written, then nothing)
        self.assertEqual(recs[-1]["op"], "note")
        self.assertIn("cgtrace stopped recording here", recs[-1]["text"])

    def test_failure_in_the_lean_fresh_path_never_reaches_the_program(self):
        # The same in the lean fresh path (its storage weak reference, the
        # class it binds at start, failing at the 20th call it takes): the
        # program gets every output, the calls queued before are written,
        # and recording stops.
        cgt, mgr, f, w = one_function()
        path = os.path.join(self.dir.name, "lean.cgt.jsonl")
        outs = []
        made = []
        real = cgtrace.torch_api.storage_weak_ref_class()

        class Failing(real):
            def __init__(self, stor):
                made.append(1)
                if len(made) == 20:
                    raise TypeError("no storage weak reference")
                super().__init__(stor)

        def loop():
            for i in range(40):
                cgt.mark_step_begin()
                fake._invocation()
                x = fake.Tensor([16, 8])  # (held through the call, as a caller holds its batch)
                y, = mgr._run([w, x], f)
                outs.append(y)
                x = None

        with mock.patch.object(cgtrace.torch_api, "storage_ref_maker", lambda checks, torch, cpp=None: (Failing, False)), \
                mock.patch.object(sys.modules["cgtrace.events"], "_warn", lambda text: None):
            with cgtrace.record(path) as rec:
                fake.at_one_line(loop)
        self.assertEqual(len(outs), 40)
        self.assertIsInstance(outs[-1], fake.Tensor)
        self.assertIn("before a call: TypeError: no storage weak reference", rec.error or "")
        self.assertGreater(rec.lean_queued_calls, 15)
        with open(path) as fh:
            recs = [json.loads(x) for x in fh.read().splitlines()[1:]]
        # The first calls: warmup, record, and a replay through the
        # general path, _fresh_call's first queued, then 19 lean ones
        # written; the 20th lean call failed, it and the rest unrecorded.
        self.assertEqual(rec.lean_queued_calls, 19)
        (note,) = [i for i, r in enumerate(recs) if r["op"] == "note" and "stopped recording" in r["text"]]
        calls = [r for r in recs if r["op"] == "call"]
        self.assertEqual(len(calls), 24)
        self.assertEqual([r for r in recs[note:] if r["op"] in ("call", "tensor")], [])

    def test_recorder_failure_inside_a_lean_fresh_call(self):
        # The recorder failing inside the tree's call of a lean fresh call
        # (here as the tree records the function anew): the program gets
        # its output, the queue is written with that call, and recording
        # stops.
        cgt, mgr, f, w = one_function()
        path = os.path.join(self.dir.name, "inside.cgt.jsonl")
        outs = []
        box = {}

        def model(ins):
            if box.get("fail"):
                box["rec"]._fail("inside the tree's call", RuntimeError("injected"))
            return [fake.Tensor([16, 8])]

        mgr.models[0] = model

        def loop():
            for i in range(40):
                cgt.mark_step_begin()
                fake._invocation()
                if i == 30:
                    mgr.calls[f] = 1  # the tree records f again, calling its model
                    box["fail"] = True
                x = fake.Tensor([16, 8])
                y, = mgr._run([w, x], f)
                outs.append(y)
                box["fail"] = False
                x = None

        with mock.patch.object(sys.modules["cgtrace.events"], "_warn", lambda text: None):
            with cgtrace.record(path) as rec:
                box["rec"] = rec
                fake.at_one_line(loop)
        self.assertEqual(len(outs), 40)
        self.assertIn("inside the tree's call: RuntimeError: injected", rec.error)
        self.assertGreater(rec.lean_queued_calls, 20)
        with open(path) as fh:
            recs = [json.loads(x) for x in fh.read().splitlines()[1:]]
        (note,) = [i for i, r in enumerate(recs) if r["op"] == "note" and "stopped recording" in r["text"]]
        # The calls before the failing one, written from the queue before
        # the note; nothing of that call or the ones after it.
        self.assertEqual(len([r for r in recs[:note] if r["op"] == "call"]), 30)
        self.assertEqual([r for r in recs[note:] if r["op"] in ("call", "tensor")], [])

    def test_config_write_past_setattr_is_seen_within_64_calls_on_new_inputs(self):
        # A knob's entry written directly (no __setattr__ to count it, so
        # nothing disarms) inside a lean fresh queue, at call 41: the lean
        # path reads the probes every 64th call or step, as the steady
        # path does (test_recorder_deferred), and _fresh_call at every
        # call, so the knob's record comes late by fewer than 64 calls
        # (the general path's right before call 41), never lost. A torch
        # whose knobs' writes are not all counted (knobs.homes None: a
        # config of another shape) has the probes read at every call: the
        # general path's trace.
        import test_recorded_examples

        def config_at(text):
            calls = 0
            for line in text.split("\n")[1:]:
                if '"op": "call"' in line:
                    calls += 1
                elif line == '{"op": "config", "rerecord_limit": 9}':
                    return calls + 1
            return None

        runs = []
        for patch in ({}, {"_defer": False, "_fresh_path": False, "_fast": False}):
            text, state, _, _ = self.recorded(knob_written_directly_scenario, "k.cgt.jsonl", False, **patch)
            self.assertEqual(test_recorded_examples.check_trace(os.path.join(self.dir.name, "k.cgt.jsonl")), [])
            runs.append((text, state, self.took_armed))
        (on, _, lean), (general, general_state, _) = runs
        self.assertGreater(lean, 50)
        self.assertEqual(config_at(general), 41)
        self.assertGreater(config_at(on), 41)  # (late: the count saw no write)
        self.assertLessEqual(config_at(on), 41 + 64)

        real = cgtrace.knobs._Knobs.__init__

        def unversioned(knobs, *a):
            real(knobs, *a)
            knobs.homes = None
        with mock.patch.object(cgtrace.knobs._Knobs, "__init__", unversioned):
            text, state, _, _ = self.recorded(knob_written_directly_scenario, "u.cgt.jsonl", False)
        self.assertGreater(self.took_armed, 50)
        self.assert_same(text.split("\n")[1:], state, general.split("\n")[1:], general_state)

    def test_journal_holds_a_training_loops_reads_within_the_bound(self):
        # A training loop reading its loss at every step, its calls on the
        # general and fresh paths (nothing deferred at the read): the
        # journal holds the reads as _fresh_call holds calls, written at
        # its bound of events (fresh._WRITE_BOUND) or when
        # Recorder.JOURNAL_MS has passed, not one write a read; with the
        # time at 0, each read is written as it is made.
        from cgtrace.fresh import _WRITE_BOUND

        def written():
            with open(path) as fh:
                return fh.read().count('"op": "read"')

        for ms, least in (("600000", 1), ("0", 0)):
            path = os.path.join(self.dir.name, "reads.cgt.jsonl")
            held = []
            cgt = sys.modules["torch._inductor.cudagraph_trees"]
            mgr, fwd, bwd = fake.training_tree()
            w, b = fake.Tensor([8, 8]), fake.Tensor([8])

            def loop(rec):
                for i in range(120):
                    cgt.mark_step_begin()
                    fake._invocation()
                    y, = mgr._run([w, b, fake.Tensor([16, 8])], fwd)
                    grads = mgr._run([y, fake.Tensor([16, 8])], bwd)
                    grads = None
                    y.item()
                    held.append(i + 1 - written())

            with mock.patch.dict(os.environ, {"CGTRACE_JOURNAL": "1", "CGTRACE_JOURNAL_MS": ms}):
                with cgtrace.record(path) as rec:
                    fake.at_one_line(loop, rec)
            self.assertIsNone(rec.error)
            self.assertEqual(rec.lean_reads, 0)  # (none queued: the reads' own way)
            self.assertEqual(written(), 120)
            self.assertLessEqual(max(held), _WRITE_BOUND, ms)
            self.assertGreaterEqual(min(held[10:]), 0, ms)
            self.assertGreaterEqual(max(held[10:]), least, (ms, held))
            if not least:
                self.assertEqual(max(held[10:]), 0)
            self.tearDown()
            self.setUp()

    def test_journal_holds_at_most_the_bound_of_calls_unwritten(self):
        # A journaled trace of a loop over new inputs: after every call the
        # file holds every call but the last few held (at most the lean
        # queue's bound, freshq._FQ_BOUND, not all of them: the bound is
        # reached), and after a steady replay all of them; a host read of
        # the last output is queued behind them (Recorder._queue_read), and
        # written with them. With the journal's writer thread (a bound's
        # batch handed to it) the same once it wrote what it was handed;
        # without it (CGTRACE_JOURNAL_THREAD=0) at once.
        for thread in ("1", "0"):
            with self.subTest(thread=thread):
                self.journal_bound(thread)

    def journal_bound(self, thread):
        cgt, mgr, f, w = one_function()
        path = os.path.join(self.dir.name, "journal%s.cgt.jsonl" % thread)

        def written(rec):
            if thread == "1":
                rec.trace.drain()
            with open(path) as fh:
                return fh.read().count('"op": "call"')

        held = []

        # (the read past the first bound, the input passed again past the
        # read, the bound reached again after it: whatever the bound)
        read_at, again_at = _FQ_BOUND * 3 // 2, _FQ_BOUND * 3 // 2 + 51
        calls = again_at + _FQ_BOUND + 20

        def loop(rec):
            y = x = None
            for i in range(calls):
                cgt.mark_step_begin()
                fake._invocation()
                if i != again_at:
                    x = fake.Tensor([16, 8])
                y, = mgr._run([w, x], f)
                held.append(i + 1 - written(rec))
                if i == read_at:
                    before = written(rec)
                    y.item()
                    self.assertEqual(written(rec), before)
                    self.assertLess(before, i + 1)

        # (The bound in calls only: a loaded machine's slow calls would
        # reach Recorder.JOURNAL_MS's.)
        env = {"CGTRACE_JOURNAL": "1", "CGTRACE_JOURNAL_MS": "600000", "CGTRACE_JOURNAL_THREAD": thread}
        with mock.patch.dict(os.environ, env):
            with cgtrace.record(path) as rec:
                out = rec.trace.out
                threaded = out.writer is not None
                fake.at_one_line(loop, rec)
        self.assertEqual(threaded, thread == "1" and os.environ.get("CGTRACE_FAST") != "0")
        # (each bound's batch handed over: two bounds at least)
        self.assertEqual(out.handed >= 2, threaded, out.handed)
        self.assertIsNone(rec.error)
        self.assertGreater(rec.lean_fresh_calls, calls - 50)
        self.assertEqual(max(held), _FQ_BOUND)
        self.assertEqual(rec.lean_reads, 1)
        with open(path) as fh:
            recs = [json.loads(x) for x in fh.read().split("\n")[1:] if x]
        k = [j for j, r in enumerate(recs) if r.get("op") == "read"]
        self.assertEqual(len(k), 1)
        self.assertEqual(recs[k[0]]["name"], [r for r in recs[:k[0]] if r.get("op") == "call"][-1]["out"][0])
        self.assertEqual(sum(1 for r in recs[:k[0]] if r.get("op") == "call"), read_at + 1)
        self.assertEqual(held[again_at], 0)  # (the same input again: the general path writes all)
        self.assertEqual(min(held[read_at + 10:]), 0)

    def due_loop(self, name, due_every, pending=False):
        """A journaled loop of 200 new-input calls of one function whose
        JOURNAL_MS passes (hot.due set to now) before every due_every-th
        call's end (0: never); pending: another function's steady replay
        (a deferred replay held) at every 10th call. Returns the
        recorder, the trace's text and how many calls each _fq_due took
        (the stand-in afresh for each: recorded's)."""
        self.tearDown()
        self.setUp()
        path = os.path.join(self.dir.name, name)
        cgt, mgr, f, w = one_function()
        g = mgr.add(1, static=[0])
        mgr.models[1] = lambda ins: [fake.Tensor([4])]
        real_due, dues = cgtrace.Recorder._fq_due, []

        def counted(rec, a):
            dues.append(rec._fq_calls())
            return real_due(rec, a)

        def loop(rec):
            v = fake.Tensor([4])
            for i in range(200):
                cgt.mark_step_begin()
                fake._invocation()
                if pending and i % 10 == 5:
                    mgr._run([v], g)
                    fake._invocation()
                x = fake.Tensor([16, 8])  # (alive until the next: a loop's batch)
                if due_every and i % due_every == due_every - 1:
                    rec._hot.due = 0  # (JOURNAL_MS since the last writing: due at this call's end)
                y, = mgr._run([w, x], f)
                if (rec.tls.depth, rec.tls.node) != (0, None):  # (the Runner leaves them as it found them)
                    stray.append((i, rec.tls.depth, rec.tls.node))

        stray = []
        with mock.patch.dict(os.environ, {"CGTRACE_JOURNAL": "1", "CGTRACE_JOURNAL_MS": "600000"}), \
                mock.patch.object(cgtrace.Recorder, "_fq_due", counted):
            with cgtrace.record(path) as rec:
                fake.at_one_line(loop, rec)
        self.assertIsNone(rec.error)
        self.assertEqual(stray, [])
        with open(path) as fh:
            return rec, fh.read(), dues

    def test_a_due_journal_keeps_the_lean_fresh_path_armed(self):
        # JOURNAL_MS passing while the lean fresh path queues (calls a
        # millisecond apart reach it before the queue's bound) writes the
        # queue as the bound does, its last call kept and the path armed
        # (_fq_due): every call the lean path's, as with no time bound.
        # Written whole and disarmed, each such writing sent the next call
        # through _fresh_call to arm the path again. The trace is the
        # general path's either way.
        none, _, no_dues = self.due_loop("none.cgt.jsonl", 0)
        rec, text, dues = self.due_loop("due.cgt.jsonl", 10)
        import test_recorded_examples
        self.assertEqual(test_recorded_examples.check_trace(os.path.join(self.dir.name, "due.cgt.jsonl")), [])
        self.assertEqual(no_dues, [])
        self.assertGreater(len(dues), 12)
        self.assertTrue(all(n >= 2 for n in dues), dues)  # (each written but its last call)
        self.assertEqual(rec.lean_fresh_calls, none.lean_fresh_calls)
        self.assertEqual(rec.lean_queued_calls, none.lean_queued_calls)
        self.assertGreater(rec.lean_queued_calls, 190)
        with mock.patch.multiple(cgtrace.Recorder, _defer=False, _fresh_path=False, _fast=False):
            _, general, _ = self.due_loop("general.cgt.jsonl", 10)
        self.assertEqual(text.split("\n")[1:], general.split("\n")[1:])

    def test_a_due_journal_with_replays_held_writes_all(self):
        # The same with another function's replays deferred meanwhile:
        # their writing may change what the queue's arming found, so a due
        # journal writes everything and disarms (_flush), and the trace is
        # the general path's.
        rec, text, dues = self.due_loop("due.cgt.jsonl", 10, pending=True)
        self.assertGreater(len(dues), 5)
        self.assertGreater(rec.lean_queued_calls, 100)
        with mock.patch.multiple(cgtrace.Recorder, _defer=False, _fresh_path=False, _fast=False):
            _, general, _ = self.due_loop("general.cgt.jsonl", 10, pending=True)
        self.assertEqual(text.split("\n")[1:], general.split("\n")[1:])

    def test_journal_ms_zero_writes_each_training_call_as_it_ends(self):
        # A training step (saved_activation_scenario's: the forward hands
        # out the loss and an activation its backward takes, each on a new
        # input, both taken by _fresh_call, which holds their records
        # unwritten up to fresh._WRITE_BOUND calls), journaled: with
        # CGTRACE_JOURNAL_MS=0 the file holds every call as it returns;
        # with the time bound far off, calls wait for the bound in calls
        # (which the first recording shows the second does not).
        cgt = sys.modules["torch._inductor.cudagraph_trees"]
        path = os.path.join(self.dir.name, "train.cgt.jsonl")

        def written():
            with open(path) as fh:
                return fh.read().count('"op": "call"')

        for ms in ("600000", "0"):
            held = []
            mgr, fwd, bwd = forward_backward([0, 1], [[16, 8], [16, 8]], [[8, 8], [8]])
            w, b = fake.Tensor([8, 8]), fake.Tensor([8])
            with mock.patch.dict(os.environ, {"CGTRACE_JOURNAL": "1", "CGTRACE_JOURNAL_MS": ms}):
                def loop():
                    for i in range(60):
                        cgt.mark_step_begin()
                        fake._invocation()
                        loss, saved = mgr._run([w, b, fake.Tensor([16, 8])], fwd)
                        held.append(2 * i + 1 - written())
                        fake._invocation()
                        mgr._run([saved, fake.Tensor([16, 8])], bwd)
                        held.append(2 * i + 2 - written())
                        saved = None

                with cgtrace.record(path) as rec:
                    fake.at_one_line(loop)  # (its calls' src: the line that called loop)
            self.assertIsNone(rec.error)
            self.assertGreater(rec.lean_fresh_calls, 100, ms)  # (_fresh_call's)
            if ms == "0":
                self.assertEqual(max(held), 0)
            else:
                self.assertGreater(max(held), 10)

    def test_steady_replays_after_new_inputs_are_deferred(self):
        # A loop over new inputs, then the same input again: the function
        # leaves the fresh path and its replays are deferred again.
        cgt, mgr, f, w = one_function()
        seen = {}

        def loop(rec):  # (called from one line: the calls' src, which the fresh path needs)
            for i in range(120):
                cgt.mark_step_begin()
                fake._invocation()
                if i < 40 or i == 41:
                    x = fake.Tensor([16, 8])
                y, = mgr._run([w, x], f)
                if i == 39:
                    with rec.lock:  # (deferred calls are counted when written)
                        rec._settle()
                    seen["fresh"], seen["short"] = rec.fresh_calls, rec.short_calls

        with cgtrace.record(os.path.join(self.dir.name, "t.cgt.jsonl")) as rec:
            fake.at_one_line(loop, rec)
        self.assertIsNone(rec.error)
        fresh = seen["fresh"]
        self.assertEqual(fresh, 37)  # (warmup, record, the first replay: the general path's)
        self.assertEqual(seen["short"], 37)
        self.assertEqual(rec.fresh_calls, fresh + 1)  # (call 41's new input)
        self.assertGreater(rec.armings, 0)
        self.assertGreater(rec.short_calls, 37 + 70)  # (the steady replays: deferred, each a short call)

    def test_fresh_path_writes_what_the_general_path_writes(self):
        # (68 of the 147 calls _fresh_call takes are the lean fresh
        # path's: the queue's first call and each after another event are
        # _fresh_call's.)
        self.against_general(follow=False, lean=120, armed=60)

    def test_lean_paths_ask_no_probe_of_an_output_the_tree_judges(self):
        # The recording's output, its object dropped, stays named while the
        # node's cached output holds its storage, judged by the same tree
        # wrapper: both lean paths read that output's count for it
        # (_fq_arm, _polled_by_outputs), asking no _Probe.alive (and so no
        # torch wrapper's expired()) at a call, the same input's or a new one's.
        from cgtrace.liveness import _Probe
        for fresh in (False, True):
            with self.subTest(fresh=fresh):
                cgt, mgr, f, w = one_function()
                asked = []
                real = _Probe.alive

                def alive(probe):
                    asked.append(i)
                    return real(probe)

                i = None

                def loop(rec):
                    nonlocal i
                    x = y = fake.Tensor([16, 8])
                    for i in range(200):
                        cgt.mark_step_begin()
                        fake._invocation()
                        if fresh:
                            x = fake.Tensor([16, 8])  # (the last one dies here)
                        y, = mgr._run([w, x], f)
                    with rec.lock:
                        rec._settle()  # (the calls counted)
                    i = None  # (the exit's asks)
                    return len(rec.session._watch), rec.lean_queued_calls if fresh else rec.short_calls

                with cgtrace.record(os.path.join(self.dir.name, "t%d.cgt.jsonl" % fresh)) as rec, \
                        mock.patch.object(_Probe, "alive", alive):
                    polled, lean = fake.at_one_line(loop, rec)
                self.assertIsNone(rec.error)
                self.assertGreater(polled, 1)  # (the recording's output and the replays')
                self.assertGreater(lean, 150)
                self.assertEqual([k for k in asked if k is not None and k >= 100], [])

    def test_host_reads_queued_behind_the_lean_fresh_path(self):
        # A host read of the queue's last output at every call is queued
        # with the calls (Recorder._queue_read), the lean path staying armed:
        # the same trace as the general path, which writes the queue at
        # every read, and the reads that cannot be queued (a step or
        # another's output before them, a raising method, ten after one
        # call) recorded as any read.
        on, _, _, _ = self.recorded(read_scenario, "on.cgt.jsonl", False)
        self.assertGreater(self.took_reads, 200)
        recs = [json.loads(x) for x in on.split("\n")[1:] if x]
        reads = [r for r in recs if r.get("op") == "read"]
        self.assertEqual(len(reads), 260 - 5 - 15 - 1 + 1 + 9 + 1)  # (none at 110; two at 20 and 91, ten at 30)
        self.assertEqual(sum(1 for r in reads if "src" in r), len(reads))
        errors = [r for r in recs if r.get("op") == "expect" and r.get("error")]
        self.assertEqual(len(errors), 1)
        # Without the lean reads, each read writes the queue: the calls
        # take _fresh_call's way.
        self.recorded(read_scenario, "unqueued.cgt.jsonl", False, _read_lean=lambda rec, target: False)
        self.assertEqual(self.took_reads, 0)
        self.assertLess(self.took_armed, 50)
        self.against_general(follow=False, scenario=read_scenario, least=240, armed=200)

    def test_host_reads_queued_behind_the_deferred_replays(self):
        # The same for the steady replays (the same inputs at every call):
        # a read of the last deferred replay's output queued behind it,
        # the steady path staying armed; the trace the general path's.
        on, on_state, _, _ = self.recorded(steady_read_scenario, "on.cgt.jsonl", False)
        self.assertGreater(self.took_reads, 150)
        off, off_state, _, _ = self.recorded(steady_read_scenario, "off.cgt.jsonl", False, _defer=False)
        self.assertEqual(self.took_reads, 0)
        unqueued, unqueued_state, _, _ = self.recorded(steady_read_scenario, "unqueued.cgt.jsonl", False,
                                                       _read_lean=lambda rec, target: False)
        self.assertEqual(self.took_reads, 0)
        on, off, unqueued = (t.split("\n")[1:] for t in (on, off, unqueued))
        self.assert_same(on, on_state, off, off_state)
        self.assert_same(on, on_state, unqueued, unqueued_state)
        recs = [json.loads(x) for x in on if x]
        self.assertEqual(sum(1 for r in recs if r.get("op") == "read"), 200 - 4 + 9 + 20)  # (none at 39, 79, 159, 199)

    def test_reads_in_c_write_what_the_wrappers_python_writes(self):
        # _fastpath.c's read_run (the read wrapper's body in C: the queued
        # read's name, tests, deaths and src without the recorder's Python)
        # against the wrapper's Python, in both read scenarios: the same
        # trace and state, line for line, the C taken for every read.
        from cgtrace import fastpath
        if getattr(fastpath.load()[0], "read_run", None) is None:
            self.skipTest("the C module is not built here")
        real = cgtrace.Recorder._read_c
        for scenario, least in ((read_scenario, 200), (steady_read_scenario, 150)):
            took = []

            def spy(rec, box):
                got = real(rec, box)
                took.append(got is not None)
                return got

            c, c_state, _, _ = self.recorded(scenario, "c.cgt.jsonl", False, _read_c=spy)
            self.assertEqual(took, [True])
            self.assertGreater(self.took_reads, least)
            py, py_state, _, _ = self.recorded(scenario, "py.cgt.jsonl", False, _read_c=lambda rec, box: None)
            self.assertGreater(self.took_reads, least)
            self.assert_same(c.split("\n")[1:], c_state, py.split("\n")[1:], py_state, scenario.__name__)

    def test_fresh_path_streamed_writes_what_the_general_path_writes(self):
        self.against_general(follow=True, lean=120)

    def test_fresh_call_among_other_events_writes_what_the_general_path_writes(self):
        # (Of 220 calls of f, 173 take the fresh path, 158 through _fresh_call: the others are the
        # first ones, those after another event changed what its checks
        # take for granted, the steady runs, each 64th step's.)
        # The lean fresh path takes 127 of them.
        self.against_general(follow=False, scenario=mixed_scenario, least=160, lean=145, armed=120)

    def test_training_loop_writes_what_the_general_path_writes(self):
        # Two functions alternating on new inputs, the backward's output
        # dying at every step (a polled name's death, its del before the
        # step). Of 240 calls the fresh path takes 234 (117 when it left
        # a polled death to the general path), _fresh_call 115 (the
        # forward's: the backward's replay hands out an output whose name
        # died, which _fast_after leaves to the general path). The same
        # trace all three ways.
        self.against_general(follow=False, scenario=train_scenario, least=230, lean=110)

    def test_training_step_backward_on_a_saved_activation(self):
        # The forward hands out the loss and the activation the backward
        # takes: a new entry at every step, which _fresh_call takes for
        # the backward's kept input (its object and pointer the last
        # call's), where it declined them before to _on_run's
        # _fresh_before (115 of 240 took _fresh_call then). The same trace all ways.
        self.against_general(follow=False, scenario=saved_activation_scenario, least=220, lean=220)

    def test_training_step_with_the_backward_in_autograds_thread(self):
        # The backward as torch's engine runs it, in its device thread:
        # no frame of the program's above it, so its calls have no src,
        # which the fresh path took to mean none of its calls could be
        # taken (only the forward's: 120 of 240 calls). _fresh_call takes
        # them where no frame past this package's is the program's, as
        # the general path finds no src. The same trace all ways.
        self.against_general(follow=False, scenario=engine_train_scenario, least=220, lean=220)

    def test_training_forward_that_hands_out_its_weight(self):
        # The forward also hands out its weight as is, which the tree does
        # not wrap (its output name dropped at once): _make_plan made no
        # plan of its replays, and without one the fresh path took none of
        # its calls (the backward's alone: 117 of 240). A mixed plan holds
        # the weight's entry at that position: _fast_after binds and drops
        # its output's name as _bind_outputs does, and _fresh_call takes
        # the forward's calls too. The same trace all ways.
        def scenario(path, follow=False):
            return engine_train_scenario(path, follow, saves_weight=True)
        self.against_general(follow=False, scenario=scenario, least=220, lean=220)

    def test_bound_writes_leave_the_last_call_queued(self):
        # The queue written at its bound but its last call, which the next
        # one finds queued (its input unbound): the trace and state the
        # general path's, whatever comes right after such a write (each of
        # ten events, and the recording's end). A first recording finds
        # the calls after which the writes come; every recording then
        # runs those events after those calls.
        BOUND_SCHEDULE["at"] = None
        try:
            self.recorded(bound_scenario, "probe.cgt.jsonl", False)
            found = list(BOUND_WRITES)
            self.assertEqual(len(found), 11, found)
            BOUND_SCHEDULE["at"] = dict(zip(found, [k % 10 for k in range(1, 11)] + ["end"]))
            self.recorded(bound_scenario, "again.cgt.jsonl", False)
            self.assertEqual(BOUND_WRITES, found)  # (the events where the writes are)
            self.against_general(follow=False, scenario=bound_scenario, least=300, lean=300, armed=250)
        finally:
            BOUND_SCHEDULE["at"] = None

    def test_training_loop_streamed(self):
        self.against_general(follow=True, scenario=train_scenario, least=230, lean=110)

    def test_fresh_call_among_other_events_streamed(self):
        self.against_general(follow=True, scenario=mixed_scenario, least=160, lean=145)

    def test_lean_fresh_path_meets_what_only_a_call_shows(self):
        # (Of the 160 calls the lean fresh path takes most; each of the
        # others declines to _fresh_call, or after the tree's call writes
        # the queue and the call as _fresh_deferred does.)
        self.against_general(follow=False, scenario=lean_scenario, least=140, lean=130, armed=100)

    def test_replays_whose_outputs_died_are_bound_again_as_the_general_path_binds_them(self):
        # The backward's replays, whose outputs all died since its last
        # call: _fast_after binds the plan's Facts again (rebound), where
        # the general path makes new ones. The same trace and state as
        # with _fast_after off (the general path after every call) and
        # with the fresh path off, and most of the backward's calls
        # rebound.
        import test_recorded_examples
        runs = []
        for name, patch in (("on", {}), ("general", {"_fast_after": lambda *a: False}),
                            ("nofresh", {"_fresh_path": False})):
            text, state, _, _ = self.recorded(dropped_grads_scenario, name + ".cgt.jsonl", False, **patch)
            self.assertEqual(test_recorded_examples.check_trace(os.path.join(self.dir.name, name + ".cgt.jsonl")), [])
            runs.append((text.split("\n")[1:], state, self.took_rebound))
        (on, on_state, rebound), (general, general_state, none), (nofresh, nofresh_state, _) = runs
        self.assertGreater(rebound, 100)  # (of 121 backward calls)
        self.assertEqual(none, 0)
        for other, other_state in ((general, general_state), (nofresh, nofresh_state)):
            self.assert_same(on, on_state, other, other_state)

    def test_fresh_path_src_at_other_depths(self):
        # The src frame found by its depth from the _run wrapper (or by
        # the walk past this package's frames) is the general path's; so
        # is a call after one whose new input died inside it. Of the 160
        # calls, 127 take the fresh path (the others: the first ones, and
        # each call from another depth than its function's last, which
        # the general path takes). With the frame past the wrapper taken
        # for the user's even when it is this package's, 108 (declined:
        # the frame's code is not the plan's); without a plan made after
        # an input died in its call (_fast_after), 110 (every other one
        # of those calls is the general path's).
        # The lean fresh path takes 47 of them: its src frame's depth is
        # the queue's first call's.
        self.against_general(follow=False, scenario=src_scenario, least=124, lean=70, armed=40)


if __name__ == "__main__":
    unittest.main()
