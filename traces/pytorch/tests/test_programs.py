"""The recorded programs (programs/) are a set: record_all.sh records every
one of them, each compiles, and none reaches for the network (the GPU
machine reaches nothing)."""
import ast
import os
import re
import unittest

PROGRAMS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "programs")
TOOLS = {"oracle_check.py"}  # replays traces; not a program to record
# Programs that die, recorded or not (in PyTorch 2.11, or killed as the
# OOM killer kills): not record_all.sh's (each would fail its run), run
# by tools/gpu/crash-trace.py (gpu.sh's programs suite), which says how
# each ended and what its trace holds.
DIES = {"static_generate.py", "killed_train.py"}


class ProgramsTest(unittest.TestCase):
    def programs(self):
        return sorted(f for f in os.listdir(PROGRAMS) if f.endswith(".py") and f not in TOOLS)

    def test_dying_programs_are_crash_traces(self):
        with open(os.path.join(os.path.dirname(PROGRAMS), "..", "..", "tools", "gpu", "gpu.sh")) as fh:
            gpu_sh = fh.read()
        for f in DIES:
            self.assertIn(f, self.programs())
            self.assertIn("crash-trace.py %s " % f[:-3], gpu_sh)

    def test_record_all_lists_every_program(self):
        with open(os.path.join(PROGRAMS, "record_all.sh")) as fh:
            text = fh.read()
        listed = re.search(r"<<'LIST'\n(.*?)\nLIST\n", text, re.S).group(1).splitlines()
        scripts = {line.split()[1] for line in listed if line.strip()}
        names = [line.split()[0] for line in listed if line.strip()]
        self.assertEqual(sorted(scripts), sorted(set(self.programs()) - DIES))
        self.assertFalse(scripts & DIES, "a program that dies is crash-trace.py's, not record_all.sh's")
        self.assertEqual(len(names), len(set(names)), "two programs record into one file")

    def test_unknown_program_name_refused(self):
        import subprocess
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            p = subprocess.run(["bash", os.path.join(PROGRAMS, "record_all.sh"), d, "dtypes", "bogus"],
                               capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn("no program named bogus", p.stderr)
        self.assertNotIn("== dtypes", p.stdout)  # refused before recording anything

    def test_programs_parse_and_download_nothing(self):
        for f in self.programs():
            with open(os.path.join(PROGRAMS, f)) as fh:
                src = fh.read()
            tree = ast.parse(src, f)
            self.assertTrue(ast.get_docstring(tree), "%s says what it records" % f)
            for node in ast.walk(tree):
                mods = []
                if isinstance(node, ast.Import):
                    mods = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom):
                    mods = [node.module or ""]
                for m in mods:
                    self.assertNotIn(m.split(".")[0], ("urllib", "requests", "huggingface_hub", "http"),
                                     "%s reaches for the network (imports %s)" % (f, m))
                if isinstance(node, ast.Attribute):
                    self.assertNotEqual(node.attr, "from_pretrained", "%s downloads weights" % f)


if __name__ == "__main__":
    unittest.main()
