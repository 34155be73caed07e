"""tools/gpu/deferred-same.py without a GPU: two traces agree when every
record after the header is the same but for unseeded `values`; a record
more, fewer, or any other field differing is reported."""
import json
import os
import unittest
from unittest import mock

import gputool  # (tools/gpu/tests: the tool scripts as modules)

ds = gputool.load("deferred-same.py")


def lines(*recs, header="a"):
    return [json.dumps({"cgtrace": 1, "name": header})] + [json.dumps(r) for r in recs]


class SameRecordsTest(unittest.TestCase):
    def test_same_but_the_header_and_values(self):
        a = lines({"op": "tensor", "name": "x", "values": [1.0]}, {"op": "call", "fn": "f", "args": ["x"]})
        b = lines({"op": "tensor", "name": "x", "values": [2.5]}, {"op": "call", "fn": "f", "args": ["x"]},
                  header="b")
        self.assertEqual(ds.same_records(a, b), (2, []))

    def test_differences(self):
        a = lines({"op": "call", "fn": "f", "out": ["y"]}, {"op": "del", "names": ["y"]})
        for b in (lines({"op": "call", "fn": "f", "out": ["y"]}),  # a del missing
                  lines({"op": "call", "fn": "f", "out": ["z"]}, {"op": "del", "names": ["y"]}),
                  lines({"op": "call", "fn": "f", "out": ["y"]}, "not json")):
            n, diff = ds.same_records(a, b)
            self.assertTrue(diff, b)
        n, diff = ds.same_records(a, lines({"op": "call", "fn": "f", "out": ["z"]}, {"op": "del", "names": ["y"]}))
        self.assertEqual(n, 2)
        self.assertIn("line 2", diff[0])

    def test_the_second_recording_by_against(self):
        """Each recording is a process of its own with the recorder's
        settings in its environment: none in the first (the default: the
        C checks where built) but CGTRACE_CPP=wait against the bindings,
        CGTRACE_DEFER=0, CGTRACE_FAST=0 or CGTRACE_CPP=0 in the second,
        and none inherited."""
        envs = []
        keys = ("CGTRACE_DEFER", "CGTRACE_FAST", "CGTRACE_CPP")

        class Done:
            returncode, stderr = 0, ""

        def run(cmd, env=None, **kw):
            envs.append(tuple(env.get(k) for k in keys))
            return Done()

        with mock.patch.object(ds.subprocess, "run", run), \
                mock.patch.dict(os.environ, {"CGTRACE_DEFER": "0", "CGTRACE_FAST": "0", "CGTRACE_CPP": "1"}):
            for against in ("general", "python", "bindings"):
                for defer in (True, False):
                    self.assertIsNone(ds.record("p", "p.py", [], "/tmp/x", defer, 10, against))
        self.assertEqual(envs, [(None, None, None), ("0", None, None),
                                (None, None, None), (None, "0", None),
                                (None, None, "wait"), (None, None, "0")])

    def test_programs_listed(self):
        names = [n for n, _, _ in ds._programs()]
        self.assertIn("graph_break_mark_step", names)


if __name__ == "__main__":
    unittest.main()
