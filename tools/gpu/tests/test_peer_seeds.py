"""peer_seeds.py tells a test that fails by hash seed in both modes from
one that recording changes, running a stand-in for pytest that decides
each run's outcome from PYTHONHASHSEED and PEER_RECORD."""

import io
import os
import shutil
import sys
import tempfile
import textwrap
import unittest
from contextlib import redirect_stdout

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import peer_seeds  # noqa: E402

# Called as `FAKE -m pytest FILE::K::TEST ARGS... --junitxml X`: the test
# named "seedy" fails under even seeds whatever the mode; "touchy" fails
# only recorded under seed 3; "fine" always passes; "crash" writes nothing.
FAKE = textwrap.dedent("""\
    import os, sys
    tid = sys.argv[3]
    name = tid.rsplit("::", 1)[1]
    xml = sys.argv[sys.argv.index("--junitxml") + 1]
    seed = int(os.environ["PYTHONHASHSEED"])
    rec = os.environ["PEER_RECORD"] == "1"
    if name == "crash":
        sys.exit(139)
    fail = (name == "seedy" and seed % 2 == 0) or (name == "touchy" and rec and seed == 3)
    inner = "<failure message='x'>x</failure>" if fail else ""
    with open(xml, "w") as fh:
        fh.write("<testsuites><testsuite><testcase classname='f.K' name='%s'>%s</testcase></testsuite></testsuites>" % (name, inner))
    """)


class PeerSeedsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir)
        self.fake = os.path.join(self.dir, "fake.py")
        with open(self.fake, "w") as fh:
            fh.write(FAKE)
        # The stand-in runs as `python3 fake.py -m pytest ...`: argv[3] is the id.
        self.python = os.path.join(self.dir, "py")
        with open(self.python, "w") as fh:
            fh.write("#!/bin/sh\nexec %s %s \"$@\"\n" % (sys.executable, self.fake))
        os.chmod(self.python, 0o755)

    def run_main(self, tests, seeds="1-4"):
        out = io.StringIO()
        with redirect_stdout(out):
            code = peer_seeds.main(["--file", "f.py", "--klass", "K", "--tests"] + tests +
                                   ["--seeds", seeds, "--jobs", "4", "--out", os.path.join(self.dir, "o"),
                                    "--python", self.python])
        return code, out.getvalue()

    def test_seed_dependent_is_not_recordings(self):
        code, out = self.run_main(["seedy", "fine"])
        self.assertEqual(code, 0, out)
        self.assertIn("  2      failed                   failed", out)
        self.assertIn("=> fails unrecorded and recorded alike under seeds 2,4", out)
        self.assertIn("=> passes under every seed, unrecorded and recorded", out)

    def test_changed_by_recording(self):
        code, out = self.run_main(["touchy"])
        self.assertEqual(code, 1, out)
        self.assertIn("  3      passed                   failed", out)
        self.assertIn("=> changed by recording under seeds 3", out)

    def test_crash_is_missing_in_both(self):
        code, out = self.run_main(["crash"], seeds="5")
        self.assertEqual(code, 0, out)
        self.assertIn("  5      missing                  missing", out)
        self.assertIn("=> fails unrecorded and recorded alike under seeds 5", out)

    def test_parse_seeds(self):
        self.assertEqual(peer_seeds.parse_seeds("1-3,7"), [1, 2, 3, 7])
        with self.assertRaises(ValueError):
            peer_seeds.parse_seeds(",")


if __name__ == "__main__":
    unittest.main()
