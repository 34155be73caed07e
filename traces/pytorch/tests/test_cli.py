"""The command line (cgtrace/cli.py): `summary` counts what a trace holds."""

import os
import sys
import tempfile
import unittest

# CGTRACE_TEST_INSTALLED=1 tests the installed package (tests/venv_check.sh)
# instead of the folder beside these tests.
if os.environ.get("CGTRACE_TEST_INSTALLED") != "1":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import cgtrace  # noqa: E402
from cgtrace import Session, Trace  # noqa: E402
from test_session import FakeTensor, info  # noqa: E402


class SummaryTest(unittest.TestCase):
    def test_summary_counts(self):
        t = Trace("s")
        s = Session(t)
        fi = info(0)
        x = FakeTensor([4])
        for act in ("warmup", "record", "replay", "replay"):
            ctx = s.begin_call(fi, [x.fact()])
            s.end_call(ctx, [act], ((0, 0, 0), None) if act != "warmup" else None, 1, [FakeTensor([4]).fact()])
        s.step()
        s.finish()
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "s.cgt.jsonl")
            t.write(p)
            got = cgtrace.summarise_file(p)["counts"]
        self.assertEqual((got["calls"], got["warmup"], got["record"], got["replay"]), (4, 1, 1, 2))
        self.assertEqual((got["defs"], got["steps"], got["checkpoints"]), (1, 1, 1))


if __name__ == "__main__":
    unittest.main()
