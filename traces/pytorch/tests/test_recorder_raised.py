"""raised.py against the stand-in torch: the overwritten error an eager op
raises on a tree output (not a read method) is recorded as a read of that
output with its error, once, by the output the op touched; other errors,
and the tree call's own, are not. Python 3.12 on (sys.monitoring); make
test runs this file with a python3.12 or 3.13 where there is one."""

import sys
import unittest

import fake_torch as fake  # (first: it puts the recorder on sys.path)
from fake_torch import Tensor, TraceFileTest, foo, stack  # noqa: E402

import cgtrace  # noqa: E402  (after fake_torch)

OVERWRITTEN = "Error: accessing tensor output of CUDAGraphs that has been overwritten by a subsequent run."


def overwrite(*ts):
    """What the tree does to live outputs at a new generation (through
    torch._C, where the recorder watches it)."""
    for t in ts:
        sys.modules["torch"]._C._set_storage_access_error_msg(t, OVERWRITTEN)


def _touch(w):
    """The autograd engine's AccumulateGrad adding to w.grad, as C++ does
    it: no frame that loads the .grad (the stand-in's data_ptr would be
    one), the error its data pointer's."""
    raise RuntimeError(getattr(getattr(w, "grad"), "_overwritten_msg"))


class _Engine:
    def run_backward(self, t_outputs, touch):
        _touch(touch)


class Variable:
    _execution_engine = _Engine()


def _engine_run_backward(t_outputs, touch):
    """torch.autograd.graph's, which backward() and grad() call."""
    return Variable._execution_engine.run_backward(t_outputs, touch)


class _Node:
    """A C++ autograd node: the nodes it feeds, or an AccumulateGrad's
    variable."""

    def __init__(self, *nexts, variable=None):
        self.nexts, self.var = nexts, variable


class _GradFn:
    """A C++ autograd node's Python object as torch makes it: anew at each
    access (functionToPyObject), freed when let go, so that the next one
    made may take its id."""

    def __init__(self, node):
        self._node = node

    @property
    def next_functions(self):
        return tuple((_GradFn(n), 0) for n in self._node.nexts)

    @property
    def variable(self):
        if self._node.var is None:
            raise AttributeError("variable")
        return self._node.var


class _ReadsTest(TraceFileTest):
    """A trace of foo's calls on a fresh manager, and its reads."""

    def setUp(self):
        super().setUp()
        fake.new_manager()

    def reads(self):
        """[(name, error)] of the trace's reads, and the calls' outputs."""
        _, recs = self.records()
        reads = [(r["name"], recs[i + 1]["error"]) for i, r in enumerate(recs) if r["op"] == "read"]
        return reads, [r["out"][0] for r in recs if r["op"] == "call"]


