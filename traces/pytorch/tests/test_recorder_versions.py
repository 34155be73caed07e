"""The recorder on a torch it was not made for (issue 33 item 7): it never
breaks the program. On a torch shaped as 2.14's cudagraph_trees.py (the
same entry points, and what 2.12-2.14 added) it records as on 2.11, says
so once on stderr, and the trace carries the version and what cgtviz does
not model; on one whose entry points are missing or take other
arguments it patches nothing, the program runs as unrecorded, and the
trace says why."""

import io
import json
import os
import sys
import unittest
from contextlib import redirect_stderr

import fake_torch as fake  # (puts the recorder on sys.path)

import cgtrace  # noqa: E402
from cgtrace import compat  # noqa: E402


def program(mgr_cls, cgt, n=8):
    """A loop of one function with a new input every third call; returns
    the outputs' shapes, which the recorder must not change."""
    mgr = mgr_cls()
    fid = mgr.add(0, static=[0])
    w = fake.Tensor([4, 4])
    x = fake.Tensor([2, 4])
    got = []
    for i in range(n):
        cgt.mark_step_begin()
        fake._invocation()
        if i % 3 == 0:
            x = fake.Tensor([2, 4])
        out = mgr._run([w, x], fid)
        got.append([list(t.shape) for t in out])
    return got


class VersionsTest(fake.FakeTorchTest):
    def record(self, version, mgr_cls=None, name="t.cgt.jsonl", keep_class=False):
        cls = mgr_cls if keep_class else fake.shape_as(version)
        cgt = sys.modules["torch._inductor.cudagraph_trees"]
        path = os.path.join(self.dir.name, name)
        err = io.StringIO()
        compat._SAID[0] = False
        with redirect_stderr(err):
            with cgtrace.record(path, name="t") as rec:
                got = program(mgr_cls or cls, cgt)
        with open(path) as fh:
            recs = [json.loads(x) for x in fh]
        return got, recs, err.getvalue(), rec

    def test_214_records_as_211_and_says_the_version(self):
        got, recs, err, rec = self.record("2.14.0")
        self.assertIsNone(rec.error)
        meta = recs[0]["meta"]
        self.assertEqual(meta["torch"], "2.14.0")
        later = " ".join(meta["cgtrace_compat"]["later"])
        self.assertIn("mark_warmup_incomplete", later)
        self.assertIn("generation cloning", later)
        self.assertEqual(meta["cgtrace_compat"]["fatal"], [])
        self.assertEqual(len([line for line in err.splitlines() if line.startswith("cgtrace: made for torch 2.11")]), 1,
                         err)
        self.assertIn("this is torch 2.14.0", err)
        # The same records as on 2.11's shape, but the notes of what differs.
        self.setUp_again()
        got211, recs211, err211, _ = self.record("2.11.0", name="u.cgt.jsonl")
        self.assertEqual(got, got211)
        self.assertEqual(err211, "")
        strip = [r for r in recs[1:] if r.get("op") != "note"]
        self.assertEqual(strip, recs211[1:])
        self.assertTrue(any("2.14.0" in r.get("text", "") for r in recs if r.get("op") == "note"))

    def setUp_again(self):
        self.tearDown()
        self.setUp()

    def broken(self, edit):
        """A torch whose manager class `edit` changed: the program's
        results are the unrecorded ones, no exception reaches it, nothing
        stays patched, and the trace says why nothing was recorded."""
        base = fake.shape_as("2.14.0")
        cgt = sys.modules["torch._inductor.cudagraph_trees"]
        # A class of this test's own, with the entry points as its own
        # attributes (as torch's are), for edit to change.
        own = {k: base.__dict__[k] for k in ("_run", "run_eager", "record_function", "execute_node")}
        cls = type("CUDAGraphTreeManager", (base,), own)
        edit(cls)
        cgt.CUDAGraphTreeManager = cls
        want = program(cls, cgt)
        before = dict(cls.__dict__)
        got, recs, err, rec = self.record("2.14.0", cls, keep_class=True)
        self.assertEqual(got, want)
        self.assertEqual(dict(cls.__dict__), before, "a patch was left behind")
        self.assertIsNotNone(rec.error)
        meta = recs[0]["meta"]
        self.assertEqual(meta["torch"], "2.14.0")
        self.assertIn("recorder_error", meta)
        self.assertFalse([r for r in recs[1:] if r.get("op") == "call"])
        notes = " ".join(r["text"] for r in recs[1:] if r.get("op") == "note")
        self.assertIn("recorded nothing", notes)
        return meta["cgtrace_compat"]["fatal"]

    def test_changed_signature_records_nothing_and_breaks_nothing(self):
        def edit(cls):
            orig = cls.execute_node

            def execute_node(self, graph_node, new_inputs):  # (a parameter renamed: another signature)
                return orig(self, graph_node, new_inputs)
            cls.execute_node = execute_node
        fatal = self.broken(edit)
        self.assertIn("CUDAGraphTreeManager.execute_node takes (graph_node, new_inputs)", " ".join(fatal))

    def test_missing_entry_point_records_nothing_and_breaks_nothing(self):
        def edit(cls):
            # The class no longer has its own (it moved, or was renamed).
            del cls.record_function
        fatal = self.broken(edit)
        self.assertIn("CUDAGraphTreeManager.record_function is missing", " ".join(fatal))

    def test_a_failing_start_leaves_the_program_alone(self):
        # Something the checks did not foresee (reading the settings fails).
        fake.shape_as("2.14.0")
        cgt = sys.modules["torch._inductor.cudagraph_trees"]
        orig = cgtrace.recorder.Recorder._read_settings

        def boom(self, *a):
            raise AttributeError("no such knob")
        cgtrace.recorder.Recorder._read_settings = boom
        try:
            M = cgt.CUDAGraphTreeManager
            before = dict(M.__dict__)
            path = os.path.join(self.dir.name, "f.cgt.jsonl")
            with redirect_stderr(io.StringIO()):
                with cgtrace.record(path) as rec:
                    got = program(M, cgt)
            self.assertEqual(len(got), 8)
            self.assertEqual(dict(M.__dict__), before)
            self.assertIn("no such knob", rec.error)
            self.assertTrue(os.path.exists(path))
        finally:
            cgtrace.recorder.Recorder._read_settings = orig

    def test_made_for(self):
        for v, want in (("2.11.0", True), ("2.11.1+cu128", True), ("2.14.0", False), ("2.10.0", False),
                        ("0.0-fake", False), ("", False)):
            self.assertEqual(compat.made_for(v), want, v)


if __name__ == "__main__":
    unittest.main()
