"""pool_leak.py's parts that need no GPU: the live blocks of a memory
snapshot, and the referrer chain it prints."""

import io
import os
import sys
import types
import unittest
from contextlib import redirect_stderr

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import pool_leak  # noqa: E402


def fake_torch(segments):
    return types.SimpleNamespace(cuda=types.SimpleNamespace(memory_snapshot=lambda: segments))


class PoolLeakTest(unittest.TestCase):
    def test_live_blocks_of_the_graph_pools_only(self):
        segs = [
            {"segment_pool_id": (0, 0), "address": 0x1000, "blocks": [{"state": "active_allocated", "size": 512}]},
            {"segment_pool_id": (0, 1), "address": 0x8000, "blocks": [
                {"state": "inactive", "size": 512},
                {"state": "active_allocated", "size": 1024},
                {"state": "active_pending_free", "size": 512},
                {"state": "active_allocated", "size": 512},
            ]},
        ]
        self.assertEqual(pool_leak.live_blocks(fake_torch(segs)), [(0x8200, 1024), (0x8800, 512)])

    def test_chain_names_the_holders(self):
        class Held:
            pass
        obj = Held()
        holder = {"kept": obj}
        err = io.StringIO()
        with redirect_stderr(err):
            pool_leak.chain(obj, set(), limit=1)
        self.assertIn("<- dict of 1: ['kept']", err.getvalue())
        self.assertNotIn("list of", err.getvalue())  # (its own lists are never shown)
        del holder

    def test_chain_says_when_no_python_object_holds_it(self):
        err = io.StringIO()
        with redirect_stderr(err):
            pool_leak.chain(object(), set())
        self.assertIn("no Python object refers to it: C++ holds it", err.getvalue())

    def test_owners_names_the_graph_that_made_a_block(self):
        class Node:
            pass
        kept = Node()
        rows = [(3, 1, False, [(0, 0x8200, 16, True), (1, 0x9000, 16, False)]),
                (4, 2, True, [(0, 0x8800, 16, False)])]
        refs = [lambda: kept, lambda: None]
        self.assertEqual(pool_leak.owners(rows, refs, 0x8200, 1024),
                         ["output 0 (16 bytes) of node 3, function 1: NOT reached from the roots, cached, node alive after the reset"])
        self.assertIn("no node's output", pool_leak.owners(rows, refs, 0xa000, 512)[0])


if __name__ == "__main__":
    unittest.main()
