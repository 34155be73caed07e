"""The Recorder against the stand-in torch: its hooks (hooks.py), a call's
general path (calls.py), the events around calls (events.py), what it
asks torch (facts.py), and its own failures, never the program's."""

import contextlib
import io
import os
import sys
import types
import unittest
import warnings
import weakref

import fake_torch as fake  # (first: it puts the recorder on sys.path)
from fake_torch import (CODE_STRATEGY, COMPILING, CPU, CUDAGraphTreeManager, FrameAction,  # noqa: E402
                        FrameExecStrategy, MarkStepBox, Storage, Tensor, TraceFileTest, _invocation,
                        _mark_step_begin, _reset_cudagraph_trees, fee, foo, foo_with_break, int64)

import cgtrace  # noqa: E402  (after fake_torch)


class RecorderTest(TraceFileTest):
    trace_name = "r.cgt.jsonl"

    def setUp(self):
        super().setUp()
        fake.new_manager()

    def test_seed_program_shape(self):
        cgt = sys.modules["torch._inductor.cudagraph_trees"]
        with cgtrace.record(self.path, name="fake seed"):
            for _ in range(3):
                cgt.mark_step_begin()
                inp = Tensor([4])
                a, = foo(inp)
                del a
                b, = fee(inp)
            MarkStepBox.mark_step_counter -= 1  # a step the wrapper did not see
            c, = foo(inp)
        # patches are gone after the recording
        self.assertIs(cgt.mark_step_begin, _mark_step_begin)
        self.assertEqual(CUDAGraphTreeManager.__dict__["_run"].__qualname__, "CUDAGraphTreeManager._run")
        header, recs = self.records()
        self.assertEqual(header["name"], "fake seed")
        self.assertEqual(header["meta"]["torch"], "0.0-fake")
        self.assertEqual(header["config"], {"warmup_runs": 1, "rerecord_limit": 128, "recompile_limit": 8,
                                            "automatic_dynamic_shapes": True, "assume_static_by_default": True})
        self.assertEqual([r["fn"] for r in recs if r["op"] == "def"], ["foo_0", "fee_1"])
        acts = [r["action"] for r in recs if r["op"] == "expect"]
        self.assertEqual(acts, ["warmup", "warmup", "record", "record", "replay", "replay", "replay"])
        self.assertEqual(sum(r["op"] == "step" for r in recs), 4)
        nodes = [r["node"] for r in recs if r["op"] == "expect" and "node" in r]
        self.assertEqual(nodes[0], {"fn": "foo_0", "parent_fn": None})
        # `del a` shows before the fee call that follows it
        ops = [r["op"] for r in recs if r["op"] != "def"]
        self.assertEqual(ops[:7], ["step", "tensor", "call", "expect", "del", "call", "expect"])
        self.assertEqual(header["meta"]["recorded"]["trees"]["0"]["nodes"], 2)

    def test_cudagraphs_outside_the_trees_are_said(self):
        """With triton.cudagraph_trees off, compile_fx makes each graph's
        CUDA graph through its own cudagraphify_impl, never the tree
        manager: nothing of those calls can be recorded, and the trace
        says so at the graph's first run (a note), its counts say how
        many, and stop warns, instead of a trace of no calls that says
        nothing. The tree's calls around them are recorded as ever."""
        cfx = sys.modules["torch._inductor.compile_fx"]
        orig = cfx.cudagraphify_impl
        g1 = cfx.cudagraphify(lambda ins: [ins[0]])
        g2 = cfx.cudagraphify(lambda ins: [ins[0]])
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            with cgtrace.record(self.path):
                inp = Tensor([4])
                for _ in range(3):
                    g1([inp])
                a, = foo(inp)
                g2([inp])
        self.assertIs(cfx.cudagraphify_impl, orig)
        header, recs = self.records()
        notes = [r["text"] for r in recs if r["op"] == "note" and "outside CUDAGraph Trees" in r["text"]]
        self.assertEqual(len(notes), 2, notes)
        self.assertIn("compiled graph 1 of this program", notes[0])
        self.assertIn("compiled graph 2 of this program", notes[1])
        self.assertIn("cudagraph_trees is False", notes[0])
        # (in order: the second graph's note after the tree's call before it)
        ops = [r["op"] for r in recs if r["op"] in ("note", "call")]
        self.assertEqual(ops, ["note", "call", "note"])
        self.assertEqual(header["meta"]["recorded"]["cudagraphs_outside_trees"], 2)
        self.assertIn("2 compiled graphs made CUDA graphs outside CUDAGraph Trees", err.getvalue())
        # Only graphs outside the trees: their notes say why no call, not the general one.
        g3 = cfx.cudagraphify(lambda ins: [ins[0]])
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            with cgtrace.record(self.path):
                g3([inp])
        header, recs = self.records()
        self.assertEqual([r["text"][:28] for r in recs if r["op"] == "note"], ["compiled graph 1 of this pro"])
        self.assertNotIn("no compiled call", err.getvalue())
        # A recording without such graphs says nothing of them.
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            with cgtrace.record(self.path):
                a, = foo(inp)
        header, recs = self.records()
        self.assertNotIn("cudagraphs_outside_trees", header["meta"]["recorded"])
        self.assertNotIn("outside CUDAGraph Trees", err.getvalue())

    def test_empty_cache_is_recorded_where_the_program_calls_it(self):
        """torch.cuda.empty_cache() (or torch.cuda.memory's) between calls
        is an empty_cache record, after the deaths before it (their blocks
        are what it gives back) and after the replays queued before it;
        the one torch.cuda.graph makes inside the tree's recording is the
        engine's to model, not a record; both names are put back at stop."""
        cuda = sys.modules["torch"].cuda
        orig = cuda.empty_cache
        before = fake.EMPTIED[0]
        with cgtrace.record(self.path):
            inp = Tensor([4])
            for _ in range(4):  # warmup, recording (torch.cuda.graph empties the cache), replays
                a, = foo(inp)
            x2 = Tensor([4])
            b, = foo(x2)
            del x2, b  # (the input's death: written before the empty_cache)
            cuda.empty_cache()
            a, = foo(inp)
            cuda.memory.empty_cache()
        self.assertIs(cuda.empty_cache, orig)
        self.assertIs(cuda.memory.empty_cache, orig)
        self.assertEqual(fake.EMPTIED[0] - before, 3, "the program's two calls and the recording's, all run")
        header, recs = self.records()
        ops = [r["op"] for r in recs if r["op"] in ("call", "empty_cache", "del")]
        self.assertEqual(ops.count("empty_cache"), 2, ops)
        i = ops.index("empty_cache")
        self.assertEqual(ops[:i].count("call"), 5, "after the calls before it, the queued replays included")
        self.assertEqual(ops[i - 1], "del", "after the deaths before it")
        self.assertEqual(ops[i + 1:].count("call"), 1)
        self.assertEqual(ops[-1], "empty_cache")
        # Each with the line that called it: this test's, in this function.
        here = self.test_empty_cache_is_recorded_where_the_program_calls_it.__code__
        srcs = [r.get("src") for r in recs if r["op"] == "empty_cache"]
        self.assertEqual([(s["file"], s["fn"]) for s in srcs], [(here.co_filename, here.co_name)] * 2, srcs)
        self.assertEqual(srcs[1]["line"] - srcs[0]["line"], 2, "each its own line")
        # A library's own call names the library's line, not the
        # program's that reached it (the tree manager's empty capture:
        # torch.cuda.graph's __enter__ empties the cache).
        def library_free():
            cuda.empty_cache()
        with cgtrace.record(self.path):
            library_free()
        header, recs = self.records()
        src, = [r.get("src") for r in recs if r["op"] == "empty_cache"]
        self.assertEqual((src["fn"], src["line"]), ("library_free", library_free.__code__.co_firstlineno + 1))
        # Traced by Dynamo (is_compiling): the original only, no record.
        with cgtrace.record(self.path):
            COMPILING[0] = True
            try:
                cuda.empty_cache()
            finally:
                COMPILING[0] = False
        header, recs = self.records()
        self.assertNotIn("empty_cache", [r["op"] for r in recs])

    def test_recorder_keeps_no_manager_node_or_tensor_alive(self):
        """While a recording runs, what the program lets go of dies: the tree
        manager (with its graphs and pool), its nodes and the tensors. PyTorch's
        own tests assert no cudagraph segment is left after
        torch._dynamo.reset() inside the recorded tearDown."""
        import gc
        with cgtrace.record(self.path):
            mgr = fake.MGR = CUDAGraphTreeManager()
            fake.FOO = mgr.add(0)
            for _ in range(3):
                sys.modules["torch._inductor.cudagraph_trees"].mark_step_begin()
                inp = Tensor([4])
                a, = foo(inp)
            refs = [weakref.ref(mgr), weakref.ref(mgr.roots[fake.FOO][0]), weakref.ref(inp), weakref.ref(a)]
            del mgr, inp, a
            fake.MGR = fake.FOO = None
            gc.collect()
            self.assertEqual([r() is None for r in refs], [True] * len(refs))

    def test_sizes_of_a_dynamic_graph_name_its_first_def(self):
        """cudagraphify makes a FunctionID for each input size of a dynamic
        graph, all over one compiled callable (WrappedFunction.model): each
        later size's def names the first's as its graph; a function of its
        own callable, and one with none, name nothing."""
        def graph(inputs):
            return inputs

        def other(inputs):
            return inputs

        mgr = fake.MGR
        fids = [mgr.add(5, model=graph), mgr.add(6, model=graph), mgr.add(7, model=other), mgr.add(8),
                mgr.add(9, model=graph)]
        with cgtrace.record(self.path):
            for n, f in zip((4, 6, 8, 10, 12), fids):
                fake._invocation()
                a, = mgr._run([Tensor([n])], f)
                del a
        _, recs = self.records()
        defs = {r["fn"]: r.get("graph") for r in recs if r["op"] == "def"}
        names = list(defs)
        self.assertEqual(list(defs.values()), [None, names[0], None, None, names[0]], defs)

    def test_a_size_names_no_graph_defined_after_it(self):
        """A graph's first size whose call raised is defined only at the
        end, after the other sizes' defs: they name no graph (the format
        wants it defined before)."""
        def graph(inputs):
            return inputs

        mgr = fake.MGR
        first, second = mgr.add(5, model=graph), mgr.add(6, model=graph)
        mgr.fail = {5}  # (the tree's call of the first size raises)
        with cgtrace.record(self.path):
            fake._invocation()
            with self.assertRaises(RuntimeError):
                mgr._run([Tensor([4])], first)
            fake._invocation()
            a, = mgr._run([Tensor([6])], second)
            del a
        _, recs = self.records()
        defs = [(r["fn"], r.get("graph")) for r in recs if r["op"] == "def"]
        self.assertEqual(len(defs), 2, defs)
        self.assertEqual([g for _, g in defs], [None, None], defs)

    def test_new_param_made_before_the_old_died_is_written_before(self):
        """New weights put in place of the old (load_state_dict(assign=True),
        programs/ema_swap.py): the new parameter is made while the old one
        lives, which dies before the next call; its record comes before
        the old one's del and the step, since written after them the
        simulated allocator would hand it the old one's memory (PyTorch
        re-records there: the static input moved). The first parameter,
        with no death before it, stays where it was first seen."""
        fake.FOO = fake.MGR.add(0, static=(0,))
        mark = sys.modules["torch._inductor.cudagraph_trees"].mark_step_begin
        with cgtrace.record(self.path):
            w = Tensor([4])
            for _ in range(2):
                mark()
                a, = foo(w)
                del a
            new = Tensor([4])
            w = new  # (the old one dies here, after the new one was made)
            del new
            mark()
            a, = foo(w)
            del a
        _, recs = self.records()
        ops = [(r["op"], r.get("name") or r.get("names")) for r in recs if r["op"] in ("param", "del", "step")]
        params = [n for op, n in ops if op == "param"]
        self.assertEqual(len(params), 2, ops)
        self.assertEqual(ops[:2], [("step", None), ("param", params[0])], ops)
        first_del = next(i for i, (op, n) in enumerate(ops) if op == "del" and params[0] in n)
        self.assertLess(ops.index(("param", params[1])), first_del, ops)
        self.assertLess(ops.index(("param", params[1])), len(ops) - 1 - ops[::-1].index(("step", None)), ops)

    def test_param_data_swapped_is_a_new_tensor(self):
        """`m.weight.data = torch.rand(...)` between calls (PyTorch's
        test_unstable_ptr): the same Python object over a new storage is a
        new param in the trace, the old name deleted, so the replay sees the
        static input's address change as PyTorch does."""
        fake.FOO = fake.MGR.add(0, static=(0,))
        w = Tensor([4])
        with cgtrace.record(self.path):
            for _ in range(3):
                a, = foo(w)
                del a
                w._storage = Storage(16)  # w.data = new data
        _, recs = self.records()
        calls = [r["args"][0] for r in recs if r["op"] == "call"]
        self.assertEqual(len(set(calls)), 3, calls)
        params = [r["name"] for r in recs if r["op"] == "param"]
        self.assertEqual(params, calls)
        # The old name dies after the new data's record: both lived at once.
        order = [(r["op"], r.get("name") or r.get("names")) for r in recs if r["op"] in ("param", "del")]
        self.assertLess(order.index(("param", calls[1])), order.index(("del", [calls[0]])))
        self.assertLess(order.index(("param", calls[2])), order.index(("del", [calls[1]])))

    def test_backward_without_cudagraphs(self):
        """A compiled backward that skipped cudagraphs calls the manager's
        set_to_running_backward() and runs eagerly: a skipped_backward record."""
        with cgtrace.record(self.path):
            a, = foo(Tensor([4]))
            fake.MGR.set_to_running_backward()
        _, recs = self.records()
        self.assertEqual([r["op"] for r in recs if r["op"] in ("call", "skipped_backward")],
                         ["call", "skipped_backward"])
        self.assertEqual(CUDAGraphTreeManager.__dict__["set_to_running_backward"].__qualname__,
                      "CUDAGraphTreeManager.set_to_running_backward")

    def test_two_devices_two_trees(self):
        """One tree manager per device (issue 18): calls on cuda:1 go to its
        own manager; the trace has two devices, the tensors and the expects
        name their device, and a reset of one device's manager names it."""
        mgr1 = CUDAGraphTreeManager()
        mgr1.device_index = 1
        bar = mgr1.add(0)

        class Dev1:
            type, index = "cuda", 1

        def on1(x):
            _invocation()
            return mgr1._run([x], bar)

        with cgtrace.record(self.path):
            for _ in range(3):
                sys.modules["torch._inductor.cudagraph_trees"].mark_step_begin()
                a, = foo(Tensor([4]))
                t = Tensor([4])
                t.device = Dev1()
                b, = on1(t)
            fake.MGR = CUDAGraphTreeManager()  # device 0's manager ended
            fake.FOO = fake.MGR.add(0)
            c, = foo(Tensor([4]))
        header, recs = self.records()
        self.assertEqual(header["devices"], 2)
        self.assertEqual(sorted({r.get("device", 0) for r in recs if r["op"] == "tensor"}), [0, 1])
        exp = [(r["action"], r.get("device", 0)) for r in recs if r["op"] == "expect"]
        self.assertEqual(exp, [("warmup", 0), ("warmup", 1), ("record", 0), ("record", 1),
                               ("replay", 0), ("replay", 1), ("warmup", 0)])
        self.assertIn({"op": "reset", "device": 0}, recs)
        self.assertEqual(header["meta"]["recorded"]["trees"]["1"]["nodes"], 1)

    def test_resets_of_the_trees(self):
        """torch._dynamo.reset() (reset_cudagraph_trees) is a reset record for
        every device; a new manager on a device without it (its container
        let the old one go) is a reset of that device. The counters after a
        reset start again."""
        cgt = sys.modules["torch._inductor.cudagraph_trees"]
        with cgtrace.record(self.path):
            cgt.mark_step_begin()
            a, = foo(Tensor([4]))
            cgt.reset_cudagraph_trees()
            fake.MGR = CUDAGraphTreeManager()
            fake.FOO, fake.FEE = fake.MGR.add(0), fake.MGR.add(1)
            b, = foo(Tensor([4]))
            fake.MGR = CUDAGraphTreeManager()  # no reset seen: the manager changed
            fake.FOO = fake.MGR.add(0)
            c, = foo(Tensor([4]))
            cgt.mark_step_begin()
        self.assertIs(cgt.reset_cudagraph_trees, _reset_cudagraph_trees)
        _, recs = self.records()
        ops = [(r["op"], r.get("device")) for r in recs if r["op"] in ("reset", "step", "call")]
        self.assertEqual(ops, [("step", None), ("call", None), ("reset", None), ("call", None),
                               ("reset", 0), ("call", None), ("step", None)])
        self.assertEqual(len({r["fn"] for r in recs if r["op"] == "call"}), 3)

    def test_counter_back_at_zero_is_a_reset(self):
        """A reset_cudagraph_trees the recorder did not wrap (imported by name
        before the recording) still shows: the mark-step counter is at 0."""
        cgt = sys.modules["torch._inductor.cudagraph_trees"]
        with cgtrace.record(self.path):
            cgt.mark_step_begin()
            a, = foo(Tensor([4]))
            _reset_cudagraph_trees()
            b, = foo(Tensor([4]))
        _, recs = self.records()
        ops = [r["op"] for r in recs if r["op"] in ("reset", "step", "call")]
        self.assertEqual(ops, ["step", "call", "reset", "call"])

    def test_invocation_from_dynamo_generation(self):
        """A graph break's resume function runs in the same invocation as the
        graph before it; each top-level call is a new one."""
        gen = sys.modules["torch._dynamo.mutation_guard"].GenerationTracker
        gen.generation = 41
        with cgtrace.record(self.path):
            b, = foo_with_break(Tensor([4]))
            c, = foo(Tensor([4]))
        _, recs = self.records()
        calls = [r for r in recs if r["op"] == "call"]
        # fake.FOO is named after the frame of its first call (foo_with_break).
        self.assertEqual([(r["fn"], r["invocation"]) for r in calls],
                         [("foo_with_break_0", 42), ("foo_with_break_1", 42), ("foo_with_break_0", 43)])
        self.assertFalse([r for r in recs if r["op"] == "note"])

    def test_dtype_and_slice_of_base(self):
        """The torch side reads dtype, element size, storage size, offset,
        strides and _base: an int64 column slice becomes a base tensor and a
        strided view of it."""
        base = Tensor([3, 4], dtype=int64)
        with cgtrace.record(self.path):
            out, = foo(base[:, 2])
        _, recs = self.records()
        t, v = [r for r in recs if r["op"] in ("tensor", "eager")]
        self.assertEqual((t["name"], t["shape"], t["dtype"]), ("base", [3, 4], "int64"))
        self.assertEqual(v, {"op": "eager", "out": "view", "k": "view", "a": "base", "shape": [3],
                             "offset": 2, "strides": [4]})

    def test_cudagraph_or_error_raise_keeps_the_mutation(self):
        """triton.cudagraph_or_error makes the tree raise where it would skip
        cudagraphs (PyTorch's test_cudagraph_or_error: a function mutating
        its plain input): the call returned nothing, yet its def still says
        which input it mutates, and the header says the knob is on."""
        ind = sys.modules["torch._inductor.config"]
        ind.triton.cudagraph_or_error = True
        fake.FOO = fake.MGR.add(0, mutated=(0,))
        fake.MGR.fail.add(0)
        with cgtrace.record(self.path):
            with self.assertRaises(RuntimeError):
                foo(Tensor([4]))
        header, recs = self.records()
        self.assertIs(header["config"].get("cudagraph_or_error"), True)
        d = next(r for r in recs if r["op"] == "def")
        self.assertEqual([st["out"] for st in d["body"] if st["out"] in d["params"]], d["params"][:1], d)
        self.assertEqual(d["static"], [])
        self.assertEqual(cgtrace.settings_from_knobs({"triton.cudagraph_or_error": False}),
                         {"cudagraph_or_error": False})

    def test_settings_from_config_and_their_changes(self):
        """The header holds PyTorch's settings in force at the start; a knob a
        test patches mid-program becomes a `config` record before the next
        call; knobs the format has no key for are noted."""
        ind = sys.modules["torch._inductor.config"]
        dyn = sys.modules["torch._dynamo.config"]
        ind.triton.skip_cudagraph_warmup = True
        ind.triton.cudagraph_support_input_mutation = True
        ind.triton.cudagraph_dynamic_shape_warn_limit = 8
        ind.triton.force_cudagraph_sync = False
        dyn.inline_inbuilt_nn_modules = False
        dyn.recompile_limit = 3
        with cgtrace.record(self.path):
            foo(Tensor([4]))
            ind.triton.skip_cudagraph_warmup = False
            ind.triton.cudagraph_unexpected_rerecord_limit = 0
            dyn.automatic_dynamic_shapes = False
            foo(Tensor([4]))
            foo(Tensor([4]))  # nothing changed: no record
            ind.triton.cudagraph_dynamic_shape_warn_limit = 2
            ind.triton.force_cudagraph_sync = True
            dyn.inline_inbuilt_nn_modules = True
            # knobs without a format key are looked at on steps and first calls
            sys.modules["torch._inductor.cudagraph_trees"].mark_step_begin()
            foo(Tensor([4]))
        header, recs = self.records()
        self.assertEqual(header["config"], {"warmup_runs": 0, "rerecord_limit": 128, "recompile_limit": 3,
                                            "support_input_mutation": True, "automatic_dynamic_shapes": True,
                                            "assume_static_by_default": True,
                                            "inline_inbuilt_nn_modules": False,
                                            "dynamic_shape_warn_limit": 8})
        self.assertEqual(header["meta"]["torch_config"]["triton.force_cudagraph_sync"], False)
        ops = [r["op"] for r in recs if r["op"] != "def"]
        self.assertEqual(ops.count("config"), 2)
        cfgs = [r for r in recs if r["op"] == "config"]
        self.assertEqual(cfgs[0], {"op": "config", "warmup_runs": 1, "rerecord_limit": 0,
                                   "automatic_dynamic_shapes": False})
        self.assertEqual(cfgs[1], {"op": "config", "rerecord_limit": cgtrace.UNBOUNDED,
                                   "dynamic_shape_warn_limit": 2, "inline_inbuilt_nn_modules": True})
        i = recs.index(cfgs[0])
        # in force from the second call on: no call between them
        self.assertEqual([r["op"] for r in recs[:i]].count("call"), 1)
        notes = [r["text"] for r in recs if r["op"] == "note"]
        self.assertEqual(notes, ["torch config triton.force_cudagraph_sync changed to True"])

    def test_host_reads_of_tree_outputs(self):
        """.item(), print, .cpu() of a tree output (or a view of one) are
        `read` records with what PyTorch said; reads of other tensors and
        the recorder's own value reads are not."""
        x = Tensor([2, 2], values=[1.0, 2.0, 3.0, 4.0])
        originals = {m: Tensor.__dict__.get(m) for m in cgtrace._READ_METHODS}
        with cgtrace.record(self.path):
            self.assertIsNot(Tensor.__dict__["item"], originals["item"])
            y, = foo(x)
            y.item()
            x.item()  # an eager tensor: not a read the trace needs
            with contextlib.redirect_stdout(io.StringIO()):
                print(y[:, 1])  # a view of the output, over its storage
            y.overwritten = True
            with self.assertRaisesRegex(RuntimeError, "overwritten"):
                y.cpu()
        # the patches are gone: the class is as it was (methods it lacked stay absent)
        self.assertEqual({m: Tensor.__dict__.get(m) for m in cgtrace._READ_METHODS}, originals)
        _, recs = self.records()
        reads = [(r, recs[i + 1]) for i, r in enumerate(recs) if r["op"] == "read"]
        self.assertEqual([(r["name"], e["error"]) for r, e in reads],
                         [("foo_0_c1_0", None), ("foo_0_c1_0", None),
                          ("foo_0_c1_0", "Error: accessing tensor output of CUDAGraphs that has been "
                                         "overwritten by a subsequent run.")])
        self.assertEqual(sum(r["op"] == "tensor" for r in recs), 1)

    def test_reads_inside_dynamo_tracing_are_the_original_method(self):
        """While Dynamo traces (is_compiling), a patched read method is the
        original method and nothing else: no read record, no recorder state
        touched (Dynamo would guard on it and break the graph)."""
        x = Tensor([2, 2], values=[1.0, 2.0, 3.0, 4.0])
        with cgtrace.record(self.path):
            y, = foo(x)
            COMPILING[0] = True
            try:
                y.item()
                y.cpu()
            finally:
                COMPILING[0] = False
            y.item()
        _, recs = self.records()
        self.assertEqual([r["name"] for r in recs if r["op"] == "read"], ["foo_0_c1_0"])

    def test_read_wrappers_kept_off_dynamos_frame_hook(self):
        """Dynamo's frame hook never converts the read wrappers (SKIP, and
        what they call of torch's as unrecorded: DEFAULT) nor any other
        code of the recorder, and all it calls (SKIP, SKIP): a read run
        from compiled bytecode (the bool() a graph break leaves) would
        otherwise be compiled with is_compiling() True and lost. Without a
        torch that can say so, the trace says reads may be missing."""
        CODE_STRATEGY.clear()
        config = sys.modules["torch._inductor.config"]
        with cgtrace.record(self.path):
            code = Tensor.item.__code__
            self.assertIs(Tensor.__bool__.__code__, code)
            counted = type(config).__setattr__.__code__
            self.assertIs(type(config).__delattr__.__code__, counted)
        entry = FrameExecStrategy(FrameAction.SKIP, FrameAction.DEFAULT)
        skip = FrameExecStrategy(FrameAction.SKIP, FrameAction.SKIP)
        # the wrapper itself: what it calls of torch's is handed on as unrecorded
        self.assertEqual(CODE_STRATEGY.pop(code), entry)
        lambdas = [c for c in code.co_consts if isinstance(c, types.CodeType)]
        self.assertTrue(lambdas)  # (the storage's lambda a read asks for)
        for c in [counted, cgtrace.Session._died.__code__, cgtrace.Session.read_target.__code__,
                  cgtrace.Recorder._on_read.__code__, cgtrace.Recorder._settle.__code__, cgtrace._to_host.__code__,
                  cgtrace.encode_record.__code__] + lambdas:
            self.assertEqual(CODE_STRATEGY.get(c), skip, c)
        self.assertEqual(set(CODE_STRATEGY.values()), {skip})
        package = os.path.dirname(cgtrace.__file__)
        self.assertTrue(all(os.path.dirname(c.co_filename) == package for c in CODE_STRATEGY))
        _, recs = self.records()
        self.assertEqual([r for r in recs if r["op"] == "note" and "no compiled call" not in r["text"]], [])
        saved = sys.modules.pop("torch._C._dynamo.eval_frame")
        try:
            with cgtrace.record(self.path):
                pass
        finally:
            sys.modules["torch._C._dynamo.eval_frame"] = saved
        _, recs = self.records()
        self.assertEqual([r["text"] for r in recs if r["op"] == "note" and "no compiled call" not in r["text"]],
                         ["this torch cannot keep Dynamo's frame hook off the recorder's wrappers: host "
                          "reads run from compiled code (after a graph break) may be missing"])

    def test_unsupported_tensors_left_out_with_a_note(self):
        cpu = Tensor([3])
        cpu.device = CPU()
        x = Tensor([3])
        with cgtrace.record(self.path):
            fake.MGR._run([cpu, x], fake.FOO)
            fake.MGR._run([cpu, x], fake.FOO)
        _, recs = self.records()
        notes = [r["text"] for r in recs if r["op"] == "note"]
        self.assertEqual(notes, ["cgtrace left out a tensor it cannot record: cpu tensor"])
        calls = [r for r in recs if r["op"] == "call"]
        self.assertEqual([c["args"] for c in calls], [["in"], ["in"]])

    def test_single_tensor_output_is_one_value(self):
        """cudagraphify'd models may return a bare tensor (test_dynamic_warmup):
        one output, not its rows."""
        def bare(new_inputs, function_id):
            outs = CUDAGraphTreeManager._outs(fake.MGR, new_inputs)
            return outs[0]
        fake.MGR.run_eager = bare
        with cgtrace.record(self.path):
            fake.MGR._run([Tensor([2])], fake.FOO)
        _, recs = self.records()
        self.assertEqual([len(r["out"]) for r in recs if r["op"] == "call"], [1])
        self.assertEqual(len([r for r in recs if r["op"] == "def"][0]["returns"]), 1)

    def test_recorder_failure_never_reaches_the_program(self):
        """A record the writer refuses stops the recording with a warning;
        the program's calls run once each and return their results."""
        real_add = cgtrace.Trace.add
        calls = []

        def add(trace, rec):
            if rec["op"] == "call" and len(calls) == 1:
                raise ValueError("call record: refused")
            if rec["op"] == "call":
                calls.append(rec)
            return real_add(trace, rec)

        cgtrace.Trace.add = add
        try:
            with self.assertWarnsRegex(RuntimeWarning, r"recording stopped \(.*refused \(at .*\w+\.py:\d+ in \w+ <- "):
                with cgtrace.record(self.path) as rec:
                    a, = foo(Tensor([4]))
                    b, = foo(Tensor([4]))
                    c, = foo(Tensor([4]))
        finally:
            cgtrace.Trace.add = real_add
        self.assertEqual(fake.MGR.calls[fake.FOO], 3)
        self.assertIn("call record: refused", rec.error)
        header, recs = self.records()
        self.assertIn("refused", header["meta"]["recorder_error"])
        # where it failed, innermost frame first, so a GPU run's log says it
        where = r"\(at test_recorder\.py:\d+ in add <- \w+\.py:\d+ in \w+( <- \w+\.py:\d+ in \w+)+\)$"
        self.assertRegex(rec.error, where)
        self.assertRegex(header["meta"]["recorder_error"], where)
        self.assertEqual(sum(r["op"] == "call" for r in recs), 1)
        self.assertIn("cgtrace stopped recording here", [r for r in recs if r["op"] == "note"][-1]["text"])

    def test_failure_under_warnings_as_errors_still_not_raised(self):
        """-W error turns warnings.warn into a raise: the recorder's warning
        then goes to stderr, and the program's call still returns."""
        real_add = cgtrace.Trace.add

        def add(trace, rec):
            if rec["op"] == "call":
                raise ValueError("call record: refused")
            return real_add(trace, rec)

        cgtrace.Trace.add = add
        try:
            with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()) as err:
                warnings.simplefilter("error")
                with cgtrace.record(self.path) as rec:
                    out, = foo(Tensor([4]))
        finally:
            cgtrace.Trace.add = real_add
        self.assertEqual(out.shape, (4,))
        self.assertIn("recording stopped", err.getvalue())
        self.assertIn("refused", rec.error)

    def test_unwritable_trace_warns(self):
        path = os.path.join(self.dir.name, "no", "such", "dir", "t.cgt.jsonl")
        with self.assertWarnsRegex(RuntimeWarning, "could not write"):
            with cgtrace.record(path) as rec:
                foo(Tensor([4]))
        self.assertIn("writing", rec.error)

    def test_error_is_recorded_and_raised(self):
        fake.MGR.fail.add(0)
        with self.assertRaises(RuntimeError):
            with cgtrace.record(self.path):
                foo(Tensor([2], values=[1.0, 2.0]))
        _, recs = self.records()
        exp = [r for r in recs if r["op"] == "expect"][0]
        self.assertEqual(exp["error"], "accessing tensor output of CUDAGraphs that has been overwritten")
        self.assertEqual(exp["action"], "eager")
        t = [r for r in recs if r["op"] == "tensor"][0]
        self.assertEqual((t["init"], t["values"]), ("values", [1.0, 2.0]))

    def test_static_param_named_and_mode(self):
        w = Tensor([3])
        lin = fake.MGR.add(2, mode="FORWARD", static=[0], placeholders=["primals_1", "primals_2"])

        def forward(x):
            return fake.MGR._run([w, x, 7], lin)

        with cgtrace.record(self.path):
            forward(Tensor([3]))
        _, recs = self.records()
        d = [r for r in recs if r["op"] == "def"][0]
        self.assertEqual((d["fn"], d["mode"], d["params"]), ("forward_2", "forward", ["primals_1", "primals_2"]))
        self.assertEqual([r["op"] for r in recs[1:3]], ["param", "tensor"])

    def test_command_line_run(self):
        script = os.path.join(self.dir.name, "prog.py")
        with open(script, "w") as fh:
            fh.write("import sys\n"
                     "sys.modules['torch._inductor.cudagraph_trees'].mark_step_begin()\n"
                     "assert sys.argv[1:] == ['--flag', 'v'], sys.argv\n")
        argv, path = sys.argv[:], sys.path[:]
        try:
            with contextlib.redirect_stderr(io.StringIO()) as err:
                status = cgtrace.main(["run", "-o", self.path, script, "--flag", "v"])
        finally:
            sys.argv, sys.path[:] = argv, path
        self.assertIn("wrote %s (0 calls)" % self.path, err.getvalue())
        self.assertEqual(status, 0)
        header, recs = self.records()
        self.assertEqual(header["name"], "prog.py")
        self.assertEqual(header["meta"]["script"], "prog.py")
        # (a program that made no compiled call: the recording says so)
        self.assertEqual([r["op"] for r in recs], ["step", "note"])
        self.assertIn("no compiled call reached CUDAGraph Trees", recs[1]["text"])
        self.assertIn("cgtrace: no compiled call reached CUDAGraph Trees", err.getvalue())

    def test_training_loop_forward_backward(self):
        """A training loop as AOT autograd runs it under the tree: the
        forward returns its parameters and input for autograd to save (the
        same objects it was given) beside its activation, the backward
        takes them back with the loss gradient and returns the parameters'
        gradients and None for the input. Every iteration is recorded,
        none stops the recorder (on the GPU this stopped after the first
        call: two bindings of one parameter compared tensors with ==)."""
        w1, w2 = Tensor([8, 8]), Tensor([8, 8])
        fwd = fake.MGR.add(2, mode="FORWARD", static=[0, 1], placeholders=["primals_1", "primals_2", "primals_3"])
        bwd = fake.MGR.add(3, mode="BACKWARD", static=[0, 1],
                      placeholders=["primals_1", "primals_2", "primals_3", "relu", "tangents_1"])
        fake.MGR.id_to_compile_id = {fwd: "0/0", bwd: "0/0"}

        def forward_graph(inputs):
            p1, p2, x = inputs
            act = Tensor([4, 8])
            return [Tensor([4, 8]), p1, p2, x, act]

        def backward_graph(inputs):
            p1, p2, x, act, grad = inputs
            return [Tensor([8, 8]), Tensor([8, 8]), None]

        fake.MGR.models = {2: forward_graph, 3: backward_graph}
        cgt = sys.modules["torch._inductor.cudagraph_trees"]
        iters = 5

        def train_step():
            _invocation()
            logits, *saved = fake.MGR._run([w1, w2, Tensor([4, 8])], fwd)
            loss_grad = Tensor([4, 8])  # the loss runs eagerly
            grads = fake.MGR._run(saved + [loss_grad], bwd)
            del saved
            # the optimizer updates w1, w2 in place from the gradients
            # (eager), then zero_grad(set_to_none=True) drops them
            self.assertIsNone(grads[2])
            del grads
            return logits

        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a recorder stop would raise here
            with cgtrace.record(self.path) as rec:
                for _ in range(iters):
                    cgt.mark_step_begin()
                    logits = train_step()
                    del logits
        self.assertIsNone(rec.error)
        header, recs = self.records()
        self.assertNotIn("recorder_error", header["meta"])
        self.assertEqual(rec.session.counts["calls"], 2 * iters)
        defs = {r["fn"]: r for r in recs if r["op"] == "def"}
        self.assertEqual(sorted(defs), ["train_step_2", "train_step_bwd_3"])
        self.assertEqual(defs["train_step_bwd_3"]["mode"], "backward")
        calls = [r for r in recs if r["op"] == "call"]
        self.assertEqual([c["fn"] for c in calls], ["train_step_2", "train_step_bwd_3"] * iters)
        # the parameters keep their names through every iteration, in the
        # forward and in the backward (autograd hands them back)
        for c in calls:
            self.assertEqual(c["args"][:2], ["param", "param_1"])
        acts = [r["action"] for r in recs if r["op"] == "expect"]
        self.assertEqual(acts, ["warmup"] * 2 + ["record"] * 2 + ["replay"] * (2 * iters - 4))
        self.assertEqual(sum(r["op"] == "param" for r in recs), 2)
        self.assertEqual(sum(r["op"] == "step" for r in recs), iters)
        self.assertFalse([r for r in recs if r["op"] == "note"])
        import test_recorded_examples
        self.assertEqual(test_recorded_examples.check_trace(self.path), [])

    def test_fake_tensor_truth_value_is_torchs(self):
        """The stand-in refuses what torch refuses, so the tests above catch
        recorder code that compares or tests tensors."""
        a, b = Tensor([4]), Tensor([4])
        with self.assertRaisesRegex(RuntimeError, "more than one value is ambiguous"):
            bool(a == b)
        with self.assertRaisesRegex(RuntimeError, "more than one value is ambiguous"):
            _ = b in [a]
        with self.assertRaisesRegex(RuntimeError, "more than one value is ambiguous"):
            weakref.ref(a, lambda _: None) == weakref.ref(a, lambda _: None) or None
        with self.assertRaisesRegex(RuntimeError, "no values is ambiguous"):
            bool(Tensor([0]))
        self.assertTrue(bool(Tensor([1], values=[2.0]) == 2.0))
        self.assertIn(a, [a])  # identity first, as list.__contains__ does
        self.assertEqual(len({a, b}), 2)

    def test_nested_recording_refused(self):
        with cgtrace.record(self.path):
            with self.assertRaisesRegex(RuntimeError, "already active"):
                cgtrace.record(self.path + "2").start()


if __name__ == "__main__":
    unittest.main()
