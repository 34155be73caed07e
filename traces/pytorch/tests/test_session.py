"""The torch-free session (cgtrace/session.py), which turns the tree's
events into records, driven with fake tensors (FakeTensor: what the
session asks of a tensor's Fact).

    python3 -m unittest discover traces/pytorch/tests
"""

import json
import os
import sys
import unittest
import weakref

# CGTRACE_TEST_INSTALLED=1 tests the installed package (tests/venv_check.sh)
# instead of the folder beside these tests.
if os.environ.get("CGTRACE_TEST_INSTALLED") != "1":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import cgtrace  # noqa: E402
from cgtrace import Fact, FnInfo, Session, Trace, check_body  # noqa: E402


class FakeTensor:
    """Stands for a torch tensor: an object with a storage identity and a
    liveness flag the test flips (what the tree's storage weakref reports)."""

    _next_storage = [1000]

    def __init__(self, shape, storage=None, offset=0, stride=None, values=None, device=0,
                 dtype="float32", storage_numel=None, base=None):
        if storage is None:
            FakeTensor._next_storage[0] += 1
            storage = FakeTensor._next_storage[0]
        self.shape = list(shape)
        self.storage = storage
        self.offset = offset
        self.stride = tuple(stride) if stride is not None else _contiguous(shape)
        self.values = values
        self.device = device
        self.dtype = dtype
        self.storage_numel = storage_numel
        self.base = base
        self.live = True

    def fact(self):
        ref = weakref.ref(self)

        def alive():
            t = ref()
            return t is not None and t.live

        def read():
            t = ref()
            return None if t is None else t.values

        base = self.base
        return Fact(self.shape, self.device, ref, self.storage, self.offset, self.stride, alive, read,
                    self.dtype, self.storage_numel, (lambda: base.fact()) if base is not None else None)

    # As torch: identity hash, elementwise == returning a tensor, and a
    # truth value only for one element, so the Session code never compares
    # or tests tensors without a test failing.
    __hash__ = object.__hash__

    def __eq__(self, other):
        return FakeTensor(self.shape, dtype="bool")

    def __ne__(self, other):
        return FakeTensor(self.shape, dtype="bool")

    def __bool__(self):
        if cgtrace.numel(self.shape) != 1:
            raise RuntimeError("Boolean value of Tensor with %s is ambiguous"
                               % ("no values" if cgtrace.numel(self.shape) == 0 else "more than one value"))
        return bool(self.values[0]) if self.values else False

    def view(self, shape):
        return FakeTensor(shape, storage=self.storage, stride=_contiguous(shape), dtype=self.dtype)

    def col(self, j):
        """self[:, j] of a 2-d tensor: a strided view at an offset."""
        return FakeTensor([self.shape[0]], storage=self.storage, offset=self.offset + j * self.stride[1],
                          stride=[self.stride[0]], dtype=self.dtype, base=self.base if self.base is not None else self)


def _contiguous(shape):
    stride, acc = [], 1
    for d in reversed(list(shape)):
        stride.append(acc)
        acc *= d
    return tuple(reversed(stride))


def ops(trace):
    return [r["op"] for r in trace.records]


def info(fid, base="foo", mode="inference", static=(), mutated=(), placeholders=()):
    return FnInfo((0, 0, fid), base, mode, static, mutated, placeholders)


