"""tools/gpu/cpp-check.py on a machine without torch: it says so and
exits 2 (the module is built against the installed torch), where it
ended in an ImportError's traceback. Its checks themselves run on the
GPU machine (docs/gpu-runs)."""

import contextlib
import io
import sys
import unittest
from unittest import mock

import gputool  # (tools/gpu/tests: the tool scripts as modules)

cc = gputool.load("cpp-check.py")


class NoTorchTest(unittest.TestCase):

    def test_says_why_and_exits_2(self):
        out = io.StringIO()
        with mock.patch.dict(sys.modules, {"torch": None}), mock.patch.object(sys, "argv", ["cpp-check.py",
                                                                                          "--no-time"]), \
                contextlib.redirect_stdout(out):
            status = cc.main()
        self.assertEqual(status, 2)
        self.assertIn("cpp-check: no torch here", out.getvalue())


if __name__ == "__main__":
    unittest.main()
