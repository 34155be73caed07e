"""tools/gpu/after-effect.py on CPU: its split of a loop's calls around the
injected work, and its table over the recorder tests' stand-in loop."""
import io
import os
import unittest

import gputool  # (tools/gpu/tests: the tool scripts as modules)

# (The tool loads the stand-in for torch itself, through recorder-overhead.py.)
ae = gputool.load("after-effect.py")


class SplitTest(unittest.TestCase):
    def test_the_injected_call_the_next_and_the_three_after_each_against_the_median(self):
        every = 10
        each = [10_000] * 40
        for i in (9, 19, 29, 39):  # the injected calls
            each[i] = 110_000
        for i in (10, 20, 30):  # the next ones
            each[i] = 40_000
        for i in (21, 22, 23, 31, 32, 33):  # the three after, past the first
            each[i] = 12_000
        got = ae.split(each, [95_000, 97_000, 99_000, 90_000], every)
        self.assertEqual(got["median_us"], 10.0)
        self.assertEqual(got["work_us"], 96.0)
        self.assertEqual(got["injected_us"], 100.0)
        self.assertEqual(got["next_us"], 30.0)
        self.assertEqual(got["after3_us"], 2.0)
        self.assertAlmostEqual(got["mean_excess_us"], (4 * 100 + 3 * 30 + 6 * 2) / 40)

    def test_the_work_runs_after_every_nth_call_inside_its_time(self):
        ran = []
        each, cost = ae.injected_loop(lambda: ran.append("step"), lambda: None, 7, 3, lambda: ran.append("work"))
        self.assertEqual(ran, ["step", "step", "step", "work", "step", "step", "step", "work", "step"])
        self.assertEqual((len(each), len(cost)), (7, 2))

    def test_the_kinds_make_what_they_say(self):
        self.assertEqual(ae.make_and_free(), 32)
        text = ae.make_text()
        self.assertEqual(text.count(b"\n"), 32 * 5)
        self.assertGreater(len(text), 16_000)


class MainTest(unittest.TestCase):
    def test_the_table_over_the_stand_in(self):
        out = io.StringIO()
        self.assertEqual(ae.main(["--fake", "--rounds", "1", "--iters", "70", "--warm", "3"], out=out), 0)
        text = out.getvalue()
        self.assertIn("stand-in loop: work after every 33th call", text)
        rows = [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("| work")
                and not line.startswith("| ---")]
        names = [r.split(" | ")[0][2:] for r in rows]
        self.assertIn("nothing", names)
        self.assertIn("400 objects made and let go", names)
        self.assertIn("the text written to a file", names)
        num = r"[-+]?\d+\.\d+"
        for r in rows:
            self.assertRegex(r, r"^\| [^|]+ \| " + r" \| ".join([num] * 6) + r" \|$")
        self.assertTrue(rows[0].startswith("| nothing | 0.0 |"))
        self.assertFalse(os.path.exists("/dev/shm/cgtviz-after-effect-%d" % os.getpid()))

    def test_bad_arguments_refused(self):
        with self.assertRaises(SystemExit) as e:
            ae.main(["--fake", "--iters", "10"], out=io.StringIO())
        self.assertEqual(e.exception.code, 2)


if __name__ == "__main__":
    unittest.main()