class SessionTest(unittest.TestCase):
    def setUp(self):
        self.trace = Trace("t")
        self.s = Session(self.trace)

    def call(self, fi, inputs, action, outs, node=None, checkpoints=0, error=None, hints=None):
        ctx = self.s.begin_call(fi, [t.fact() if t is not None else None for t in inputs], hints)
        facts = None if error else [o.fact() for o in outs]
        self.s.end_call(ctx, [action] if action else [], node, checkpoints, facts, error)
        return ctx

    def test_seed_checkpoint_case(self):
        """foo/fee from the forum thread: new names per call, a del before
        the call after which the tensor died, steps in place."""
        foo, fee = info(0, "foo"), info(1, "fee")
        self.s.step()
        inp = FakeTensor([4])
        a, b = FakeTensor([4]), FakeTensor([4])
        self.call(foo, [inp], "warmup", [a, b])
        a.live = False  # del a
        c = FakeTensor([4])
        self.call(fee, [b], "warmup", [c])
        recs = self.trace.records
        self.assertEqual(ops(self.trace), ["step", "tensor", "call", "expect", "del", "call", "expect"])
        self.assertEqual(recs[1]["init"], "rand")
        self.assertEqual(recs[2], {"op": "call", "fn": "foo_0", "args": ["in"],
                                   "out": ["foo_0_c1_0", "foo_0_c1_1"]})
        self.assertEqual(recs[3], {"op": "expect", "action": "warmup", "checkpoints": 0})
        self.assertEqual(recs[4], {"op": "del", "names": ["foo_0_c1_0"]})
        self.assertEqual(recs[5]["args"], ["foo_0_c1_1"])
        self.assertEqual(list(self.trace.defs), ["foo_0", "fee_1"])
        self.assertEqual(self.trace.defs["foo_0"]["params"], ["x0"])
        self.assertEqual(self.trace.defs["foo_0"]["returns"], ["r0", "r1"])

    def test_node_expect_names_functions(self):
        foo, fee = info(0, "foo"), info(1, "fee")
        x = FakeTensor([4])
        self.call(foo, [x], "record", [FakeTensor([4])], node=((0, 0, 0), None))
        self.call(fee, [x], "replay", [FakeTensor([4])], node=((0, 0, 1), (0, 0, 0)), checkpoints=2)
        exps = [r for r in self.trace.records if r["op"] == "expect"]
        self.assertEqual(exps[0]["node"], {"fn": "foo_0", "parent_fn": None})
        self.assertEqual(exps[1], {"op": "expect", "action": "replay",
                                   "node": {"fn": "fee_1", "parent_fn": "foo_0"}, "checkpoints": 2})

    def test_no_action_is_eager(self):
        self.call(info(0), [FakeTensor([4])], None, [FakeTensor([4])])
        self.assertEqual(self.trace.records[-1]["action"], "eager")
        self.assertEqual(self.s.counts["eager"], 1)

    def test_small_tensor_values_and_static_param(self):
        w = FakeTensor([2, 2], values=[1.0, 2.0, 3.0, 4.0])
        x = FakeTensor([2, 2], values=[0.5, 0.5, 0.5, float("inf")])
        big = FakeTensor([65], values=[0.0] * 65)
        self.call(info(0, "Lin", static=[0]), [w, x, big], "warmup", [FakeTensor([2, 2])],
                  hints={0: "lin.weight"})
        recs = self.trace.records
        self.assertEqual(recs[0], {"op": "param", "name": "lin_weight", "shape": [2, 2],
                                   "init": "values", "values": [1.0, 2.0, 3.0, 4.0]})
        self.assertEqual(recs[1]["init"], "rand")  # inf is not writable
        self.assertEqual(recs[2]["init"], "rand")  # over 64 elements
        self.assertNotEqual(recs[1]["seed"], recs[2]["seed"])

    def test_same_tensor_reused_by_name(self):
        w = FakeTensor([4])
        fi = info(0, static=[0])
        self.call(fi, [w], "warmup", [FakeTensor([4])])
        self.call(fi, [w], "record", [FakeTensor([4])])
        self.assertEqual(ops(self.trace).count("param"), 1)

    def test_other_object_same_view_is_same_name(self):
        """autograd unpacks a saved tensor into a new object over the same
        storage: the trace keeps the name the forward gave it."""
        act = FakeTensor([4])
        fwd = info(0, "MLP", mode="forward")
        self.call(fwd, [FakeTensor([4])], "warmup", [FakeTensor([4]), act])
        unpacked = FakeTensor([4], storage=act.storage)
        bwd = info(1, "MLP_bwd", mode="backward", placeholders=["getitem", "tangents_1"])
        self.call(bwd, [unpacked, FakeTensor([4])], "warmup", [FakeTensor([4])])
        call = [r for r in self.trace.records if r["op"] == "call"][1]
        self.assertEqual(call["args"], ["MLP_0_c1_1", "grad"])
        self.assertEqual(self.trace.defs["MLP_bwd_1"]["mode"], "backward")
        self.assertEqual(self.trace.defs["MLP_bwd_1"]["params"], ["getitem", "tangents_1"])

    def test_unseen_backward_input_is_saved(self):
        bwd = info(3, "f_bwd", mode="backward", placeholders=["mm", "tangents_1"])
        self.call(bwd, [FakeTensor([4]), FakeTensor([4])], "warmup", [FakeTensor([4])])
        names = [r["name"] for r in self.trace.records if r["op"] == "tensor"]
        self.assertEqual(names, ["saved", "grad"])

    def test_reshaped_input_is_eager_view(self):
        fi = info(0)
        y = FakeTensor([2, 2])
        self.call(fi, [FakeTensor([4])], "warmup", [y])
        g = info(1, "g")
        self.call(g, [y.view([4])], "warmup", [FakeTensor([4])])
        recs = self.trace.records
        view = [r for r in recs if r["op"] == "eager"]
        self.assertEqual(view, [{"op": "eager", "out": "view", "k": "view", "a": "foo_0_c1_0", "shape": [4]}])

    def test_cached_output_object_retires_old_name(self):
        """A replay hands back the same cached tensor object: the older name
        is dropped, as the program's variable now holds the new result."""
        fi = info(0)
        x = FakeTensor([4])
        out = FakeTensor([4])
        self.call(fi, [x], "replay", [out])
        self.call(fi, [x], "replay", [out])
        self.assertEqual(ops(self.trace)[-1], "del")
        self.assertEqual(self.trace.records[-1]["names"], ["foo_0_c1_0"])
        self.assertIn("foo_0_c2_0", self.s.entries)

    def test_fresh_names_resume_and_skip_taken(self):
        """Fresh names are the first free base, base_1, ... as a scan from
        the start would give, also when another base took one of them."""
        got = [self.s._fresh("in") for _ in range(3)]
        self.assertEqual(got, ["in", "in_1", "in_2"])
        self.assertEqual(self.s._fresh("in_3"), "in_3")  # another base's name
        self.assertEqual(self.s._fresh("in"), "in_4")
        self.assertEqual(self.s._fresh("in_3"), "in_3_1")
        self.s.names_used.add("x_1")
        self.assertEqual([self.s._fresh("x") for _ in range(3)], ["x", "x_2", "x_3"])

    def test_used_names_answer_as_the_set_of_every_name_made(self):
        """names_used holds each base's number, not a str a name (a long
        run's new input a call grew it by one a call): after any
        sequence of _fresh's names, names added otherwise and outputs'
        names passed over, it answers `in` (in Python and as the C writer
        asks it) and lists exactly the names the set of every name made
        holds, for the names made and their neighbours: other numbers of
        their bases, a leading zero, _0, other digits, names of bases
        that are themselves numbered."""
        import random
        from cgtrace import fastpath
        from cgtrace.names import UsedNames, _Names
        checks, _ = fastpath.load()
        c_has = getattr(checks, "used_contains", None)
        c_fresh = getattr(checks, "used_contains_fresh", None)
        rng = random.Random(5)
        bases = ["in", "in_1", "in_1_2", "a_0", "a_01", "x", "x_1", "x_10", "p_c3", "p_c3_1", "p_c3_2",
                 "q", "q_\u0663", "_", "_1", "b_"]
        outputs = {"p_c3_1", "p_c3_2_1", "x_c1_0", "q_c2_3"}
        for _ in range(30):
            ref, ref_next = set(), {}
            stub = type("S", (), {})()
            stub._fresh_next = {}
            stub.names_used = UsedNames(stub._fresh_next)
            stub._output_name_made = outputs.__contains__
            for _ in range(rng.randrange(1, 200)):
                if rng.random() < 0.05:
                    name = rng.choice(bases) + "_%d" % rng.randrange(0, 12)
                    ref.add(name)
                    stub.names_used.add(name)
                    continue
                base = rng.choice(bases)
                # (the set's _fresh: every name kept)
                n = ref_next.get(base, 0)
                name = "%s_%d" % (base, n) if n else base
                while name in ref or ("_c" in name and name in outputs):
                    n += 1
                    name = "%s_%d" % (base, n)
                ref.add(name)
                ref_next[base] = n + 1
                self.assertEqual(_Names._fresh(stub, base), name)
            used = stub.names_used
            self.assertEqual(set(used), ref)
            probes = set(ref) | set(bases) | outputs | {"in_01", "in_0", "x_", "nothing", "q_3"}
            probes |= {"%s_%d" % (b, k) for b in bases for k in range(0, 14)}
            for name in probes:
                self.assertEqual(name in used, name in ref, name)
                if c_has is not None:
                    self.assertEqual(c_has(used, name), name in ref, name)
            # (the writer's test of the names it makes of a base, at its
            # counter: at or past the base's next number)
            if c_fresh is not None:
                for base in bases:
                    first = max(used.next.get(base, 0), 1)
                    for k in range(first, first + 4):
                        name = "%s_%d" % (base, k)
                        self.assertEqual(c_fresh(used, base, k), name in ref, name)
        self.assertGreater(len(stub.names_used.next), 3)

    def test_output_names_are_not_kept_but_never_given_again(self):
        """A call's output names (fn_cN_i) are unique by their making and
        are not kept in names_used (a long run makes hundreds a step); a
        name _fresh makes still never repeats one a call gave, and an
        output name a fresh name took is renamed, as when all were kept."""
        foo = info(0, "foo")
        inp = FakeTensor([4])
        for _ in range(3):
            self.call(foo, [inp], "warmup", [FakeTensor([4]), FakeTensor([4])])
        self.assertEqual(self.trace.records[-2]["out"], ["foo_0_c3_0", "foo_0_c3_1"])
        self.assertFalse([n for n in self.s.names_used if "_c" in n])
        # base "foo_0_c2": itself is free, then foo_0_c2_1 is call 2's
        # second output, foo_0_c2_2 no output (two a call).
        self.assertEqual([self.s._fresh("foo_0_c2") for _ in range(2)], ["foo_0_c2", "foo_0_c2_2"])
        self.assertEqual(self.s._fresh("foo_0_c3"), "foo_0_c3")  # (free as a base)
        self.assertEqual(self.s._fresh("foo_0_c3"), "foo_0_c3_2")  # (foo_0_c3_1: call 3's)
        self.assertEqual(self.s._fresh("foo_0_c4"), "foo_0_c4")
        self.assertEqual(self.s._fresh("foo_0_c4"), "foo_0_c4_1")  # (call 4 not made yet: free)
        # Call 4's second output's name is taken by that fresh name: renamed.
        self.call(foo, [inp], "warmup", [FakeTensor([4]), FakeTensor([4])])
        self.assertEqual(self.trace.records[-2]["out"], ["foo_0_c4_0", "foo_0_c4_1_1"])
        # Not an output's name: leading zeros, another function, no such call.
        for name in ("foo_0_c03_1", "foo_0_c3_01", "bar_0_c1_0", "foo_0_c9_0", "foo_0_c1_2", "foo_0_c1"):
            self.assertFalse(self.s._output_name_made(name), name)
        self.assertTrue(self.s._output_name_made("foo_0_c1_1"))

    def test_steady_expects_share_one_record(self):
        """Equal expects of a steady replay are one record object; a
        different one (another checkpoint count, an error) is its own."""
        fi = info(0)
        x = FakeTensor([4])
        for ck in (0, 0, 1, 0):
            self.call(fi, [x], "replay", [FakeTensor([4])], node=((0, 0, 0), None), checkpoints=ck)
        self.call(fi, [x], "replay", None, node=((0, 0, 0), None), error="boom")
        exps = [r for r in self.trace.records if r["op"] == "expect"]
        self.assertIs(exps[0], exps[1])
        self.assertIs(exps[0], exps[3])
        self.assertEqual(exps[2]["checkpoints"], 1)
        self.assertEqual(exps[4]["error"], "boom")
        self.assertEqual([e["action"] for e in exps], ["replay"] * 5)
        self.assertEqual(exps[0], {"op": "expect", "action": "replay",
                                   "node": {"fn": "foo_0", "parent_fn": None}, "checkpoints": 0})

    def test_output_that_is_a_param_is_dropped(self):
        """A forward returns its parameters for autograd to save: the output
        name is dropped at once and the param keeps its name for later calls."""
        w = FakeTensor([4])
        fi = info(0, "MLP", mode="forward", static=[0])
        for _ in range(2):
            self.call(fi, [w, FakeTensor([4])], "warmup", [FakeTensor([4]), w])
        calls = [r for r in self.trace.records if r["op"] == "call"]
        self.assertEqual(calls[1]["args"][0], "param")
        dels = [r["names"] for r in self.trace.records if r["op"] == "del"]
        self.assertIn(["MLP_0_c1_1"], dels)
        self.assertNotIn("MLP_0_c2_1", self.s.entries)
        self.assertEqual(self.trace.defs["MLP_0"]["returns"], ["r0", "x0"])

    def test_alias_of_input_in_def(self):
        fi = info(0)
        x = FakeTensor([2, 3])
        self.call(fi, [x], "warmup", [x, x.view([6])])
        d = self.trace.defs["foo_0"]
        self.assertEqual(d["returns"], ["x0", "r1"])
        self.assertEqual(d["body"], [{"out": "r1", "k": "view", "a": "x0", "shape": [6]}, {"out": "launch", "k": "empty", "shape": [0]}])

    def test_dead_input_is_not_aliased(self):
        """An input that died during the call may share its old storage id
        with a new output; the def must not call it an alias."""
        fi = info(0, mode="backward", placeholders=["mm", "tangents_1"])
        saved = FakeTensor([4])
        ctx = self.s.begin_call(fi, [saved.fact(), FakeTensor([4]).fact()])
        saved.live = False
        out = FakeTensor([4], storage=saved.storage)
        self.s.end_call(ctx, ["warmup"], None, 0, [out.fact()])
        self.assertEqual(self.trace.defs["foo_0"]["body"][0]["k"], "add")

    def test_mutated_input(self):
        fi = info(0, mutated=[1])
        self.call(fi, [FakeTensor([4]), FakeTensor([3])], None, [FakeTensor([4])])
        self.assertEqual(self.trace.defs["foo_0"]["body"][0], {"out": "x1", "k": "add", "a": "x1", "b": 1})

    def test_non_tensor_inputs_left_out(self):
        fi = info(0, placeholders=["s0", "arg1_1"])
        x = FakeTensor([3, 4])
        ctx = self.s.begin_call(fi, [None, x.fact()])
        self.s.end_call(ctx, ["warmup"], None, 0, [FakeTensor([3, 4]).fact()])
        self.assertEqual(self.trace.defs["foo_0"]["params"], ["arg1_1"])
        self.assertEqual(self.trace.records[-2]["args"], ["in"])

    def test_error_call(self):
        fi = info(0)
        self.call(fi, [FakeTensor([4])], "replay", [], error="accessing tensor output of CUDAGraphs")
        recs = self.trace.records
        self.assertNotIn("out", recs[-2])
        self.assertEqual(recs[-1]["error"], "accessing tensor output of CUDAGraphs")
        self.s.finish()
        self.assertEqual(self.trace.defs["foo_0"]["returns"], [])

    def test_finish_flushes_deaths_and_lines_parse(self):
        fi = info(0)
        x = FakeTensor([4])
        self.call(fi, [x], "warmup", [FakeTensor([4])])  # output dies at once
        x.live = False
        self.s.finish()
        self.assertEqual(self.trace.records[-1], {"op": "del", "names": ["in", "foo_0_c1_0"]})
        for line in self.trace.lines():
            json.loads(line)

    def test_device_recorded(self):
        fi = FnInfo((0, 1, 0), "foo", "inference", (), (), (), 1)
        x = FakeTensor([4], device=1)
        ctx = self.s.begin_call(fi, [x.fact()])
        self.s.end_call(ctx, ["warmup"], None, 0, [FakeTensor([4], device=1).fact()], None, 1)
        self.assertEqual(self.trace.records[0]["device"], 1)
        self.assertEqual(self.trace.records[-1]["device"], 1)
        self.assertEqual(self.trace.header()["devices"], 2)