@unittest.skipIf(sys.version_info < (3, 12), "sys.monitoring is Python 3.12's")
class RaisedTest(_ReadsTest):
    trace_name = "r.cgt.jsonl"

    def test_eager_op_names_the_output_it_touched(self):
        """torch.stack of kept outputs: the first overwritten one in the
        list is the read, whatever the list's other outputs are; a dict's
        values are looked at too."""
        x = Tensor([4])
        with cgtrace.record(self.path):
            kept = [foo(x)[0] for _ in range(3)]
            overwrite(kept[1], kept[2])
            with self.assertRaisesRegex(RuntimeError, "overwritten"):
                stack(kept)
            by_step = {"a": kept[0], "b": kept[2]}
            with self.assertRaisesRegex(RuntimeError, "overwritten"):
                stack(list(by_step.values()))
        reads, outs = self.reads()
        self.assertEqual(reads, [(outs[1], OVERWRITTEN), (outs[2], OVERWRITTEN)])

    def test_autograd_engine_adding_to_an_overwritten_grad(self):
        """Gradient accumulation across a generation (pytorch#169545): the
        engine adds to a .grad an earlier backward handed out, in C++,
        with no frame that loads it. Recorded as a read of that output:
        of the .grads the loss reaches, the one PyTorch marked with the
        error's message, though the walk meets another first; an
        engine's error on no named output records nothing."""
        x = Tensor([4])
        with cgtrace.record(self.path):
            mark = sys.modules["torch"]._C._set_storage_access_error_msg  # (the recorder's, watching)
            g1, g2 = foo(x)[0], foo(x)[0]
            w1, w2 = Tensor([4]), Tensor([4])
            w1.grad, w2.grad = g1, g2
            loss = Tensor([1])
            # (a chain of nodes first, each object freed before the next is
            # made, as the loss's clones and sum make it in torch)
            loss.grad_fn = _GradFn(_Node(_Node(_Node(_Node(_Node(variable=w1)), _Node(variable=w2)))))
            mark(g1, OVERWRITTEN + " Stack trace: one")
            mark(g2, OVERWRITTEN + " Stack trace: two")
            with self.assertRaisesRegex(RuntimeError, "one"):
                _engine_run_backward((loss,), w1)
            other = Tensor([1])
            other.grad_fn = _GradFn(_Node(_Node(variable=Tensor([4]))))
            w3 = Tensor([4])
            w3.grad = Tensor([4])
            mark(w3.grad, OVERWRITTEN)
            with self.assertRaisesRegex(RuntimeError, "overwritten"):
                _engine_run_backward((other,), w3)
        reads, outs = self.reads()
        self.assertEqual(reads, [(outs[0], OVERWRITTEN)])

    def test_each_raise_recorded_once(self):
        """The same mistake twice in a loop: two reads (a new error each
        time, though it may take the freed one's place); a read method's
        error once, by its wrapper, not again as it unwinds."""
        x = Tensor([4])
        with cgtrace.record(self.path):
            y, = foo(x)
            overwrite(y)
            for _ in range(2):
                try:
                    stack([y])
                except RuntimeError:
                    pass
            with self.assertRaisesRegex(RuntimeError, "overwritten"):
                y.item()
        reads, outs = self.reads()
        self.assertEqual(reads, [(outs[0], OVERWRITTEN)] * 3)

    def test_other_errors_are_not_reads(self):
        """An error of another kind, the same text on no tree output, and
        the tree call's own error (the call's, test_recorder) are not
        reads."""
        x = Tensor([4])
        with cgtrace.record(self.path):
            y, = foo(x)
            with self.assertRaises(RuntimeError):
                raise RuntimeError("boom")
            plain = Tensor([4])
            with self.assertRaises(RuntimeError):
                raise RuntimeError(OVERWRITTEN + " " + str(plain.shape))
            fake.MGR.fail.add(0)
            with self.assertRaisesRegex(RuntimeError, "overwritten"):
                foo(x)
            del y
        _, recs = self.records()
        self.assertEqual([r for r in recs if r["op"] in ("read", "note")], [])
        self.assertEqual(sum(r["op"] == "expect" and r.get("error") is not None for r in recs), 1)

    def test_tool_id_held_while_recording_only(self):
        """The recorder takes a free sys.monitoring tool id at start and
        gives it back at stop; with none free it records on, and says
        so once."""
        mon = sys.monitoring
        free = [i for i in range(6) if mon.get_tool(i) is None]
        with cgtrace.record(self.path) as rec:
            tid = rec._raise_tool
            self.assertIn(tid, free)
            self.assertEqual(mon.get_tool(tid), "cgtrace")
        self.assertIsNone(mon.get_tool(tid))
        for i in free:
            mon.use_tool_id(i, "someone else")
        try:
            with cgtrace.record(self.path) as rec:
                self.assertIsNone(rec._raise_tool)
                y, = foo(Tensor([4]))
                overwrite(y)
                with self.assertRaises(RuntimeError):
                    stack([y])
        finally:
            for i in free:
                mon.free_tool_id(i)
        _, recs = self.records()
        self.assertEqual([r["text"] for r in recs if r["op"] == "note"],
                         ["cgtrace: no sys.monitoring tool id free: an overwritten output's error raised by an "
                          "eager op is not recorded"])
        self.assertEqual([r for r in recs if r["op"] == "read"], [])


    def test_watch_failing_is_noted_and_recording_goes_on(self):
        """A failure to set the watch up is the recorder's: noted once, the
        tool id given back, the rest recorded as ever."""
        mon = sys.monitoring
        free = [i for i in range(6) if mon.get_tool(i) is None]
        real = mon.register_callback

        def broken(tid, event, fn):
            if fn is not None:
                raise ValueError("no callbacks today")
            return real(tid, event, fn)

        mon.register_callback = broken
        try:
            with cgtrace.record(self.path) as rec:
                self.assertIsNone(rec._raise_tool)
                y, = foo(Tensor([4]))
                y.item()
        finally:
            mon.register_callback = real
        self.assertEqual([i for i in range(6) if mon.get_tool(i) is None], free)
        _, recs = self.records()
        self.assertEqual([r["text"] for r in recs if r["op"] == "note"],
                         ["cgtrace: an overwritten output's error raised by an eager op is not recorded: "
                          "ValueError: no callbacks today"])
        self.assertEqual([r["op"] for r in recs if r["op"] in ("call", "read")], ["call", "read"])

    def test_events_on_only_while_an_overwritten_output_lives(self):
        """RAISE is reported only while an output the tree deallocated
        lives (a loop that lets its outputs go pays nothing for it); a
        torch without _set_storage_access_error_msg: all the time."""
        mon = sys.monitoring
        with cgtrace.record(self.path) as rec:
            tid = rec._raise_tool
            a, = foo(Tensor([4]))
            b, = foo(Tensor([4]))
            self.assertEqual(mon.get_events(tid), 0)
            overwrite(a, b)
            self.assertEqual(mon.get_events(tid), mon.events.RAISE)
            del a
            self.assertEqual(mon.get_events(tid), mon.events.RAISE)
            del b
            self.assertEqual(mon.get_events(tid), 0)
            c, = foo(Tensor([4]))
            overwrite(c)
        self.assertIsNone(mon.get_tool(tid))
        C = sys.modules["torch"]._C
        saved = C._set_storage_access_error_msg
        del C._set_storage_access_error_msg
        try:
            with cgtrace.record(self.path) as rec:
                self.assertEqual(mon.get_events(rec._raise_tool), mon.events.RAISE)
                y, = foo(Tensor([4]))
                y.overwritten = True
                with self.assertRaises(RuntimeError):
                    stack([y])
            self.assertFalse(hasattr(C, "_set_storage_access_error_msg"))
        finally:
            C._set_storage_access_error_msg = saved
        reads, outs = self.reads()
        self.assertEqual(reads, [(outs[0], OVERWRITTEN)])


    def test_an_alias_of_a_dead_output(self):
        """losses.append(loss.detach()): the output dies, its alias keeps
        the storage, which the tree marks; the stack of the aliases is a
        read of the output's name over that storage. The events go off
        once the storage is gone (looked at from the next raise)."""
        mon = sys.monitoring
        with cgtrace.record(self.path) as rec:
            tid = rec._raise_tool
            y, = foo(Tensor([4]))
            alias = Tensor([4], storage=y._storage)
            del y
            sys.modules["torch"]._C._set_storage_data_ptr_access_error_msg(alias._storage._cdata, OVERWRITTEN)
            self.assertEqual(mon.get_events(tid), mon.events.RAISE)
            with self.assertRaisesRegex(RuntimeError, "overwritten"):
                stack([alias])
            del alias
            try:
                raise KeyError("any raise looks at the storages")
            except KeyError:
                pass
            self.assertEqual(mon.get_events(tid), 0)
        reads, outs = self.reads()
        self.assertEqual(reads, [(outs[0], OVERWRITTEN)])

    def test_loaded_values_read_attributes_from_dicts_only(self):
        """What the raising expression loads: its names and the
        attributes read off them (`self.keys`, from the object's own
        __dict__: the cache of a model that torch.cat raised on), never
        through a property."""
        import dis

        from cgtrace.raised import _loaded_values, _spanned

        class Cache:
            ran = False

            @property
            def computed(self):
                Cache.ran = True
                return "P"

        cache = Cache()
        cache.keys = "K"

        def f(cache, other):
            frame = sys._getframe()
            len([cache.keys, other, cache.computed])  # (the raising call's line)
            return frame

        frame = f(cache, "O")
        Cache.ran = False  # (f's own line ran it)
        line = f.__code__.co_firstlineno + 2
        call = [i for i in dis.get_instructions(f) if i.opname == "CALL" and i.positions.lineno == line][-1]
        values = _loaded_values(frame, _spanned(f.__code__, call.offset + 2))  # (an offset in its inline cache)
        self.assertEqual(values, [len, cache, "K", "O", cache, None])
        self.assertFalse(Cache.ran)


