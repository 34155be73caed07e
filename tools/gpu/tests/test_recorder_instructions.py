"""tools/gpu/recorder-instructions.py: the program it counts runs (the
fake loop, recorded or not), and the counts of its four runs give the
instructions a call as their differences say. valgrind itself is the
tool's to run; here a stand-in answers for it."""
import re
import subprocess
import sys
import types
import unittest

import gputool  # (tools/gpu/tests: the tool scripts as modules)

TOOL = gputool.path("recorder-instructions.py")
ri = gputool.load("recorder-instructions.py")


class InstructionsTest(unittest.TestCase):
    def test_child_runs_the_loops(self):
        for args in (["--child", "5"], ["--child", "-5", "--fresh"], ["--child", "5", "--fresh"],
                     ["--child", "5", "--train"], ["--child", "-5", "--train"]):
            p = subprocess.run([sys.executable, TOOL] + args, capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stderr)

    def test_counts_are_the_runs_differences(self):
        # A stand-in for valgrind: 1,000 instructions of start-up, 100 a
        # call unrecorded, 250 recorded, and what a recording's start and
        # end cost (300) in every run.
        seen = []

        def run(cmd, **kw):
            seen.append(cmd)
            self.assertEqual(kw["env"]["PYTHONHASHSEED"], "0")
            self.assertEqual(kw["env"]["CGTRACE_CPP"], "0")
            calls = int(cmd[cmd.index("--child") + 1])
            n = 1000 + 300 + (250 if calls > 0 else 100) * abs(calls)
            return types.SimpleNamespace(returncode=0, stderr="==1== Collected : %d\n" % n)

        r = ri.measure(True, 10, "/some/recorder", run=run)
        self.assertEqual(r, {"off": 100.0, "on": 250.0, "added": 150.0})
        self.assertEqual(len(seen), 4)
        self.assertTrue(all(c[0] == "valgrind" and "--fresh" in c and c[-2:] == ["--baseline", "/some/recorder"]
                            for c in seen))

    def test_against_counts_both_and_prints_the_difference(self):
        """--against OTHER: the other recorder counted beside the first (its
        own runs), both printed, then the first less the other."""
        import contextlib
        import io
        from unittest import mock
        asked = []

        def fake_measure(fresh, calls, baseline=None, run=None, cold=False, train=False, folder=None):
            asked.append((fresh, calls, baseline, cold, train))
            added, misses = (150.0, 40.0) if baseline is None else (170.0, 55.0)
            return {"off": 100.0, "on": 100.0 + added, "added": added, "misses_off": 10.0,
                    "misses_on": 10.0 + misses, "misses_added": misses}

        with mock.patch.object(ri, "measure", fake_measure), contextlib.redirect_stdout(io.StringIO()) as out:
            self.assertEqual(ri.main(["--fresh", "--cold", "--calls", "3", "--against", "/other"]), 0)
        self.assertEqual(sorted(asked, key=str), sorted([(True, 3, None, True, False), (True, 3, "/other", True, False)],
                                                        key=str))
        text = out.getvalue()
        self.assertIn("a new input each call: 100 instructions a call unrecorded, 250 recorded, 150 added", text)
        self.assertIn("a new input each call, recorder /other: 100 instructions a call unrecorded, 270 recorded, "
                      "170 added", text)
        self.assertIn("a new input each call: this checkout's recorder less /other: -20 instructions a call, "
                      "-15 last-level misses", text)

    def test_training_loop_is_asked_of_the_child(self):
        seen = []

        def run(cmd, **kw):
            seen.append(cmd)
            calls = int(cmd[cmd.index("--child") + 1])
            return types.SimpleNamespace(returncode=0, stderr="==1== Collected : %d\n"
                                         % (1000 + (900 if calls > 0 else 400) * abs(calls)))

        r = ri.measure(False, 10, run=run, train=True)
        self.assertEqual(r, {"off": 400.0, "on": 900.0, "added": 500.0})
        self.assertTrue(all("--train" in c and "--fresh" not in c for c in seen))
        with self.assertRaises(SystemExit):
            ri.main(["--fresh", "--train"])

    def test_cold_counts_last_level_misses(self):
        # The nine events in valgrind's order, as it names them: Ir Dr Dw
        # I1mr D1mr D1mw ILmr DLmr DLmw. A call: 100 instructions and 10
        # LL misses (ILmr 2, DLmr 5, DLmw 3) unrecorded, 250 and 40 (8,
        # 20, 12) recorded; the other events are large, so that a count
        # taken from the wrong place is far off.
        seen = []

        def run(cmd, **kw):
            seen.append(cmd)
            calls = int(cmd[cmd.index("--child") + 1])
            k = abs(calls)
            if calls > 0:
                ev = (250 * k, 700 * k, 900 * k, 60 * k, 70 * k, 80 * k, 8 * k, 20 * k, 12 * k)
            else:
                ev = (100 * k, 300 * k, 400 * k, 6 * k, 7 * k, 8 * k, 2 * k, 5 * k, 3 * k)
            ev = [v + 1000 for v in ev]  # (start-up, the same in every run)
            return types.SimpleNamespace(
                returncode=0, stderr="==1== Events    : Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw\n"
                                     "==1== Collected : %s\n" % " ".join(map(str, ev)))

        r = ri.measure(False, 10, run=run, cold=True)
        self.assertEqual(r, {"off": 100.0, "on": 250.0, "added": 150.0,
                             "misses_off": 10.0, "misses_on": 40.0, "misses_added": 30.0})
        self.assertTrue(all("--cache-sim=yes" in c and c[c.index("--evict") + 1] == str(2 * ri._LL_BYTES)
                            for c in seen))

    def test_cold_without_cache_events_is_an_error(self):
        def run(cmd, **kw):
            return types.SimpleNamespace(returncode=0, stderr="==1== Collected : 12345\n")

        with self.assertRaises(SystemExit) as cm:
            ri.measure(False, 10, run=run, cold=True)
        self.assertIn("not the cache events", str(cm.exception))

    def test_by_function_is_each_function_s_difference(self):
        """--by-function: each function's own counts, from the four runs'
        profiles (kept where measure was asked to keep them), as the
        totals are taken: recorded minus unrecorded, a call. callgrind_annotate's
        rows name a function with its file and library, and its
        recursion levels apart; they are merged."""
        import tempfile
        seen = []
        # per call: (Ir, ILmr, DLmr, DLmw) of each function, recorded / unrecorded
        on = {"typeobject.c:_PyType_Lookup": (40, 0, 6, 0), "???:fresh_queue": (700, 60, 8, 0)}
        off = {"typeobject.c:_PyType_Lookup": (10, 0, 1, 0)}

        def annotate(cmd, **kw):
            seen.append(cmd)
            n = int(re.search(r"callgrind\.(on|off)(\d+)\.out$", cmd[-1]).group(2))
            table = on if ".on" in cmd[-1] else off
            lines = ["Ir  ILmr  DLmr  DLmw  file:function", "-" * 20,
                     "1,000,000 (100.0%) 9 (100.0%) 9 (100.0%) 9 (100.0%)  PROGRAM TOTALS"]
            for f, v in table.items():
                # (half of it at a recursion level of its own, in the library's name)
                a = [x * n // 2 + 100 for x in v]
                lines.append("%s  /build/Python/%s [/usr/lib/libpython3.12.so.1.0]"
                             % ("  ".join("{:,} ( 1.00%)".format(x) for x in a), f))
                lines.append("%s  /build/Python/%s'2 [/usr/lib/libpython3.12.so.1.0]"
                             % ("  ".join("{:,}".format(x * n // 2) if x else "." for x in v), f))
            return types.SimpleNamespace(returncode=0, stdout="\n".join(lines) + "\n", stderr="")

        with tempfile.TemporaryDirectory() as d:
            rows = ri.by_function(d, 10, run=annotate)
        self.assertEqual(len(seen), 4)
        self.assertTrue(all(c[0] == "callgrind_annotate" and "--inclusive=no" in c for c in seen))
        got = {f: v for v, f in rows}
        self.assertEqual(got["???:fresh_queue"], [700.0, 60.0, 8.0, 0.0])
        self.assertEqual(got["typeobject.c:_PyType_Lookup"], [30.0, 0.0, 5.0, 0.0])
        self.assertEqual([f for _, f in rows], ["???:fresh_queue", "typeobject.c:_PyType_Lookup"])

    def test_by_function_without_cold_reads_instructions_only(self):
        """--by-function without --cold: the profiles have no cache
        events (callgrind_annotate refuses to show one), so only Ir is
        asked for and read; the misses are 0."""
        import tempfile
        seen = []
        on = {"???:fq_run": 900, "ceval.c:_PyEval_EvalFrameDefault": 300}
        off = {"ceval.c:_PyEval_EvalFrameDefault": 100}

        def annotate(cmd, **kw):
            seen.append(cmd)
            n = int(re.search(r"callgrind\.(on|off)(\d+)\.out$", cmd[-1]).group(2))
            table = on if ".on" in cmd[-1] else off
            lines = ["Ir  file:function", "-" * 20, "1,000,000 (100.0%)  PROGRAM TOTALS"]
            lines += ["{:,} ( 1.00%)  /build/Python/{} [/usr/lib/libpython3.12.so.1.0]".format(v * n, f)
                      for f, v in table.items()]
            return types.SimpleNamespace(returncode=0, stdout="\n".join(lines) + "\n", stderr="")

        with tempfile.TemporaryDirectory() as d:
            rows = ri.by_function(d, 10, run=annotate, cold=False)
        self.assertTrue(all("--show=Ir" in c for c in seen), seen)
        got = {f: v for v, f in rows}
        self.assertEqual(got["???:fq_run"], [900.0, 0, 0, 0])
        self.assertEqual(got["ceval.c:_PyEval_EvalFrameDefault"], [200.0, 0, 0, 0])

    def test_measure_keeps_the_profiles_where_asked(self):
        seen = []

        def run(cmd, **kw):
            seen.append(cmd)
            return types.SimpleNamespace(returncode=0, stderr="==1== Collected : %d\n" % 100)

        ri.measure(False, 10, run=run, folder="/f")
        outs = sorted(c[2] for c in seen)
        self.assertEqual(outs, ["--callgrind-out-file=/f/callgrind.off10.out", "--callgrind-out-file=/f/callgrind.off20.out",
                                "--callgrind-out-file=/f/callgrind.on10.out", "--callgrind-out-file=/f/callgrind.on20.out"])

    def test_failed_run_is_an_error(self):
        def run(cmd, **kw):
            return types.SimpleNamespace(returncode=1, stderr="valgrind: no such tool")

        with self.assertRaises(SystemExit) as cm:
            ri.measure(False, 10, run=run)
        self.assertIn("no such tool", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