class OutputsTest(unittest.TestCase):
    """Outputs by position, inputs dying inside a call (issue 13 items 4, 8)."""

    def setUp(self):
        self.trace = Trace("t")
        self.s = Session(self.trace)

    def test_input_dying_inside_call_deleted_after_its_expect(self):
        fi = info(0, mode="backward", placeholders=["mm", "tangents_1"])
        saved, grad = FakeTensor([4]), FakeTensor([4])
        ctx = self.s.begin_call(fi, [saved.fact(), grad.fact()])
        saved.live = False  # autograd freed it inside the backward
        out = FakeTensor([4])
        self.s.end_call(ctx, ["warmup"], None, 0, [out.fact()])
        self.assertEqual(ops(self.trace), ["tensor", "tensor", "call", "expect", "del"])
        self.assertEqual(self.trace.records[-1]["names"], ["saved"])
        self.assertIn("foo_0_c1_0", self.s.entries)

    def test_non_tensor_outputs_keep_positions(self):
        """A def's returns are the tensor positions of its first call; a
        later call with a SymInt where a tensor was binds `_` there."""
        fi = info(0)
        x = FakeTensor([2])
        a, b = FakeTensor([2]), FakeTensor([2])
        ctx = self.s.begin_call(fi, [x.fact()])
        self.s.end_call(ctx, ["warmup"], None, 0, [a.fact(), None, b.fact()])
        c = FakeTensor([2])
        ctx = self.s.begin_call(fi, [x.fact()])
        self.s.end_call(ctx, ["record"], None, 0, [None, None, c.fact(), FakeTensor([1]).fact()])
        calls = [r for r in self.trace.records if r["op"] == "call"]
        self.assertEqual(calls[0]["out"], ["foo_0_c1_0", "foo_0_c1_1"])
        self.assertEqual(calls[1]["out"], ["_", "foo_0_c2_1"])
        self.assertEqual(len(self.trace.defs["foo_0"]["returns"]), 2)
        notes = [r["text"] for r in self.trace.records if r["op"] == "note"]
        self.assertEqual(len(notes), 1)
        self.assertIn("positions [3]", notes[0])


