"""The steady replay: what a steady loop costs (no question to torch, no
knob read), the short path after a call (calls.py's _fast_after) and the
deferred replay (deferred.py, hooks.py's _run wrapper), each held against
the general path's trace, byte for byte."""

import contextlib
import functools
import json
import os
import sys
import unittest
import weakref
from unittest import mock

# (fake_torch first: it puts the recorder on sys.path)
from fake_torch import (at_one_line, CUDAGraphTreeManager, ConfigModule, each_way, FakeTorchTest, FunctionID,
                        MarkStepBox, NoStorage, Node, Storage, StorageWeakRef, StorageWeakRefWrapper, Tensor,
                        TraceFileTest, Wrapped, _invocation, install_fake_torch, remove_fake_torch, two_functions)

import cgtrace  # noqa: E402  (after fake_torch)


class SteadyLoopTest(TraceFileTest):
    """What a steady replay loop costs the recorder: no question to torch
    about a tensor it already holds, no read of a config knob."""

    def setUp(self):
        super().setUp()
        self.mgr = CUDAGraphTreeManager()
        self.mgr.cache_replays = True
        self.fid = self.mgr.add(0, static=[0, 1])
        self.mgr.models[0] = lambda ins: [Tensor([2, 4])]

    def test_steady_replays_ask_torch_nothing(self):
        cgt = sys.modules["torch._inductor.cudagraph_trees"]
        params = [Tensor([4, 4]), Tensor([4, 4])]
        x = Tensor([2, 4])
        asked = []
        real_storage, real_getattr = Tensor.untyped_storage, ConfigModule.__getattr__
        out = None
        with cgtrace.record(self.path) as rec:
            for i in range(200):
                if i == 10:  # warmup, record and the first replays are behind
                    Tensor.untyped_storage = lambda t: asked.append("storage") or real_storage(t)
                    ConfigModule.__getattr__ = lambda mod, name: asked.append(name) or real_getattr(mod, name)
                cgt.mark_step_begin()
                _invocation()
                out = self.mgr._run(params + [x], self.fid)
            Tensor.untyped_storage, ConfigModule.__getattr__ = real_storage, real_getattr
        self.assertIsNone(rec.error)
        self.assertEqual(asked, [])
        self.assertEqual(rec.session.counts["replay"], 198)
        _, recs = self.records()
        # each replay retires the previous binding of the one cached output
        dels = [r["names"] for r in recs if r["op"] == "del"]
        fn = "test_steady_replays_ask_torch_nothing_0"
        self.assertEqual(dels[5:8], [[fn + "_c7_0"], [fn + "_c8_0"], [fn + "_c9_0"]])
        import test_recorded_examples
        self.assertEqual(test_recorded_examples.check_trace(self.path), [])
        del out

    def test_chained_replay_names_the_latest_output(self):
        """g takes f's cached output, renamed at every f call: g's memo of
        its inputs must not give the name of the call before."""
        cgt = sys.modules["torch._inductor.cudagraph_trees"]
        g = self.mgr.add(1)
        self.mgr.models[1] = lambda ins: [Tensor([2, 4])]
        params = [Tensor([4, 4]), Tensor([4, 4])]
        x = Tensor([2, 4])
        with cgtrace.record(self.path) as rec:
            for i in range(30):
                cgt.mark_step_begin()
                y, = self.mgr._run(params + [x], self.fid)
                z, = self.mgr._run([y], g)
                if i == 20:
                    params[1] = Tensor([4, 4])  # a new parameter: its first use names it
        self.assertIsNone(rec.error)
        _, recs = self.records()
        calls = [r for r in recs if r["op"] == "call"]
        for a, b in zip(calls[0::2], calls[1::2]):
            self.assertEqual(b["args"], a["out"])
        self.assertEqual([c["args"][:2] for c in calls[0::2]][20:23],
                         [["param", "param_1"], ["param", "param_2"], ["param", "param_2"]])
        import test_recorded_examples
        self.assertEqual(test_recorded_examples.check_trace(self.path), [])

    def test_many_inputs(self):
        """A model's hundreds of parameters: every call names them all, the
        same names, and a parameter swapped mid-loop is named anew."""
        cgt = sys.modules["torch._inductor.cudagraph_trees"]
        fid = self.mgr.add(2, static=list(range(300)))
        self.mgr.models[2] = lambda ins: [Tensor([2])]
        params = [Tensor([2]) for _ in range(300)]
        with cgtrace.record(self.path) as rec:
            for i in range(12):
                cgt.mark_step_begin()
                if i == 8:
                    params[150] = Tensor([2])
                out = self.mgr._run(params + [Tensor([2])], fid)
            del out
        self.assertIsNone(rec.error)
        _, recs = self.records()
        calls = [r for r in recs if r["op"] == "call"]
        self.assertEqual(len(calls), 12)
        first = calls[0]["args"][:300]
        self.assertEqual(len(set(first)), 300)
        for c in calls[1:8]:
            self.assertEqual(c["args"][:300], first)
        for c in calls[8:]:
            self.assertEqual(c["args"][:150] + c["args"][151:300], first[:150] + first[151:])
            self.assertEqual(c["args"][150], "param_300")
        import test_recorded_examples
        self.assertEqual(test_recorded_examples.check_trace(self.path), [])


