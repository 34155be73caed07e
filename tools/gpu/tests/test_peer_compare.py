"""peer_compare.py tells a test recording changes from a flaky one, on
JUnit XML as pytest writes it."""

import io
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import peer_compare  # noqa: E402


def junit(cases):
    """A pytest-like JUnit XML file of {name: outcome}."""
    body = []
    for name, outcome in cases.items():
        inner = {"passed": "", "failed": "<failure message='x'>x</failure>", "error": "<error message='e'/>",
                 "skipped": "<skipped message='s'/>"}[outcome]
        body.append("<testcase classname='test_cudagraph_trees.CudaGraphTreeTests' name='%s' time='0.1'>%s</testcase>" % (name, inner))
    xml = "<?xml version='1.0'?><testsuites><testsuite name='pytest'>%s</testsuite></testsuites>" % "".join(body)
    f = tempfile.NamedTemporaryFile("w", suffix=".xml", delete=False)
    f.write(xml)
    f.close()
    return f.name


class PeerCompareTest(unittest.TestCase):
    def run_main(self, unrec, rec):
        files_u = [junit(c) for c in unrec]
        files_r = [junit(c) for c in rec]
        self.addCleanup(lambda: [os.remove(p) for p in files_u + files_r])
        out = io.StringIO()
        with redirect_stdout(out):
            code = peer_compare.main(["--unrecorded"] + files_u + ["--recorded"] + files_r)
        return code, out.getvalue()

    def test_changed_flaky_same(self):
        unrec = [{"a": "passed", "b": "passed", "c": "passed", "d": "skipped"}, {"a": "passed", "b": "passed", "c": "failed", "d": "skipped"}]
        rec = [{"a": "passed", "b": "failed", "c": "passed", "d": "skipped"}, {"a": "passed", "b": "failed", "c": "passed"}]
        code, out = self.run_main(unrec, rec)
        self.assertEqual(code, 1)
        self.assertIn("changed test_cudagraph_trees.CudaGraphTreeTests::b: unrecorded passed/passed, recorded failed/failed", out)
        self.assertIn("flaky   test_cudagraph_trees.CudaGraphTreeTests::c", out)
        # d vanished from a recorded round (a crashed worker): not the same.
        self.assertIn("flaky   test_cudagraph_trees.CudaGraphTreeTests::d: unrecorded skipped/skipped, recorded skipped/missing", out)
        self.assertIn("4 tests in 2 unrecorded and 2 recorded rounds: 1 same, 1 changed by recording, 2 flaky", out)

    def test_all_same(self):
        rounds = [{"a": "passed", "b": "failed"}] * 2
        code, out = self.run_main(rounds, rounds)
        self.assertEqual(code, 0)
        self.assertIn("2 same, 0 changed by recording, 0 flaky", out)

    def test_paired(self):
        # Each round pair ran alike: c fails in both modes of round 2 (its
        # order there), so it is flaky, not recording's; b differs within
        # round 1's pair: changed, though its rounds disagree too.
        unrec = [{"a": "passed", "b": "passed", "c": "passed"}, {"a": "passed", "b": "failed", "c": "failed"}]
        rec = [{"a": "passed", "b": "failed", "c": "passed"}, {"a": "passed", "b": "failed", "c": "failed"}]
        files_u = [junit(c) for c in unrec]
        files_r = [junit(c) for c in rec]
        self.addCleanup(lambda: [os.remove(p) for p in files_u + files_r])
        out = io.StringIO()
        with redirect_stdout(out):
            code = peer_compare.main(["--paired", "--unrecorded"] + files_u + ["--recorded"] + files_r)
        out = out.getvalue()
        self.assertEqual(code, 1)
        self.assertIn("changed test_cudagraph_trees.CudaGraphTreeTests::b: unrecorded passed/failed, recorded failed/failed", out)
        self.assertIn("flaky   test_cudagraph_trees.CudaGraphTreeTests::c: unrecorded passed/failed, recorded passed/failed", out)
        self.assertIn("3 tests in 2 unrecorded and 2 recorded rounds (paired): 1 same, 1 changed by recording, 1 flaky", out)
        # Why each failing round failed, under its test.
        self.assertIn("        unrecorded round 2: x\n", out)
        self.assertIn("        recorded round 1: x\n", out)
        # Unpaired, c is flaky and b too (its unrecorded rounds disagree).
        rows = peer_compare.compare([peer_compare.outcomes(p) for p in files_u], [peer_compare.outcomes(p) for p in files_r])
        self.assertEqual(rows["test_cudagraph_trees.CudaGraphTreeTests::b"][0], "flaky")

    def test_paired_with_reruns(self):
        # One round. b's pair differs, and its rerun (same order, same
        # seed) agrees: the machine's once, flaky. c's pair differs and
        # its rerun differs the same way: changed. d differs, never run
        # again: changed.
        u = junit({"a": "passed", "b": "failed", "c": "passed", "d": "passed"})
        r = junit({"a": "passed", "b": "passed", "c": "failed", "d": "failed"})
        ua = junit({"a": "passed", "b": "passed", "c": "passed"})
        ra = junit({"a": "passed", "b": "passed", "c": "failed"})
        self.addCleanup(lambda: [os.remove(p) for p in (u, r, ua, ra)])
        out = io.StringIO()
        with redirect_stdout(out):
            code = peer_compare.main(["--paired", "--unrecorded", u, "--recorded", r,
                                      "--again-unrecorded", ua, "--again-recorded", ra])
        out = out.getvalue()
        self.assertEqual(code, 1, out)
        k = "test_cudagraph_trees.CudaGraphTreeTests::"
        self.assertIn("flaky   %sb: unrecorded failed, recorded passed" % k, out)
        self.assertIn("        round 1 again (same order and seed): unrecorded passed, recorded passed", out)
        self.assertIn("changed %sc: unrecorded passed, recorded failed" % k, out)
        self.assertIn("changed %sd: unrecorded passed, recorded failed" % k, out)
        self.assertIn("4 tests in 1 unrecorded and 1 recorded rounds (paired): 1 same, 2 changed by recording, 1 flaky",
                      out)
        # Which tests gpu.sh runs again: every pair that differs.
        out = io.StringIO()
        with redirect_stdout(out):
            code = peer_compare.main(["--paired", "--list-changed", "--unrecorded", u, "--recorded", r])
        self.assertEqual(code, 0)
        self.assertEqual(out.getvalue().split(), [k + "b", k + "c", k + "d"])
        # "none": a round without reruns; the two lists go together.
        with redirect_stdout(io.StringIO()):
            self.assertEqual(peer_compare.main(["--paired", "--unrecorded", u, "--recorded", r,
                                                "--again-unrecorded", "none", "--again-recorded", "none"]), 1)
        with redirect_stdout(io.StringIO()), open(os.devnull, "w") as null:
            old, sys.stderr = sys.stderr, null
            try:
                self.assertEqual(peer_compare.main(["--paired", "--unrecorded", u, "--recorded", r,
                                                    "--again-unrecorded", ua]), 2)
            finally:
                sys.stderr = old

    def test_reason(self):
        msg = ("torch._inductor.exc.InductorError: OSError: [Errno 14] Bad address: 'g++'\n\n"
               "Set TORCHDYNAMO_VERBOSE=1 for the internal stack trace")
        self.assertEqual(peer_compare.reason(msg), "torch._inductor.exc.InductorError: OSError: [Errno 14] Bad address: 'g++'")
        self.assertEqual(peer_compare.reason("Scalars are not equal!\n\nExpected 1 but got 2."), "Scalars are not equal!")
        self.assertEqual(peer_compare.reason(""), "")

    def test_shards_joined_by_commas(self):
        a, b = junit({"x": "passed"}), junit({"y": "failed"})
        self.addCleanup(lambda: [os.remove(p) for p in (a, b)])
        got = peer_compare.outcomes(a + "," + b)
        self.assertEqual(got, {"test_cudagraph_trees.CudaGraphTreeTests::x": "passed",
                               "test_cudagraph_trees.CudaGraphTreeTests::y": "failed"})

    def test_bad_file(self):
        p = junit({"a": "passed"})
        self.addCleanup(os.remove, p)
        with redirect_stdout(io.StringIO()), open(os.devnull, "w") as null:
            old, sys.stderr = sys.stderr, null
            try:
                code = peer_compare.main(["--unrecorded", p, "--recorded", "/nonexistent.xml"])
            finally:
                sys.stderr = old
        self.assertEqual(code, 2)


if __name__ == "__main__":
    unittest.main()
