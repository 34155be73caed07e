"""What docs/pytorch-bridge.md says of the recorder's shapes matches the
recorder (issue 34 item 3: it said shapes of more than 4 dimensions fold,
long after the limit became 8)."""

import os
import re
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import cgtrace  # noqa: E402

BRIDGE = os.path.join(HERE, "..", "..", "..", "docs", "pytorch-bridge.md")


class BridgeDocTest(unittest.TestCase):
    def test_fold_limit_is_the_recorders(self):
        with open(BRIDGE, encoding="utf-8") as f:
            text = " ".join(f.read().split())
        said = re.findall(r"a shape of more than (\d+) folds", text)
        self.assertEqual(said, [str(cgtrace.MAX_DIMS)], "pytorch-bridge.md's fold limit")
        self.assertNotRegex(text, r"more than 4 dimensions fold")

    def test_journal_time_is_the_recorders(self):
        # (What the docs promise a program that dies: its calls written at
        # most Recorder.JOURNAL_MS after they returned.)
        from cgtrace import recorder
        readme = os.path.join(HERE, "..", "..", "..", "README.md")
        for path, pattern in ((BRIDGE, r"wait at most (\d+) ms"), (readme, r"at most (\d+) ms behind"),
                              (os.path.join(HERE, "..", "cgtrace", "__init__.py"), r"at most (\d+) ms after")):
            with open(path, encoding="utf-8") as f:
                text = " ".join(f.read().split())
            self.assertEqual(re.findall(pattern, text), [str(recorder.JOURNAL_MS)], path)

    def test_folding_keeps_elements(self):
        shape = list(range(1, cgtrace.MAX_DIMS + 3))
        folded = cgtrace.fit_shape(shape)
        self.assertEqual(len(folded), cgtrace.MAX_DIMS)
        n = 1
        for d in shape:
            n *= d
        m = 1
        for d in folded:
            m *= d
        self.assertEqual(n, m)


if __name__ == "__main__":
    unittest.main()
