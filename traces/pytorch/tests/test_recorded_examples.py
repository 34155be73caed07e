"""Checks the traces recorded on the GPU (examples/recorded) against the
format's rules as cgtrace understands them: every record re-encodes to the
same line, names are bound before use and not used after their `del`,
every call matches its def in arity and shapes, and every def body is
valid. The Go checker (`cgtviz check`) is the authority; this keeps the
recorder's own view honest where Go is not at hand."""

import glob
import json
import os
import re
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
# CGTRACE_TEST_INSTALLED=1 tests the installed package (tests/venv_check.sh)
# instead of the file beside these tests.
if os.environ.get("CGTRACE_TEST_INSTALLED") != "1":
    sys.path.insert(0, os.path.dirname(HERE))

import cgtrace  # noqa: E402

RECORDED = os.path.join(HERE, "..", "..", "..", "examples", "recorded")


def check_trace(path):
    """Returns a list of problems, each 'line N: message'."""
    problems = []
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    header = json.loads(lines[0])
    if header.get("cgtviz") != 1 or header.get("meta", {}).get("source") != "cgtrace":
        problems.append("line 1: not a cgtrace header: %r" % lines[0][:80])
    defs, shapes, live = {}, {}, set()
    for n, line in enumerate(lines[1:], start=2):
        rec = json.loads(line)
        where = "line %d" % n
        try:
            if cgtrace.encode_record(rec) != line:
                problems.append("%s: not in the recorder's encoding" % where)
        except ValueError as e:
            problems.append("%s: %s" % (where, e))
            continue
        op = rec["op"]
        if op == "def":
            defs[rec["fn"]] = rec
        elif op in ("tensor", "param"):
            if rec["name"] in live:
                problems.append("%s: %s bound twice" % (where, rec["name"]))
            if rec["init"] == "values" and len(rec["values"]) != cgtrace.numel(rec["shape"]):
                problems.append("%s: %d values for shape %s" % (where, len(rec["values"]), rec["shape"]))
            live.add(rec["name"])
            shapes[rec["name"]] = rec["shape"]
        elif op == "eager":
            if "a" in rec and rec["a"] not in live:
                problems.append("%s: eager reads dead %s" % (where, rec["a"]))
                continue
            if rec["k"] == "view" and ("offset" in rec or "strides" in rec) and "a" in rec:
                strides = rec.get("strides") or list(cgtrace.contiguous_strides(rec["shape"]))
                reach = cgtrace.extent(rec["shape"], rec.get("offset", 0), strides)
                if reach > cgtrace.numel(shapes[rec["a"]]):
                    problems.append("%s: view reaches element %d of %s's %d" % (
                        where, reach, rec["a"], cgtrace.numel(shapes[rec["a"]])))
            live.add(rec["out"])
            shapes[rec["out"]] = rec.get("shape", shapes.get(rec.get("a")))
        elif op == "saved":
            # (docs/trace-format.md: the tensor a dead name last stood for,
            # bound again for the backward that autograd hands it to)
            of = rec["of"]
            if of in live or of not in shapes:
                problems.append("%s: saved of %s, which no del unbound" % (where, of))
            if rec["name"] in live:
                problems.append("%s: %s bound twice" % (where, rec["name"]))
            live.add(rec["name"])
            shapes[rec["name"]] = shapes.get(of)
        elif op == "read":
            if rec["name"] not in live:
                problems.append("%s: read of unbound %s" % (where, rec["name"]))
        elif op == "del":
            for name in rec["names"]:
                if name not in live:
                    problems.append("%s: del of unbound %s" % (where, name))
                live.discard(name)
        elif op == "call":
            d = defs.get(rec["fn"])
            if d is None:
                problems.append("%s: call of undefined %s" % (where, rec["fn"]))
                continue
            dead = [a for a in rec["args"] if a not in live]
            if dead:
                problems.append("%s: call reads unbound %s" % (where, dead))
                continue
            if len(rec["args"]) != len(d["params"]):
                problems.append("%s: %d args for %d params" % (where, len(rec["args"]), len(d["params"])))
                continue
            try:
                env = cgtrace.check_body(d["params"], dict(zip(d["params"], (shapes[a] for a in rec["args"]))),
                                         d["body"], d["returns"])
            except ValueError as e:
                problems.append("%s: %s does not fit its args: %s" % (where, rec["fn"], e))
                continue
            outs = rec.get("out", [])
            if outs and len(outs) != len(d["returns"]):
                problems.append("%s: %d outs for %d returns" % (where, len(outs), len(d["returns"])))
            for name, r in zip(outs, d["returns"]):
                if name == "_":  # binds nothing
                    continue
                if name in live:
                    problems.append("%s: %s bound twice" % (where, name))
                live.add(name)
                shapes[name] = env[r]
    return problems