class FastPathTest(FakeTorchTest):
    """A replay like the last one of its function takes the recorder's short
    path (Recorder._fast_after): it must write what the general path writes,
    record for record, through whatever a program does between two
    replays (a knob set, patched or mocked; an output dropped; a fresh
    input; a parameter swapped; chained functions; two outputs)."""

    def scenario(self, path, follow=False):
        """Records the program into path (streamed, with follow); returns
        (the recorder, how many calls took the short path)."""
        cgt = sys.modules["torch._inductor.cudagraph_trees"]
        ind = sys.modules["torch._inductor.config"]
        dyn = sys.modules["torch._dynamo.config"]
        ind.triton.skip_cudagraph_warmup = False
        mgr = CUDAGraphTreeManager()
        mgr.cache_replays = True
        f = mgr.add(0, static=[0, 1])
        g = mgr.add(1)
        two = mgr.add(2, static=[0])
        mgr.models[0] = lambda ins: [Tensor([2, 4])]
        mgr.models[1] = lambda ins: [Tensor([2, 4])]
        mgr.models[2] = lambda ins: [Tensor([3]), Tensor([5])]
        params = [Tensor([4, 4]), Tensor([4, 4])]
        x = Tensor([2, 4])
        fast = [0]
        real = cgtrace.Recorder._fast_after

        def counted(rec, *a):
            took = real(rec, *a)
            fast[0] += took
            return took

        with mock.patch.object(cgtrace.Recorder, "_fast_after", counted):
            with cgtrace.record(path, follow=follow) as rec, contextlib.ExitStack() as patched:
                y = z = pair = None
                for i in range(40):
                    cgt.mark_step_begin()
                    _invocation()
                    if i == 12:
                        ind.triton.skip_cudagraph_warmup = True  # a plain set between two replays
                    if i == 16:
                        y = None  # the program drops the output before the next call
                    if i == 20:
                        x = Tensor([2, 4])  # a fresh input: named at its first call
                    if i == 24:
                        params[1] = Tensor([4, 4])  # a swapped parameter
                    if i == 26:  # config.patch entered here, left at i == 29
                        patched.enter_context(ind.patch("triton.cudagraph_unexpected_rerecord_limit", 3))
                    if i == 29:
                        patched.close()
                    if i == 30:
                        with mock.patch.object(dyn, "recompile_limit", 2):
                            y, = mgr._run(params + [x], f)
                    else:
                        y, = mgr._run(params + [x], f)
                    if i >= 5:
                        z, = mgr._run([y], g)  # chained: g takes f's renamed output
                    pair = mgr._run([params[0]], two)
                del y, z, pair
        self.assertIsNone(rec.error)
        return rec, fast[0]

    def read(self, path):
        with open(path) as fh:
            return fh.read().splitlines()

    def test_short_path_writes_what_the_general_path_writes(self):
        fast_path = os.path.join(self.dir.name, "fast.cgt.jsonl")
        slow_path = os.path.join(self.dir.name, "slow.cgt.jsonl")
        _, took = at_one_line(self.scenario, fast_path)
        self.assertGreater(took, 60)  # most of the 115 calls: the test compares something
        from unittest import mock
        remove_fake_torch(self.saved)
        self.saved = install_fake_torch()
        MarkStepBox.mark_step_counter = 0
        with mock.patch.object(cgtrace.Recorder, "_fast_after", lambda *a: False):
            _, none = at_one_line(self.scenario, slow_path)
        self.assertEqual(none, 0)
        fast, slow = self.read(fast_path), self.read(slow_path)
        self.assertEqual(len(fast), len(slow))
        for i, (a, b) in enumerate(zip(fast[1:], slow[1:])):  # (the header names the file)
            self.assertEqual(a, b, "line %d" % (i + 2))
        import test_recorded_examples
        self.assertEqual(test_recorded_examples.check_trace(fast_path), [])

    def test_streamed_short_path_writes_the_same_records(self):
        """Followed, the short path's lines are streamed as they are made:
        the same records as the whole trace's (defs and notes aside, which
        a stream places otherwise)."""
        whole = os.path.join(self.dir.name, "whole.cgt.jsonl")
        streamed = os.path.join(self.dir.name, "streamed.cgt.jsonl")
        _, took = at_one_line(self.scenario, whole)
        remove_fake_torch(self.saved)
        self.saved = install_fake_torch()
        MarkStepBox.mark_step_counter = 0
        _, took_streamed = at_one_line(self.scenario, streamed, follow=True)
        # (Unfollowed, some of the replays _fast_after takes when followed
        # are deferred instead: DeferredReplayTest.)
        self.assertGreater(took_streamed, 60)

        def body(path):
            return [x for x in self.read(path)[1:] if json.loads(x)["op"] not in ("def", "note")]
        self.assertEqual(body(streamed), body(whole))

    def test_config_changes_between_replays_are_written(self):
        path = os.path.join(self.dir.name, "cfg.cgt.jsonl")
        self.scenario(path)
        recs = [json.loads(x) for x in self.read(path)[1:]]
        cfgs = [(i, r) for i, r in enumerate(recs) if r["op"] == "config"]
        self.assertEqual([r for _, r in cfgs], [
            {"op": "config", "warmup_runs": 0},  # the plain set
            {"op": "config", "rerecord_limit": 3},  # config.patch entered ...
            {"op": "config", "rerecord_limit": 128},  # ... and left
            {"op": "config", "recompile_limit": 2},  # mock.patch.object set ...
            {"op": "config", "recompile_limit": 8},  # ... and undone
        ])
        # each lands right before the first call that runs under it: f's
        # 13th call, its 27th (the patch's first), 30th (after it), 31st
        # (mocked), and g's 26th, the call after the mock's undo
        f, _, g = [r["fn"] for r in recs if r["op"] == "def"]  # (in first-call order)
        seen, before = {}, {}
        for i, r in enumerate(recs):
            if r["op"] == "call":
                seen[r["fn"]] = seen.get(r["fn"], 0) + 1
                for j in [j for j in before if before[j] is None]:
                    before[j] = (r["fn"], seen[r["fn"]])
            elif r["op"] == "config":
                before[i] = None
        self.assertEqual([before[i] for i, _ in cfgs], [(f, 13), (f, 27), (f, 30), (f, 31), (g, 26)])


