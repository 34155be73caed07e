"""peer_shards.py splits a round alike for both modes and differently from
round to round."""

import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import peer_shards  # noqa: E402


class PeerShardsTest(unittest.TestCase):
    def test_same_round_same_shards(self):
        ids = ["f.py::K::t%d" % i for i in range(23)]
        a = peer_shards.shards(ids, 4, 1)
        self.assertEqual(a, peer_shards.shards(ids, 4, 1))
        self.assertEqual([len(p) for p in a], [6, 6, 6, 5])
        self.assertEqual(sorted(sum(a, [])), sorted(ids))
        self.assertNotEqual(a, peer_shards.shards(ids, 4, 2))

    def test_fewer_ids_than_shards(self):
        self.assertEqual(peer_shards.shards(["a::b"], 8, 1), [["a::b"]])

    def test_files(self):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        ids = os.path.join(d, "ids.txt")
        with open(ids, "w") as fh:
            fh.write("header line\nf.py::K::a\nf.py::K::b\nf.py::K::c\n\n3 tests collected\n")
        self.assertEqual(peer_shards.main(["--ids", ids, "--shards", "2", "--round", "5", "--out", os.path.join(d, "s")]), 0)
        got = []
        for k in (1, 2):
            with open(os.path.join(d, "s", "shard-%d.txt" % k)) as fh:
                got.append(fh.read().split())
        self.assertEqual(sorted(sum(got, [])), ["f.py::K::a", "f.py::K::b", "f.py::K::c"])
        self.assertEqual(got, peer_shards.shards(["f.py::K::a", "f.py::K::b", "f.py::K::c"], 2, 5))
        empty = os.path.join(d, "none.txt")
        open(empty, "w").close()
        with open(os.devnull, "w") as null:
            old, sys.stderr = sys.stderr, null
            try:
                self.assertEqual(peer_shards.main(["--ids", empty, "--shards", "2", "--round", "1", "--out", d]), 2)
            finally:
                sys.stderr = old


if __name__ == "__main__":
    unittest.main()
