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
        with rec.lock:
            rec._settle()
        ss = rec.session
        state = (list(ss.entries), [list(v) for v in ss.by_storage.values()], list(ss._watch),
                 sorted(ss.by_view.values()), ss.order, ss.epoch, ss.seed, sorted(ss.names_used),
                 dict(ss.counts), [(e.name, e.order) for e in ss.entries.values()],
                 sorted(ss._held_wr.values()), rec._mark_counter)
    assert rec.error is None, rec.error
    with open(path) as fh:
        return fh.read(), state, rec.fresh_calls


def _tree(mgr, ins, fid):
    """The tree's _run called one frame down (a compiled function's
    wrapper): the src is then its caller's caller."""
    return mgr._run(ins, fid)


def _own(mgr, ins, fid):
    """The tree's _run called from a frame the test makes the recorder
    take for its own (Recorder._own_code): the src is looked for past it,
    as if the tree were called directly."""
    return mgr._run(ins, fid)


def src_scenario(path, follow=False):
    """A loop over new inputs whose calls reach the tree's _run from
    frames at several depths below the loop's line: directly, through one
    frame (_tree), through one the recorder takes for its own (_own), in
    runs and alternating, so that the src frame the fresh path finds by
    its depth (Recorder._check_fresh) is sometimes at another depth than
    the plan's, or past a frame of this package; then 40 calls whose new
    input dies inside the call. Returns what fresh_scenario returns."""
    cgt = sys.modules["torch._inductor.cudagraph_trees"]
    mgr = fake.CUDAGraphTreeManager()
    mgr.cache_replays = True
    f = mgr.add(0, static=[0])
    mgr.models[0] = lambda ins: [fake.Tensor([16, 8])]
    w = fake.Tensor([8, 8])
    ways = [lambda ins: mgr._run(ins, f), lambda ins: _tree(mgr, ins, f), lambda ins: _own(mgr, ins, f)]
    with cgtrace.record(path, follow=follow) as rec:
        rec._own_code[_own.__code__] = True
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
        with rec.lock:
            rec._settle()
        ss = rec.session
        state = (list(ss.entries), list(ss._watch), ss.order, ss.epoch, ss.seed, sorted(ss.names_used),
                 dict(ss.counts), sorted(ss._held_wr.values()))
    assert rec.error is None, rec.error
    with open(path) as fh:
        return fh.read(), state, rec.fresh_calls


class FreshPathTest(fake.FakeTorchTest):
    """Recorder._fresh_before writes what the general path writes before a
    call with new inputs, and leaves the session as it does."""

    def against_general(self, follow, scenario=fresh_scenario, least=100):
        on, on_state, took = fake.at_one_line(scenario, os.path.join(self.dir.name, "on.cgt.jsonl"), follow)
        self.assertGreater(took, least)  # most of the calls: the test compares something
        import test_recorded_examples
        self.assertEqual(test_recorded_examples.check_trace(os.path.join(self.dir.name, "on.cgt.jsonl")), [])
        self.tearDown()
        self.setUp()
        with mock.patch.object(cgtrace.Recorder, "_fresh_path", False):
            off, off_state, none = fake.at_one_line(scenario, os.path.join(self.dir.name, "off.cgt.jsonl"),
                                                    follow)
        self.assertEqual(none, 0)
        on, off = on.split("\n")[1:], off.split("\n")[1:]  # (the header names the file)
        self.assertEqual(len(on), len(off))
        for i, (a, b) in enumerate(zip(on, off)):
            self.assertEqual(a, b, "line %d" % (i + 2))
        self.assertEqual(on_state, off_state)

    def test_steady_replays_after_new_inputs_are_deferred(self):
        # A loop over new inputs, then the same input again: the function
        # leaves the fresh path and its replays are deferred again.
        cgt = sys.modules["torch._inductor.cudagraph_trees"]
        mgr = fake.CUDAGraphTreeManager()
        mgr.cache_replays = True
        f = mgr.add(0, static=[0])
        mgr.models[0] = lambda ins: [fake.Tensor([16, 8])]
        w = fake.Tensor([8, 8])
        seen = {}

        def loop(rec):  # (called from one line: the calls' src, which the fresh path needs)
            for i in range(120):
                cgt.mark_step_begin()
                fake._invocation()
                if i < 40 or i == 41:
                    x = fake.Tensor([16, 8])
                y, = mgr._run([w, x], f)
                if i == 39:
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
        self.against_general(follow=False)

    def test_fresh_path_streamed_writes_what_the_general_path_writes(self):
        self.against_general(follow=True)

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
        self.against_general(follow=False, scenario=src_scenario, least=124)


if __name__ == "__main__":
    unittest.main()