class OverwrittenInputTest(TraceFileTest):
    """On every Python: an overwritten output handed to a compiled call
    (the data pointer torch refuses) is named by its object, the call
    recorded with the error PyTorch raises, and the recording goes on.
    From 3.12 the error, unwinding out of the tree's _run through the
    frame that loaded the output, is not recorded again as a read."""
    trace_name = "r.cgt.jsonl"

    def setUp(self):
        super().setUp()
        fake.new_manager()

    def test_call_handed_an_overwritten_output(self):
        x = Tensor([4])
        with cgtrace.record(self.path) as rec:
            y, = foo(x)
            for _ in range(3):  # (the general path, then a function's memo)
                foo(y)
            overwrite(y)
            fake.MGR.fail.add(0)
            fake.MGR.fail_text = OVERWRITTEN
            try:
                with self.assertRaisesRegex(RuntimeError, "overwritten"):
                    foo(y)
            finally:
                del fake.MGR.fail_text
                fake.MGR.fail.clear()
            z, = foo(x)
            self.assertIsNone(rec.error)
        _, recs = self.records()
        calls = [r for r in recs if r["op"] == "call"]
        self.assertEqual(len(calls), 6)
        self.assertEqual(calls[4]["args"], [calls[0]["out"][0]])
        self.assertEqual([r for r in recs if r["op"] in ("read", "note")], [])
        self.assertEqual([r["error"] for r in recs if r["op"] == "expect" and r.get("error")], [OVERWRITTEN])


