"""The recorded programs (programs/) are a set: record_all.sh records every
one of them, each compiles, and none reaches for the network (the GPU
machine reaches nothing)."""
import ast
import os
import re
import unittest

PROGRAMS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "programs")
TOOLS = {"oracle_check.py"}  # replays traces; not a program to record


class ProgramsTest(unittest.TestCase):
    def programs(self):
        return sorted(f for f in os.listdir(PROGRAMS) if f.endswith(".py") and f not in TOOLS)

    def test_record_all_lists_every_program(self):
        with open(os.path.join(PROGRAMS, "record_all.sh")) as fh:
            text = fh.read()
        listed = re.search(r"<<'LIST'\n(.*?)\nLIST\n", text, re.S).group(1).splitlines()
        scripts = {line.split()[1] for line in listed if line.strip()}
        names = [line.split()[0] for line in listed if line.strip()]
        self.assertEqual(sorted(scripts), self.programs())
        self.assertEqual(len(names), len(set(names)), "two programs record into one file")

    def test_programs_parse_and_download_nothing(self):
        for f in self.programs():
            with open(os.path.join(PROGRAMS, f)) as fh:
                src = fh.read()
            ast.parse(src, f)
            self.assertTrue(ast.get_docstring(ast.parse(src)), "%s says what it records" % f)
            for bad in ("from_pretrained", "urllib", "requests", "hf_hub"):
                self.assertNotIn(bad, src, "%s reaches for the network (%s)" % (f, bad))


if __name__ == "__main__":
    unittest.main()
