"""tools/gpu/crash-trace.py without a GPU: how a process ended in words,
what a trace cut by a death holds, and a run end to end with stand-ins
for the program and the recorder (a recorder that writes some records and
then dies by SIGSEGV, as the real one leaves its journal when PyTorch
segfaults; the recorder's own side is test_recorder_crash's)."""
import contextlib
import io
import os
import signal
import sys
import tempfile
import textwrap
import unittest

import gputool  # (tools/gpu/tests: the tool scripts as modules)

ct = gputool.load("crash-trace.py")

HEAD = '{"cgtviz": 1, "name": "t", "devices": 1}\n'
CALL = '{"op": "call", "fn": "f", "args": ["x"]}\n'
STEP = '{"op": "step"}\n'


def write(folder, name, text):
    path = os.path.join(folder, name)
    with open(path, "w") as fh:
        fh.write(text)
    return path


class CrashTraceTest(unittest.TestCase):
    def test_ending(self):
        for rc, to, want in ((0, False, "exit 0"), (1, False, "exit 1"), (-signal.SIGSEGV, False, "killed by SIGSEGV"),
                             (-signal.SIGKILL, False, "killed by SIGKILL"), (None, True, "timed out"),
                             (None, False, "did not run"), (-200, False, "killed by signal 200")):
            self.assertEqual(ct.ending(rc, to), want, (rc, to))

    def test_summarize(self):
        with tempfile.TemporaryDirectory() as d:
            s = ct.summarize(os.path.join(d, "none.cgt.jsonl"))
            self.assertFalse(s["exists"])
            self.assertEqual(ct.verdict(s), ["no trace"])
            s = ct.summarize(write(d, "whole", HEAD + STEP + CALL + STEP + CALL))
            self.assertEqual((s["lines"], s["calls"], s["last"], s["cut"], s["bad"]), (5, 2, "call", False, []))
            self.assertEqual(s["ops"], {"step": 2, "call": 2})
            self.assertEqual(ct.verdict(s), [])
            # Cut mid-write: the last line is not whole, and says so.
            s = ct.summarize(write(d, "cut", HEAD + CALL + STEP + CALL[:20]))
            self.assertEqual((s["lines"], s["calls"], s["last"], s["cut"], s["bad"]), (3, 1, "step", True, []))
            self.assertEqual(ct.verdict(s), [])
            # A line before the last not whole JSON is not a cut: a bad trace.
            s = ct.summarize(write(d, "bad", HEAD + CALL[:20] + "\n" + CALL))
            self.assertEqual(s["bad"], [2])
            self.assertEqual(len(ct.verdict(s)), 1)
            s = ct.summarize(write(d, "nocall", HEAD + STEP))
            self.assertEqual(ct.verdict(s), ["no call recorded"])

    def run_main(self, program, recorder, argv):
        """main() on a stand-in program folder and recorder; (status, out)."""
        with tempfile.TemporaryDirectory() as d:
            progs = os.path.join(d, "programs")
            os.makedirs(progs)
            write(progs, "dies.py", "import os, signal\nprint('going', flush=True)\n" + program)
            rec = write(d, "rec.py", recorder)
            saved = ct.PROGRAMS, ct.record_cmd
            ct.PROGRAMS = progs
            ct.record_cmd = lambda trace, script, args: [sys.executable, rec, trace, script] + list(args)
            out = io.StringIO()
            try:
                with contextlib.redirect_stdout(out):
                    status = ct.main(argv[:1] + ["--out", os.path.join(d, "out")] + argv[1:])
            finally:
                ct.PROGRAMS, ct.record_cmd = saved
            return status, out.getvalue()

    RECORDER = textwrap.dedent("""
        import os, signal, sys
        trace, script = sys.argv[1], sys.argv[2]
        with open(trace, "w") as fh:
            fh.write(%r)
            fh.flush()
        os.kill(os.getpid(), signal.SIGSEGV)
    """)

    def test_a_death_recorded_leaves_its_calls(self):
        status, out = self.run_main("os.kill(os.getpid(), signal.SIGSEGV)\n",
                                    self.RECORDER % (HEAD + CALL + STEP + CALL[:10]), ["dies"])
        self.assertEqual(status, 0, out)
        self.assertIn("dies unrecorded: killed by SIGSEGV", out)
        self.assertIn("    going", out)
        self.assertIn("dies recorded: killed by SIGSEGV", out)
        self.assertIn("3 whole lines (records: call 1, step 1); 1 calls; the last whole record: step; last line cut "
                      "mid-write", out)

    ECHO = textwrap.dedent("""
        import sys
        trace = sys.argv[1]
        with open(trace, "w") as fh:
            fh.write(%r)
        print("args " + " ".join(sys.argv[3:]))
    """)

    def test_the_programs_options_after_the_dashes(self):
        # gpu.sh's line: options of crash-trace's, then the program's own
        # after "--", which argparse alone refused.
        for argv in (["dies", "--recorded-only", "--", "--die-at", "50", "--load-ms", "30"],
                     ["dies", "--", "--die-at", "50", "--load-ms", "30"]):
            status, out = self.run_main("", self.ECHO % (HEAD + CALL), argv)
            self.assertEqual(status, 0, out)
            self.assertIn("    args --die-at 50 --load-ms 30", out)
        status, out = self.run_main("", self.ECHO % (HEAD + CALL), ["dies", "--recorded-only", "x", "--", "-y"])
        self.assertEqual(status, 0, out)
        self.assertIn("    args x -y", out)

    def test_no_call_recorded_fails(self):
        status, out = self.run_main("", self.RECORDER % HEAD, ["dies", "--recorded-only"])
        self.assertEqual(status, 1, out)
        self.assertNotIn("unrecorded", out)
        self.assertIn("FAIL: no call recorded", out)

    def test_a_program_not_there(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertEqual(ct.main(["no_such_program"]), 2)
        self.assertIn("no program no_such_program", err.getvalue())

    def test_cgtviz_replays_each_device_and_fails_on_its_failure(self):
        # A stand-in cgtviz: check passes, a replay on "bad" fails.
        with tempfile.TemporaryDirectory() as d:
            fake = write(d, "cgtviz", "#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = bad ] && { echo failed; exit 1; }; "
                                      "done\necho \"ok $*\"\n")
            os.chmod(fake, 0o755)
            status, out = self.run_main("", self.RECORDER % (HEAD + CALL), ["dies", "--recorded-only", "--cgtviz",
                                                                           fake, "--device", "sim"])
            self.assertEqual(status, 0, out)
            self.assertIn("cgtviz check: exit 0", out)
            self.assertIn("cgtviz run --device sim: exit 0", out)
            status, out = self.run_main("", self.RECORDER % (HEAD + CALL), ["dies", "--recorded-only", "--cgtviz",
                                                                           fake, "--device", "bad"])
            self.assertEqual(status, 1, out)
            self.assertIn("cgtviz run --device bad: exit 1", out)


if __name__ == "__main__":
    unittest.main()