class ErrorTextTest(unittest.TestCase):
    def test_overwritten_error_without_torchs_stack_trace(self):
        """The expectation of an overwritten error stops before PyTorch's
        stack trace (the model's own line, which the trace does not hold
        and cgtviz writes as the call's src); other errors keep their
        first line."""
        from cgtrace.errors import _error_text
        e = RuntimeError(OVERWRITTEN + ' Stack trace: File "timm/models/vision_transformer.py", line 1309, in '
                         "forward. To prevent overwriting, clone the tensor outside of torch.compile()")
        self.assertEqual(_error_text(e), OVERWRITTEN)
        self.assertEqual(_error_text(RuntimeError("static input data pointer changed.\ninput name: x")),
                         "static input data pointer changed.")
        self.assertEqual(_error_text(RuntimeError("Stack trace: at the start")), "Stack trace: at the start")


if __name__ == "__main__":
    unittest.main()


class UncaughtTest(_ReadsTest):
    """The overwritten error the recorded code ends on, not caught by the
    program: recorded at the recording's exit from its traceback's frames
    on every Python (3.12's raise events record it first, and once)."""

    trace_name = "u.cgt.jsonl"

    def test_an_eager_op_the_program_ended_on(self):
        x = Tensor([4])
        with self.assertRaisesRegex(RuntimeError, "overwritten"):
            with cgtrace.record(self.path):
                kept = [foo(x)[0] for _ in range(3)]
                overwrite(kept[1])
                stack(kept)
        reads, outs = self.reads()
        self.assertEqual(reads, [(outs[1], OVERWRITTEN)])

    def test_the_autograd_engine_the_program_ended_in(self):
        x = Tensor([4])
        with self.assertRaisesRegex(RuntimeError, "overwritten"):
            with cgtrace.record(self.path):
                g = foo(x)[0]
                w = Tensor([4])
                w.grad = g
                loss = Tensor([1])
                loss.grad_fn = _GradFn(_Node(_Node(_Node(variable=w))))
                overwrite(g)
                _engine_run_backward((loss,), w)
        reads, outs = self.reads()
        self.assertEqual(reads, [(outs[0], OVERWRITTEN)])

    def test_other_errors_record_nothing(self):
        x = Tensor([4])
        with self.assertRaisesRegex(RuntimeError, "something else"):
            with cgtrace.record(self.path):
                kept = foo(x)[0]
                overwrite(kept)
                raise RuntimeError("something else")
        self.assertEqual(self.reads()[0], [])
