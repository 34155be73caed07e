"""tools/gpu/peer-suite-run.sh refuses what it cannot run, before it
starts anything on the GPU machine: a missing test file, a missing
peer-suite, a cgtviz that is not executable, wrong arguments (exit 2, the
cause named)."""
import os
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "peer-suite-run.sh")


def run(args, env=None):
    p = subprocess.run(["bash", SCRIPT] + args, capture_output=True, text=True,
                       env=dict(os.environ, **(env or {})), timeout=60)
    return p.returncode, p.stderr


class ArgumentsTest(unittest.TestCase):
    def test_refusals(self):
        with tempfile.TemporaryDirectory() as d:
            test_file = os.path.join(d, "test_cudagraph_trees.py")
            open(test_file, "w").close()
            suite = os.path.join(d, "suite")
            os.mkdir(suite)
            open(os.path.join(suite, "conftest.py"), "w").close()
            exe = os.path.join(d, "cgtviz")
            with open(exe, "w") as fh:
                fh.write("#!/bin/sh\n")
            cases = [
                ([], {}, "usage:"),
                ([test_file], {}, "usage:"),
                ([os.path.join(d, "none.py"), d, exe], {"PEER_SUITE": suite}, "no test file"),
                ([test_file, d, exe], {"PEER_SUITE": os.path.join(d, "nosuite")}, "peer-suite not found"),
                ([test_file, d, exe], {"PEER_SUITE": suite}, "is not an executable cgtviz"),
            ]
            for args, env, want in cases:
                code, err = run(args, env)
                self.assertEqual(code, 2, (args, err))
                self.assertIn(want, err, args)


if __name__ == "__main__":
    unittest.main()