class DeferredReplayTest(FakeTorchTest):
    """A steady replay is deferred by the _run wrapper (Recorder._defer) and
    written at the next other event: the trace must be, byte for byte, the
    one the recorder writes without deferring, through whatever a program
    does between two replays."""

    def scenario(self, path, recurse=True):
        """Records the program into path; returns (the recorder, how many
        calls were deferred). recurse: the tree's _run entered again from
        inside itself at each root replay, as 2.11's is."""
        cgt = sys.modules["torch._inductor.cudagraph_trees"]
        ind = sys.modules["torch._inductor.config"]
        mgr = CUDAGraphTreeManager()
        mgr.cache_replays = True
        mgr.recurse_roots = recurse
        f = mgr.add(0, static=[0, 1])
        h = mgr.add(1, static=[0])
        mgr.models[0] = lambda ins: [Tensor([2, 4])]
        mgr.models[1] = lambda ins: [Tensor([3]), Tensor([5])]  # two outputs
        ind.triton.force_cudagraph_sync = False  # (a knob the format has no key for)
        params = [Tensor([4, 4]), Tensor([4, 4])]
        x = Tensor([2, 4])
        deferred = [0]
        real = cgtrace.Recorder._write_pending

        def counted(rec):
            deferred[0] += len(rec._pending)
            return real(rec)

        from unittest import mock
        with mock.patch.object(cgtrace.Recorder, "_write_pending", counted):
            with cgtrace.record(path) as rec:
                y = pair = None
                for i in range(90):
                    steps = {5: 2, 7: 0, 40: 64, 75: 64}.get(i, 1)  # two steps; none; 64th steps
                    for _ in range(steps):
                        cgt.mark_step_begin()
                    _invocation()
                    if i == 11:
                        y = None  # dropped before the next call: the tree counts it dead
                    if i == 13:
                        x = Tensor([2, 4])  # a fresh input
                    if i == 15:
                        params[1] = Tensor([4, 4])  # the old parameter dies (a weakref callback)
                    if i == 17:
                        ind.triton.skip_cudagraph_warmup = True  # a knob with a format key
                    if i == 19:
                        ind.triton.force_cudagraph_sync = True  # one without: noted at a 64th step
                    if i == 26:
                        mgr.fail.add(0)  # the call raises
                    if i == 27:
                        mgr.fail.discard(0)
                    if i == 31:
                        mgr.debug_checkpointing_counter += 1  # the tree checkpointed
                    if i == 45:
                        rec.session.names_used.add(rec.session.fns[next(iter(rec.session.fns))].name + "_c50_0")
                    if i == 50:
                        pair = None  # h's outputs go: f's alone are polled from here
                    if i == 53:
                        # c10 holds f's output too, with a Python reference
                        # of its own (2.11's check: dead at a count of 3)
                        held = mgr.roots[f][0].cached_tensor_outputs[0]
                        held._c10_uses, keeper = 2, [held]
                        held = None
                    if i == 55:
                        y = None  # dropped again, now that the poll is the refcount's
                    if i == 57:
                        keeper[0]._c10_uses = 1
                        keeper = None
                    ins = params + [x]
                    if i == 58:
                        # another view of x's data, x kept: the same data pointers
                        ins = params + [Tensor([8], storage=x._storage)]
                    if i == 70:
                        ind.triton.force_cudagraph_sync = False  # noted at the 64th step of call 75
                    if i == 80:
                        # the tree's wrapper of f's output made anew, without
                        # the refcount check (same node, same object): from
                        # here the output is alive while its object is
                        node = mgr.roots[f][0]
                        node.outputs_weakrefs[0] = StorageWeakRefWrapper(node.cached_tensor_outputs[0])
                        node = None
                    if i == 85:
                        y = None
                    if i == 60:
                        cgt.reset_cudagraph_trees()
                    try:
                        y, = mgr._run(ins, f)
                    except RuntimeError:
                        pass
                    ins = None
                    if i in (9, 35):
                        y.item()  # a host read of the output
                    if 20 <= i < 50:
                        pair = mgr._run([params[0]], h)  # interleaved with f's replays
                    if i == 64:
                        # a tensor named by h's call, whose storage another
                        # object keeps: once it goes (65), its name is polled
                        # by its storage, which dies at 67, among f's replays
                        z = Tensor([4, 4])
                        keep = Tensor([4, 4], storage=z._storage)
                        mgr._run([z], h)
                    if i == 65:
                        z = None
                    if i == 67:
                        keep = None
                del y, pair
                # What the session holds once the deferred replays are
                # written: the same names, in the same order, everywhere.
                # (Not by_obj: it is keyed by id(), and a dead object's id
                # is given to the next object made, which differs.)
                with rec.lock:
                    rec._settle()
                ss = rec.session
                state = (list(ss.entries), [list(v) for v in ss.by_storage.values()], list(ss._watch),
                         sorted(ss.by_view.values()), ss.order, sorted(ss.names_used), dict(ss.counts),
                         [(e.name, e.order) for e in ss.entries.values()])
        self.assertIsNone(rec.error)
        return rec, deferred[0], state

    def test_deferred_replays_write_what_the_general_path_writes(self):
        self.deferred_against_general()

    def test_deferred_replays_with_the_check_before_211(self):
        from unittest import mock
        with mock.patch.object(Node, "before_211", True):
            self.deferred_against_general()

    def test_cgtrace_defer_0_takes_the_general_path(self):
        from unittest import mock
        with mock.patch.dict(os.environ, {"CGTRACE_DEFER": "0"}):
            rec, deferred, _ = self.scenario(os.path.join(self.dir.name, "general.cgt.jsonl"))
        self.assertEqual(deferred, 0)
        self.assertEqual(rec.armings, 0)

    def default_and_general(self, loop):
        """loop(path) recorded by default, then again on a fresh stand-in
        (its counters from 0) under CGTRACE_DEFER=0, the general path's:
        each run's answer."""
        default, general = each_way(self, loop, ({}, {"CGTRACE_DEFER": "0"}))
        return default, general

    def test_cgtrace_defer_0_takes_no_fresh_path(self):
        # A loop over new inputs: the fresh path's by default, the general
        # path's under CGTRACE_DEFER=0 (what deferred-same.py holds both
        # short paths against on the GPU).
        def loop(path):
            cgt = sys.modules["torch._inductor.cudagraph_trees"]
            mgr = CUDAGraphTreeManager()
            mgr.cache_replays = True
            f = mgr.add(0, static=[0])
            mgr.models[0] = lambda ins: [Tensor([16, 8])]
            w = Tensor([8, 8])
            with cgtrace.record(path) as rec:
                for _ in range(20):
                    cgt.mark_step_begin()
                    _invocation()
                    x = Tensor([16, 8])  # (over SMALL_TENSOR: a rand record, a template)
                    y, = mgr._run([w, x], f)
                    x = None
                del y
            self.assertIsNone(rec.error)
            with open(path) as fh:
                return rec.fresh_calls, fh.read().split("\n")[1:]

        (took, default), (took_general, general) = self.default_and_general(loop)
        self.assertGreater(took, 10)
        self.assertEqual(took_general, 0)
        self.assertEqual(default, general)

    def test_a_steady_weight_replaced_at_its_own_address_and_pointer(self):
        # A steady loop (the same input again) whose weight dies every 15th
        # call and a new one at the same data pointer (torch's caching
        # allocator hands a new parameter the dead one's block; the
        # stand-in's pointer set, its own being its storage's address) is
        # made where the allocator most often puts it, at the dead tensor's
        # address: the plan's KeptSet (every input by address, each death
        # noted by a callback) must decline that call, as the weak
        # references' check did, or the trace would replay the new weight
        # by the old one's name; the general path's trace is the reference.
        same_place, sets = [], []
        data_ptr = Tensor.data_ptr

        def fixed_ptr(t):
            return getattr(t, "fixed_ptr", None) or data_ptr(t)

        def loop(path):
            cgt, mgr, f, g = two_functions()
            w, x = Tensor([8, 8]), Tensor([16, 8])
            with cgtrace.record(path) as rec:
                for i in range(150):
                    if i % 15 == 14:
                        where, ptr = id(w), w.data_ptr()
                        w = None
                        w = Tensor([8, 8])
                        w.fixed_ptr = ptr
                        same_place.append(where == id(w))
                    cgt.mark_step_begin()
                    _invocation()
                    y, = mgr._run([w, x], f)
                    if os.environ.get("CGTRACE_DEFER") is None and rec._hot.lean is not None:
                        sets.append(rec._hot.lean[5])
                    if i % 5 == 4:
                        # (another function's call: the plan checked again
                        # at f's next, a serial later, on the same memo)
                        cgt.mark_step_begin()
                        _invocation()
                        z, = mgr._run([w, x], g)
                del y
            self.assertIsNone(rec.error)
            with open(path) as fh:
                return rec.short_calls, fh.read().split("\n")[1:]

        with mock.patch.object(Tensor, "data_ptr", fixed_ptr):
            (short, default), (_, general) = self.default_and_general(loop)
        self.assertGreater(short, 80)
        self.assertEqual(default, general)
        if os.environ.get("PYTHONMALLOC") != "malloc":  # (ASan's quarantine hands no freed block out again)
            self.assertTrue(any(same_place), "no new weight took the dead one's address")
        if os.environ.get("CGTRACE_FAST") != "0":
            self.assertGreater(sum(type(k).__name__ == "KeptSet" for k in sets), 80, sets[:5])

    def test_a_steady_kept_set_kept_while_its_memo_holds(self):
        # (Recorder._kept_set as _steady_holds asks it, on its own: the function's KeptSet
        # again for a memo made again of the same weak references at the
        # same pointers, as the general path makes it after another
        # function's call; a new one for another pointer; none kept for a
        # memo naming a dead input, whose weak references are armed)
        from types import SimpleNamespace
        from cgtrace import fastpath
        from cgtrace.freshq import _FreshQueue
        checks, why = fastpath.load()
        if not hasattr(checks, "KeptSet"):
            self.skipTest("no C module here: %s" % why)
        rec = SimpleNamespace(_checks=checks, _ptrs_are=None)
        fs = SimpleNamespace(kept_memo=None)
        a, b = Tensor([8, 8]), Tensor([16, 8])
        refs = (weakref.ref(a), weakref.ref(b))

        def kept(refs, ptrs):
            # (_steady_holds' call: every input at its own position)
            fs.kept_memo = got = _FreshQueue._kept_set(rec, fs.kept_memo, refs, list(range(len(refs))), list(ptrs))
            return refs if got is None else got[3]

        first = kept(refs, [a.data_ptr(), b.data_ptr()])
        self.assertEqual(type(first).__name__, "KeptSet")
        self.assertIs(kept(list(refs), [a.data_ptr(), b.data_ptr()]), first)
        moved = kept(refs, [a.data_ptr(), b.data_ptr() + 4])
        self.assertIsNot(moved, first)
        c = Tensor([8, 8])
        gone = (weakref.ref(c), refs[1])
        del c
        self.assertIs(kept(gone, [1, b.data_ptr()]), gone)
        self.assertIsNone(fs.kept_memo)

    def test_a_call_replaying_twice_is_noted_as_the_general_path_notes_it(self):
        # A steady call, and a call on a new input, whose tree replays
        # another function's node before its own in one call (execute_node
        # entered twice inside it): the lean paths note the first in hot
        # and hand the second to the general path's noting
        # (_general_noting), whether execute_node's wrapper is the C
        # module's (Noter) or Python; the trace is the one the general path
        # (CGTRACE_DEFER=0) writes: the call's expect names its own node,
        # the last the tree replayed.
        class Twice(CUDAGraphTreeManager):
            double = {}  # (the loop's steps whose call first replays the node of another function)
            n = 0
            nested = False

            def execute_node(self, node, new_inputs):
                other = self.double.get(self.n)
                if other is not None and not self.nested:
                    self.nested = True
                    try:
                        super().execute_node(self.roots[other][0], list(new_inputs))
                    finally:
                        self.nested = False
                return super().execute_node(node, new_inputs)

        def loop(path):
            cgt, mgr, f, g = two_functions(Twice)
            w, x = Tensor([8, 8]), Tensor([16, 8])
            mgr.double = {30: g, 55: g, 90: f, 120: f}
            with cgtrace.record(path) as rec:
                y = None
                for i in range(140):
                    cgt.mark_step_begin()
                    _invocation()
                    mgr.n = i
                    if i < 3:  # (g's warmup, recording and a replay: a node of its own)
                        y, = mgr._run([w, Tensor([16, 8])], g)
                    elif i < 70:  # a steady loop: the same input
                        y, = mgr._run([w, x], f)
                    else:  # a new input each call
                        z = Tensor([16, 8])  # (over SMALL_TENSOR: a rand record, a template)
                        y, = mgr._run([w, z], g)
                        z = None
                del y
            self.assertIsNone(rec.error)
            with open(path) as fh:
                return rec.short_calls + rec.fresh_calls, fh.read().split("\n")[1:]

        (took, default), (took_general, general) = self.default_and_general(loop)
        self.assertGreater(took, 100)
        self.assertEqual(took_general, 0)
        self.assertEqual(default, general)
        # (each doubled call's expect names its own function's node)
        calls = [json.loads(a) for a in general if a]
        expects = [b for a, b in zip(calls, calls[1:]) if a.get("op") == "call" and a.get("invocation") in
                   (30, 55, 90, 120)]
        self.assertEqual([e["node"]["fn"] for e in expects], ["loop_0", "loop_0", "loop_1", "loop_1"])

    def test_refcount_rules_read_from_the_check(self):
        t = Tensor([2])
        for before, want in ((False, cgtrace.USE_COUNT), (True, cgtrace.REFCOUNT)):
            node = Node(None, None)
            node.before_211 = before
            node.cache_outputs([t])
            self.assertEqual(cgtrace._refcount_rule(node.outputs_weakrefs[0]), want)
        other = StorageWeakRefWrapper(t, lambda: sys.getrefcount(t) == 4)
        self.assertEqual(cgtrace._refcount_rule(other), cgtrace.NO_RULE)
        self.assertEqual(cgtrace._refcount_rule(StorageWeakRefWrapper(t)), cgtrace.NO_RULE)

    def named_inputs_scenario(self, path):
        """A loop over new inputs with 40 parameters, through what changes a
        named input: a parameter's data replaced, a parameter named again
        (another function's output), a new parameter object, a tensor
        without storage,
        a view of the input kept, the same input twice, an int input, the
        input dying inside the call, a call that raises. Returns the trace's
        text."""
        cgt = sys.modules["torch._inductor.cudagraph_trees"]
        mgr = CUDAGraphTreeManager()
        mgr.cache_replays = True
        f = mgr.add(0, static=list(range(1, 41)))
        g = mgr.add(1)
        mgr.models[0] = lambda ins: [Tensor([2, 4])]
        mgr.models[1] = lambda ins: [ins[0]]  # (its warmup returns its input as is)
        params = [Tensor([4, 4]) for _ in range(40)]
        kept = []
        nostore = NoStorage([4])
        with cgtrace.record(path) as rec:
            y = x = None
            for i in range(60):
                cgt.mark_step_begin()
                _invocation()
                if i == 10:
                    st = Storage(64)
                    st._users.add(params[7])
                    params[7]._storage = st  # `p.data = new`: the object keeps, its data moves
                if i == 15:
                    out, = mgr._run([params[3]], g)  # a parameter named again, as g's output
                    out = None
                if i == 20:
                    params[30] = Tensor([4, 4])
                if i != 31:
                    x = Tensor([2, 4])  # (31: the same input again)
                if i == 25:
                    kept.append(Tensor([4], storage=x._storage))
                ins = [x] + params
                if i == 35:
                    ins.append(3)
                if 36 <= i < 39:
                    ins.append(nostore)  # a tensor without storage, left out
                if 40 <= i < 45:
                    x = None  # the new input dies inside the call
                if i == 50:
                    mgr.fail.add(0)
                if i == 51:
                    mgr.fail.discard(0)
                try:
                    y, = mgr._run(ins, f)
                except RuntimeError:
                    pass
                ins = None
            del y, x
        self.assertIsNone(rec.error)
        with open(path) as fh:
            return fh.read()

    def test_inputs_named_by_the_last_calls_entries_as_one_by_one(self):
        """_before_call names a call's inputs by the entries that named the
        last call's, checked in passes over all of them (Recorder.
        _by_last_entries), and the rest one by one: the same trace as one
        by one throughout."""
        from unittest import mock
        seen = []
        real = cgtrace._FACT_OF

        def counted(e):
            seen.append(e)
            return real(e)

        with mock.patch.object(cgtrace.calls, "_FACT_OF", counted):  # (where _before_call reads it)
            by_last = at_one_line(self.named_inputs_scenario, os.path.join(self.dir.name, "last.cgt.jsonl"))
        self.assertGreater(len(seen), 40 * 40)  # the passes named most calls' parameters
        remove_fake_torch(self.saved)
        self.saved = install_fake_torch()
        MarkStepBox.mark_step_counter = 0
        with mock.patch.object(cgtrace.Recorder, "_by_last_entries", False):
            one_by_one = at_one_line(self.named_inputs_scenario, os.path.join(self.dir.name, "one.cgt.jsonl"))
        strip = lambda t: t.split("\n", 1)[1]  # (the header names its file)
        self.assertEqual(strip(by_last), strip(one_by_one))
        self.assertEqual(strip(by_last).count('"op": "param"'), 42)  # 40, the new data, the new object

    def test_probe_judges_a_cached_output_as_the_tree_does(self):
        """_Probe.alive answers a cached output's liveness from its refcount
        when that says alive for sure, and asks the tree's wrapper
        otherwise: the answer is the wrapper's for every count of Python
        holders, with c10 holding the tensor or not, under either check."""
        for before in (False, True):
            for holders in (0, 1, 2, 3):
                for uses in (1, 2):
                    with self.subTest(before_211=before, holders=holders, c10_uses=uses):
                        node = Node(None, None)
                        node.before_211 = before
                        node.cache_outputs([Tensor([2])])
                        out = node.cached_tensor_outputs[0]
                        w = node.outputs_weakrefs[0]
                        probe = cgtrace._Probe(weakref.ref(out), StorageWeakRef(out.untyped_storage()))
                        probe.tree_ref = w
                        out._c10_uses = uses
                        keep = [out] * holders
                        out = None
                        if uses > 1 and not before and holders == 0:
                            continue  # (the 2.11 check asserts a Python holder while c10 holds one)
                        self.assertEqual(probe.alive(), not w.expired())
                        del keep

    def deferred_against_general(self):
        on = os.path.join(self.dir.name, "on.cgt.jsonl")
        off = os.path.join(self.dir.name, "off.cgt.jsonl")
        rec, deferred, state_on = at_one_line(self.scenario, on)
        self.assertGreater(deferred, 60)  # most replays: the test compares something
        remove_fake_torch(self.saved)
        self.saved = install_fake_torch()
        MarkStepBox.mark_step_counter = 0
        from unittest import mock
        with mock.patch.object(cgtrace.Recorder, "_defer", False):
            _, none, state_off = at_one_line(self.scenario, off)
        self.assertEqual(none, 0)
        self.assertEqual(state_on, state_off)
        with open(on) as a, open(off) as b:
            got, want = a.read().splitlines(), b.read().splitlines()
        self.assertEqual(len(got), len(want))
        for i, (a, b) in enumerate(zip(got[1:], want[1:])):  # (the header names the file)
            self.assertEqual(a, b, "line %d" % (i + 2))
        recs = [json.loads(x) for x in got[1:]]
        ops = [r["op"] for r in recs]
        for op in ("read", "reset", "config", "note"):
            self.assertIn(op, ops)
        self.assertIn("error", [k for r in recs if r["op"] == "expect" for k in r])
        import test_recorded_examples
        self.assertEqual(test_recorded_examples.check_trace(on), [])

    def test_a_replay_entering_run_twice_is_recorded_as_one_call(self):
        # 2.11's _run ends the path and calls run() again before a root's
        # replay: the recorder's _run wrapper is entered a second time
        # inside the first, deferred or not; the trace is the one a tree
        # entering it once gives.
        twice = os.path.join(self.dir.name, "twice.cgt.jsonl")
        once = os.path.join(self.dir.name, "once.cgt.jsonl")
        _, deferred, state_twice = at_one_line(self.scenario, twice)
        self.assertGreater(deferred, 60)
        remove_fake_torch(self.saved)
        self.saved = install_fake_torch()
        MarkStepBox.mark_step_counter = 0
        _, deferred_once, state_once = at_one_line(self.scenario, once, recurse=False)
        self.assertEqual(deferred_once, deferred)
        self.assertEqual(state_twice, state_once)
        with open(twice) as a, open(once) as b:
            self.assertEqual(a.read().splitlines()[1:], b.read().splitlines()[1:])

    @staticmethod
    def one_function():
        """A manager handing out cached replay outputs, one function of a
        static parameter and an input, and those two tensors."""
        mgr = CUDAGraphTreeManager()
        mgr.cache_replays = True
        f = mgr.add(0, static=[0])
        mgr.models[0] = lambda ins: [Tensor([2, 4])]
        return mgr, f, Tensor([4, 4]), Tensor([2, 4])

    def steady_with_writes(self, path):
        """Replays of one function, deferred, with knobs set between them
        (set, config.patch entered and left, mock.patch.object), each
        after several deferred calls."""
        from unittest import mock
        cgt = sys.modules["torch._inductor.cudagraph_trees"]
        ind = sys.modules["torch._inductor.config"]
        dyn = sys.modules["torch._dynamo.config"]
        mgr, f, p, x = self.one_function()
        with cgtrace.record(path) as rec, contextlib.ExitStack() as patched:
            y = None
            for i in range(60):
                cgt.mark_step_begin()
                _invocation()
                if i == 10:
                    ind.triton.cudagraph_unexpected_rerecord_limit = 5
                if i == 20:
                    patched.enter_context(ind.patch("triton.cudagraph_unexpected_rerecord_limit", 7))
                if i == 30:
                    patched.close()
                if i == 40:
                    patched.enter_context(mock.patch.object(dyn, "recompile_limit", 2))
                if i == 50:
                    patched.close()
                y, = mgr._run([p, x], f)
            del y
        self.assertIsNone(rec.error)
        return rec

    def test_config_writes_between_deferred_replays(self):
        on = os.path.join(self.dir.name, "on.cgt.jsonl")
        off = os.path.join(self.dir.name, "off.cgt.jsonl")
        rec = at_one_line(self.steady_with_writes, on)
        self.assertIsNotNone(rec._knobs.homes)  # the writes are counted, not probed
        self.assertGreater(rec.short_calls, 40)
        remove_fake_torch(self.saved)
        self.saved = install_fake_torch()
        MarkStepBox.mark_step_counter = 0
        from unittest import mock
        with mock.patch.object(cgtrace.Recorder, "_defer", False):
            at_one_line(self.steady_with_writes, off)
        with open(on) as a, open(off) as b:
            got, want = a.read().splitlines()[1:], b.read().splitlines()[1:]
        self.assertEqual(got, want)
        recs = [json.loads(x) for x in got]
        calls = 0
        before = []
        for r in recs:
            if r["op"] == "call":
                calls += 1
            elif r["op"] == "config":
                before.append((calls + 1, r))
        self.assertEqual(before, [
            (11, {"op": "config", "rerecord_limit": 5}), (21, {"op": "config", "rerecord_limit": 7}),
            (31, {"op": "config", "rerecord_limit": 5}), (41, {"op": "config", "recompile_limit": 2}),
            (51, {"op": "config", "recompile_limit": 8})])

    def test_lean_path_armed_once_in_64_calls(self):
        """A steady loop with a step before each call: every call but the
        first few is deferred, and _steady (the plan's lookup and checks,
        the knobs' probes) runs once in 64 calls, at the 64th step, where
        the 64th call's probes are read as well."""
        cgt = sys.modules["torch._inductor.cudagraph_trees"]
        mgr, f, p, x = self.one_function()
        path = os.path.join(self.dir.name, "lean.cgt.jsonl")
        with cgtrace.record(path) as rec:
            y = None
            for _ in range(640):
                cgt.mark_step_begin()
                _invocation()
                y, = mgr._run([p, x], f)
            del y
        self.assertIsNone(rec.error)
        self.assertGreaterEqual(rec.short_calls, 636)
        self.assertGreaterEqual(rec.armings, 10)  # (at least once in 64 calls: the probes are read)
        self.assertLessEqual(rec.armings, 12)

    def test_functions_alternating_are_each_armed(self):
        """Two functions called in turn (a forward and a backward, a graph
        break's two graphs) are each deferred through their own arming:
        _steady runs for one only at a 64th step or when the knobs are
        due, never because the other was called between."""
        cgt = sys.modules["torch._inductor.cudagraph_trees"]
        mgr, f, p, x = self.one_function()
        h = mgr.add(1, static=[0])
        mgr.models[1] = lambda ins: [Tensor([3])]
        path = os.path.join(self.dir.name, "two.cgt.jsonl")
        with cgtrace.record(path) as rec:
            y = z = None
            for _ in range(256):
                cgt.mark_step_begin()
                _invocation()
                y, = mgr._run([p, x], f)
                z, = mgr._run([p], h)
            del y, z
        self.assertIsNone(rec.error)
        self.assertGreaterEqual(rec.short_calls, 500)
        self.assertLessEqual(rec.armings, 40)
        import test_recorded_examples
        self.assertEqual(test_recorded_examples.check_trace(path), [])

    def hooked_replay(self, mgr, f, hook):
        """Makes f's node run hook() inside every replay of it, as the tree
        hands out its outputs."""
        class Hooked(list):
            def __iter__(self):
                hook()
                return list.__iter__(self)

        node = mgr.roots[f][0]
        node.cached_tensor_outputs = Hooked(node.cached_tensor_outputs)

    def other_thread_during_a_steady_call(self, mgr, f, p, x, other):
        """Four steady calls of f(p, x), then a fifth during whose replay
        another thread runs other(y) (y: the calls' output) while this one
        holds the recorder's lock; returns once both are done."""
        import threading
        import time
        cgt = sys.modules["torch._inductor.cudagraph_trees"]
        in_call, started = threading.Event(), threading.Event()
        y = None
        for _ in range(4):
            cgt.mark_step_begin()
            _invocation()
            y, = mgr._run([p, x], f)

        def during():
            if not in_call.is_set():
                in_call.set()
                self.assertTrue(started.wait(5))
                time.sleep(0.05)  # (the other thread is waiting for the lock by now)

        def run_other():
            self.assertTrue(in_call.wait(5))
            started.set()
            other(y)

        self.hooked_replay(mgr, f, during)
        t = threading.Thread(target=run_other)
        t.start()
        cgt.mark_step_begin()
        _invocation()
        y, = mgr._run([p, x], f)
        t.join(5)
        self.assertFalse(t.is_alive())

    def test_read_from_another_thread_during_a_steady_call(self):
        """A host read made by another thread while a deferred replay runs
        is the program's (the steady call is not that thread's), and is
        recorded after the call, with the name the call gave the output."""
        mgr, f, p, x = self.one_function()
        path = os.path.join(self.dir.name, "thread.cgt.jsonl")
        with cgtrace.record(path) as rec:
            self.other_thread_during_a_steady_call(mgr, f, p, x, lambda y: y.item())
        self.assertIsNone(rec.error)
        self.assertGreater(rec.short_calls, 0)
        with open(path) as fh:
            recs = [json.loads(line) for line in fh.read().splitlines()[1:]]
        reads = [i for i, r in enumerate(recs) if r["op"] == "read"]
        self.assertEqual(len(reads), 1, recs)
        calls = [r for r in recs[:reads[0]] if r["op"] == "call"]
        self.assertEqual(len(calls), 5)  # (after the fifth call, in which it was made)
        self.assertEqual(recs[reads[0]]["name"], calls[-1]["out"][0])
        import test_recorded_examples
        self.assertEqual(test_recorded_examples.check_trace(path), [])

    def test_call_from_another_thread_during_a_steady_call_is_recorded(self):
        """A call of the tree by another thread while a deferred replay runs
        is the program's own call, not the steady call's re-entry: it waits
        for the steady call, then is recorded."""
        mgr, f, p, x = self.one_function()
        g = mgr.add(1)
        path = os.path.join(self.dir.name, "thread-call.cgt.jsonl")
        got = []
        with cgtrace.record(path) as rec:
            self.other_thread_during_a_steady_call(mgr, f, p, x, lambda y: got.append(mgr._run([Tensor([3])], g)))
        self.assertIsNone(rec.error)
        self.assertEqual(len(got), 1)
        with open(path) as fh:
            recs = [json.loads(line) for line in fh.read().splitlines()[1:]]
        fns = [r["fn"] for r in recs if r["op"] == "call"]
        self.assertEqual(len(fns), 6, fns)
        self.assertEqual(fns[:5], fns[:1] * 5)  # (f's five calls, then the other thread's)
        self.assertNotEqual(fns[5], fns[0])
        import test_recorded_examples
        self.assertEqual(test_recorded_examples.check_trace(path), [])

    def test_call_reentering_a_steady_call_passes_through(self):
        """A call of the tree made inside a deferred replay (the tree's own
        re-entry) is part of that call: not recorded as one of its own."""
        cgt = sys.modules["torch._inductor.cudagraph_trees"]
        mgr, f, p, x = self.one_function()
        g = mgr.add(1)
        path = os.path.join(self.dir.name, "reenter.cgt.jsonl")
        inner = []
        with cgtrace.record(path) as rec:
            y = None
            for i in range(6):
                cgt.mark_step_begin()
                _invocation()
                if i == 4:
                    self.hooked_replay(mgr, f, lambda: inner.append(mgr._run([Tensor([3])], g)))
                y, = mgr._run([p, x], f)
            del y
        self.assertIsNone(rec.error)
        self.assertEqual(len(inner), 2)  # (calls 5 and 6 replayed f)
        with open(path) as fh:
            recs = [json.loads(line) for line in fh.read().splitlines()[1:]]
        fns = [r["fn"] for r in recs if r["op"] == "call"]
        self.assertEqual(fns, fns[:1] * 6)

    def test_config_write_past_setattr_is_seen_within_64_calls(self):
        """A knob's entry written directly (no __setattr__ to count it) is
        seen by the probes the steady path reads every 64th call: late, by
        less than 64 calls, never lost (no steps here: no 64th step)."""
        ind = sys.modules["torch._inductor.config"]
        mgr, f, p, x = self.one_function()
        path = os.path.join(self.dir.name, "direct.cgt.jsonl")
        with cgtrace.record(path) as rec:
            y = None
            for i in range(150):
                _invocation()
                if i == 5:
                    ind._config["triton.cudagraph_unexpected_rerecord_limit"].user_override = 9
                y, = mgr._run([p, x], f)
            del y
        self.assertIsNone(rec.error)
        self.assertGreater(rec.short_calls, 100)
        with open(path) as fh:
            recs = [json.loads(x) for x in fh.read().splitlines()[1:]]
        calls, at = 0, None
        for r in recs:
            if r["op"] == "call":
                calls += 1
            elif r == {"op": "config", "rerecord_limit": 9}:
                at = calls + 1
        self.assertIsNotNone(at)
        self.assertGreater(at, 6)  # (late: the count saw no write)
        self.assertLessEqual(at, 6 + 64)

    def test_refcount_rule_is_read_from_the_check(self):
        """The poll without torch's Python holds only for a check that
        compares the refcount with 2, as 2.11's does."""
        node = Node(Wrapped(FunctionID(0)), None)
        node.cache_outputs([Tensor([2])])
        self.assertTrue(cgtrace._refcount_rule(node.outputs_weakrefs[0]))

        def three(i):
            return sys.getrefcount(node.cached_tensor_outputs[i]) in (2, 3)

        other = StorageWeakRefWrapper(node.cached_tensor_outputs[0], functools.partial(three, 0))
        self.assertFalse(cgtrace._refcount_rule(other))
        self.assertFalse(cgtrace._refcount_rule(StorageWeakRefWrapper(node.cached_tensor_outputs[0])))
        # and the count it reads is the tree's: 2 once only the cache holds it
        ref = weakref.ref(node.cached_tensor_outputs[0])
        self.assertEqual(sys.getrefcount(ref()), node.get_output_refcount(0))
        held = ref()
        self.assertEqual(sys.getrefcount(ref()), 3)
        self.assertFalse(node.outputs_weakrefs[0].extra_ref_check())
        del held
        self.assertTrue(node.outputs_weakrefs[0].extra_ref_check())


if __name__ == "__main__":
    unittest.main()