class DTypeViewTest(unittest.TestCase):
    """dtypes, shapes past 4 dimensions and strided views (issue 13 item 2)."""

    def setUp(self):
        self.trace = Trace("t")
        self.s = Session(self.trace)

    def call(self, fi, inputs, outs, action="warmup"):
        ctx = self.s.begin_call(fi, [t.fact() for t in inputs])
        self.s.end_call(ctx, [action], None, 0, [o.fact() for o in outs])

    def test_dtypes_written_and_values_only_for_float32(self):
        tok = FakeTensor([4], dtype="int64", values=[1, 2, 3, 4])
        h = FakeTensor([4], dtype="bfloat16", values=[0.5] * 4)
        m = FakeTensor([4], dtype="bool")
        self.call(info(0), [tok, h, m], [FakeTensor([4], dtype="bfloat16"), FakeTensor([2], dtype="int64"),
                                         FakeTensor([4], dtype="bool")])
        recs = {r["name"]: r for r in self.trace.records if r["op"] == "tensor"}
        self.assertEqual([r.get("dtype") for r in recs.values()], ["int64", "bfloat16", "bool"])
        self.assertTrue(all(r["init"] == "rand" for r in recs.values()))
        body = self.trace.defs["foo_0"]["body"]
        # bf16 output from the bf16 input (no dtype: a's), int64 [2] filled, bool from bool
        self.assertEqual(body, [{"out": "r0", "k": "add", "a": "x1", "b": 1},
                                {"out": "r1", "k": "fill", "shape": [2], "value": 2, "dtype": "int64"},
                                {"out": "r2", "k": "add", "a": "x2", "b": 3}])
        for line in self.trace.lines():
            json.loads(line)

    def test_output_dtype_differs_from_input(self):
        x = FakeTensor([4], dtype="float16")
        self.call(info(0), [x], [FakeTensor([4], dtype="float32")])
        self.assertEqual(self.trace.defs["foo_0"]["body"],
                         [{"out": "r0", "k": "add", "a": "x0", "b": 1, "dtype": "float32"}])

    def test_five_dims_kept(self):
        x = FakeTensor([2, 3, 4, 5, 6])
        self.call(info(0), [x], [FakeTensor([2, 3, 4, 5, 6])])
        self.assertEqual(self.trace.records[0]["shape"], [2, 3, 4, 5, 6])
        self.assertEqual(self.trace.defs["foo_0"]["body"][0]["a"], "x0")

    def test_slice_of_named_tensor_is_strided_view(self):
        y = FakeTensor([3, 4])
        self.call(info(0), [FakeTensor([3, 4])], [y])
        last = y.col(3)  # y[:, -1]
        self.call(info(1, "g"), [last], [FakeTensor([3])])
        view = [r for r in self.trace.records if r["op"] == "eager"]
        self.assertEqual(view, [{"op": "eager", "out": "view", "k": "view", "a": "foo_0_c1_0",
                                 "shape": [3], "offset": 3, "strides": [4]}])

    def test_prefix_of_named_tensor_says_its_strides(self):
        """y[:2] of a [4, 3]: contiguous at offset 0 but a part, so the view
        says its strides (a plain view would claim all 12 elements)."""
        y = FakeTensor([4, 3])
        self.call(info(0), [FakeTensor([4, 3])], [y])
        head = FakeTensor([2, 3], storage=y.storage)
        self.call(info(1, "g"), [head], [FakeTensor([2, 3])])
        view = [r for r in self.trace.records if r["op"] == "eager"][0]
        self.assertEqual(view, {"op": "eager", "out": "view", "k": "view", "a": "foo_0_c1_0",
                                "shape": [2, 3], "strides": [3, 1]})

    def test_slice_of_unnamed_base_names_the_base(self):
        """x[:, 1] of a tensor no call saw: the base is named first, so the
        slice keeps it alive as PyTorch's view does."""
        base = FakeTensor([2, 5], storage_numel=10)
        sl = base.col(1)
        self.call(info(0), [sl], [FakeTensor([2])])
        recs = self.trace.records
        self.assertEqual([r["op"] for r in recs[:2]], ["tensor", "eager"])
        self.assertEqual((recs[0]["name"], recs[0]["shape"]), ("base", [2, 5]))
        self.assertEqual(recs[1], {"op": "eager", "out": "view", "k": "view", "a": "base",
                                   "shape": [2], "offset": 1, "strides": [5]})
        self.assertEqual(recs[2]["args"], ["view"])

    def test_strided_base_is_not_named_the_storage_is(self):
        """A base the format cannot hold as a plain tensor (a transpose's
        root, another dtype) would be a second allocation: the storage is
        named instead, once."""
        base = FakeTensor([4, 2], stride=[1, 4], storage_numel=8)
        sl = FakeTensor([4], storage=base.storage, offset=4, stride=[1], storage_numel=8, base=base)
        self.call(info(0), [sl], [FakeTensor([4])])
        made = [r for r in self.trace.records if r["op"] == "tensor"]
        self.assertEqual([(r["name"], r["shape"]) for r in made], [("storage", [8])])

    def test_slice_without_base_names_the_storage(self):
        sl = FakeTensor([2], offset=4, stride=[3], storage_numel=8)
        self.call(info(0), [sl], [FakeTensor([2])])
        recs = self.trace.records
        self.assertEqual((recs[0]["name"], recs[0]["shape"]), ("storage", [8]))
        self.assertEqual(recs[1]["offset"], 4)
        sl.live = False
        self.s.flush_deaths()
        # the storage's name lives while the storage does (the fake's: the view's)
        self.assertEqual(self.trace.records[-1]["op"], "del")

    def test_slice_output_of_input_is_view_in_def(self):
        x = FakeTensor([3, 4])
        self.call(info(0), [x], [x.col(1), x.view([12])])
        body = self.trace.defs["foo_0"]["body"]
        self.assertEqual(body, [{"out": "r0", "k": "view", "a": "x0", "shape": [3], "offset": 1, "strides": [4]},
                                {"out": "r1", "k": "view", "a": "x0", "shape": [12]},
                                {"out": "launch", "k": "empty", "shape": [0]}])
        check_body(["x0"], {"x0": [3, 4]}, body, ["r0", "r1"])

    def test_chunk_outputs_alias_first_output(self):
        """torch.chunk: the second half is a view at an offset of the storage
        the first half starts."""
        st = 777001
        a = FakeTensor([2, 3], storage=st)
        b = FakeTensor([2, 3], storage=st, offset=6)
        self.call(info(0), [FakeTensor([5])], [a, b])
        body = self.trace.defs["foo_0"]["body"]
        self.assertEqual(body[1], {"out": "r1", "k": "view", "a": "r0", "shape": [2, 3], "offset": 6,
                                   "strides": [3, 1]})

    def test_parts_of_a_graph_made_buffer(self):
        """x[0], x[1] of a buffer the graph made (the recording's own copy of
        its input, PyTorch's test_checkpoint_shared_output_storage_deallocation):
        the whole buffer first, both outputs its views, so the second fits."""
        st = 777002
        a = FakeTensor([2], storage=st, storage_numel=4)
        b = FakeTensor([2], storage=st, offset=2, storage_numel=4)
        self.call(info(0), [FakeTensor([2, 2])], [a, b])
        body = self.trace.defs["foo_0"]["body"]
        self.assertEqual(body, [{"out": "buf0", "k": "fill", "shape": [4], "value": 1},
                                {"out": "r0", "k": "view", "a": "buf0", "shape": [2], "strides": [1]},
                                {"out": "r1", "k": "view", "a": "r0", "shape": [2], "offset": 2, "strides": [1]}])
        check_body(["x0"], {"x0": [2, 2]}, body, ["r0", "r1"])

    def test_view_helpers(self):
        self.assertTrue(cgtrace.is_contiguous([3, 1, 4], [4, 99, 1]))
        self.assertFalse(cgtrace.is_contiguous([3, 4], [1, 3]))
        self.assertEqual(cgtrace.extent([3], 3, [4]), 12)
        self.assertEqual(cgtrace.extent([0, 4], 5, [4, 1]), 5)
        self.assertEqual(cgtrace.view_fields([2, 3], 0, [3, 1], whole=True), {})
        self.assertEqual(cgtrace.view_fields([2, 3], 0, [3, 1]), {"strides": [3, 1]})  # a part: x[:2]
        self.assertEqual(cgtrace.view_fields([3, 2], 0, [1, 3]), {"strides": [1, 3]})
        self.assertEqual(cgtrace.dtype_name("torch.bfloat16"), "bfloat16")
        self.assertEqual(cgtrace.dtype_name("torch.float8_e4m3fn", 1), "uint8")
        self.assertIsNone(cgtrace.dtype_name("torch.complex128", 16))


if __name__ == "__main__":
    unittest.main()