class RecordedExamplesTest(unittest.TestCase):
    def test_recorded_traces_are_consistent(self):
        paths = sorted(glob.glob(os.path.join(RECORDED, "*.cgt.jsonl")))
        self.assertGreaterEqual(len(paths), 4, "expected the recorded examples in %s" % RECORDED)
        for p in paths:
            with self.subTest(trace=os.path.basename(p)):
                self.assertEqual(check_trace(p), [])

    def test_checker_catches_use_after_del(self):
        import tempfile
        t = cgtrace.Trace("bad", meta={"source": "cgtrace"})
        t.set_def(cgtrace.synth_def("f_0", "inference", ["x"], [[4]], [cgtrace.OutSpec([4])]))
        t.add({"op": "tensor", "name": "a", "shape": [4], "init": "zeros"})
        t.add({"op": "del", "names": ["a"]})
        t.add({"op": "call", "fn": "f_0", "args": ["a"]})
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "bad.cgt.jsonl")
            t.write(p)
            self.assertEqual(check_trace(p), ["line 5: call reads unbound ['a']"])

    def test_checker_follows_saved(self):
        """`saved` binds a name again to what a dead name stood for: a
        backward's input; of a live name, or one never bound, it is a
        problem."""
        import tempfile
        t = cgtrace.Trace("saved", meta={"source": "cgtrace"})
        t.set_def(cgtrace.synth_def("f_0", "inference", ["x"], [[4]], [cgtrace.OutSpec([4])]))
        t.add({"op": "tensor", "name": "a", "shape": [4], "init": "zeros"})
        t.add({"op": "call", "fn": "f_0", "args": ["a"], "out": ["act"]})
        t.add({"op": "del", "names": ["act"]})
        t.add({"op": "saved", "name": "s", "of": "act"})
        t.add({"op": "call", "fn": "f_0", "args": ["s"], "out": ["b"]})
        t.add({"op": "saved", "name": "s2", "of": "b"})
        t.add({"op": "saved", "name": "s3", "of": "nothing"})
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "saved.cgt.jsonl")
            t.write(p)
            self.assertEqual(check_trace(p), ["line 8: saved of b, which no del unbound",
                                              "line 9: saved of nothing, which no del unbound"])

    def test_checker_follows_new_records(self):
        """Views with offsets, `_` outputs, reads and config records as the
        recorder now writes them pass; a view past its base does not."""
        import tempfile
        t = cgtrace.Trace("new", meta={"source": "cgtrace"}, config={"warmup_runs": 0})
        t.set_def(cgtrace.synth_def("f_0", "inference", ["x"], [[4]], [cgtrace.OutSpec([4]), cgtrace.OutSpec([2])]))
        t.add({"op": "config", "rerecord_limit": 3})
        t.add({"op": "tensor", "name": "a", "shape": [3, 4], "dtype": "int64", "init": "rand", "seed": 1})
        t.add({"op": "eager", "out": "v", "k": "view", "a": "a", "shape": [4], "offset": 8, "strides": [1]})
        t.add({"op": "call", "fn": "f_0", "args": ["v"], "out": ["_", "o"], "invocation": 3})
        t.add({"op": "read", "name": "o"})
        t.add({"op": "expect", "error": None})
        t.add({"op": "eager", "out": "w", "k": "view", "a": "a", "shape": [4], "offset": 9, "strides": [1]})
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "new.cgt.jsonl")
            t.write(p)
            self.assertEqual(check_trace(p), ["line 9: view reaches element 13 of a's 12"])

    def test_host_reads_recorded(self):
        """Every host read of a tree output the program makes is a `read`,
        those run from compiled code between two graphs too: graph_break
        reads the branch's condition and one element each iteration,
        host_reads an item() and a print() inside forward and a tolist()
        outside. (The iteration count is the program's own.)"""
        programs = os.path.join(HERE, "..", "programs")
        for trace, program, per_iter in [("graph_break", "graph_break.py", 2),
                                         ("graph_break_mark_step", "graph_break.py", 2),
                                         ("host_reads", "host_reads.py", 3)]:
            with self.subTest(trace=trace):
                with open(os.path.join(programs, program)) as fh:
                    iters = int(re.search(r"^ITERS, D = (\d+), \d+$", fh.read(), re.M).group(1))
                with open(os.path.join(RECORDED, trace + ".cgt.jsonl")) as fh:
                    recs = [json.loads(line) for line in fh.read().splitlines()[1:]]
                self.assertEqual(sum(r["op"] == "read" for r in recs), per_iter * iters)

    def test_decisions_recorded(self):
        """What PyTorch decided in the seed examples, as the forum thread
        says it should: a checkpoint when `a` stays live, a child when
        outputs are live, a new root when they are dead."""
        s = cgtrace.summarise_file(os.path.join(RECORDED, "seed_checkpoint.cgt.jsonl"))["counts"]
        self.assertEqual((s["warmup"], s["record"], s["replay"], s["checkpoints"]), (2, 3, 3, 1))
        with open(os.path.join(RECORDED, "seed_liveness.cgt.jsonl")) as fh:
            nodes = [r["node"] for r in map(json.loads, fh.read().splitlines()[1:])
                     if r.get("op") == "expect" and "node" in r]
        self.assertIn({"fn": "fee_1", "parent_fn": None}, nodes)
        self.assertIn({"fn": "fee_3", "parent_fn": "foo_2"}, nodes)


if __name__ == "__main__":
    unittest.main()
