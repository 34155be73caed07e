"""tools/gpu/graphs-unchanged.py without a GPU: it reads record_all.sh's
programs as the script records them, and a difference in any graph's code,
counter or printed line is reported (the same reports are not)."""
import os
import unittest

import gputool  # (tools/gpu/tests: the tool scripts as modules)

gu = gputool.load("graphs-unchanged.py")


class GraphsUnchangedTest(unittest.TestCase):
    def test_programs_are_record_alls(self):
        with open(os.path.join(gu.PROGRAMS, "record_all.sh")) as fh:
            listed = gu.programs(fh.read())
        names = [n for n, _, _ in listed]
        self.assertIn(("graph_break_mark_step", "graph_break.py", ["--mark-step"]), listed)
        self.assertIn("host_reads", names)
        self.assertEqual(len(names), len(set(names)))
        for _, script, _ in listed:
            self.assertTrue(os.path.exists(os.path.join(gu.PROGRAMS, script)), script)
        with self.assertRaises(ValueError):
            gu.programs("no list here")

    def test_select(self):
        listed = [("a", "a.py", []), ("two_gpus", "two_gpus.py", []), ("b", "b.py", ["--x"])]
        for names, gpus, want, skipped in (
                ([], 1, ["a", "b"], 1), ([], 2, ["a", "two_gpus", "b"], 0),
                (["b"], 1, ["b"], 0), (["two_gpus"], 1, [], 1)):
            todo, lines = gu.select(listed, names, gpus)
            self.assertEqual([n for n, _, _ in todo], want, (names, gpus))
            self.assertEqual(len(lines), skipped, (names, gpus))
        self.assertEqual(gu.select(listed, ["b"], 1)[0], [("b", "b.py", ["--x"])])
        with self.assertRaises(KeyError):
            gu.select(listed, ["a", "c"], 2)

    def test_compare(self):
        base = {"graphs": ["def forward(self, x):\n    return (x + 1,)"],
                "counters": {"stats": {"unique_graphs": 1}, "frames": {"total": 1, "ok": 1}},
                "stdout": ["iter 0 1.0"], "reads": None}
        self.assertEqual(gu.compare(base, dict(base, reads=3)), [])
        for key, other in [("graphs", ["def forward(self, x):\n    return (x + 2,)"]),
                           ("counters", {"stats": {"unique_graphs": 1}, "frames": {"total": 2, "ok": 2}}),
                           ("stdout", ["iter 0 2.0"])]:
            diff = gu.compare(base, dict(base, **{key: other}))
            self.assertEqual(diff[0], "%s differ:" % key, diff)
            self.assertTrue(any(d.startswith("  +") for d in diff), diff)
        self.assertEqual(gu.summary(dict(base, counters={"graph_break": {"a": 2, "b": 1}, "frames": {"total": 3}})),
                         "1 graphs, 3 graph breaks, 3 frames")


if __name__ == "__main__":
    unittest.main()
