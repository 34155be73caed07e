"""A followed trace (recorder.py's stream): written as the program runs,
and holding what the whole-file trace holds."""

import json
import os
import sys
import tempfile
import unittest
import warnings

# (fake_torch first: it puts the recorder on sys.path)
from fake_torch import (at_one_line, CUDAGraphTreeManager, MarkStepBox, Tensor, install_fake_torch, remove_fake_torch)

import cgtrace  # noqa: E402  (after fake_torch)


class FollowTest(unittest.TestCase):
    """A followed trace is written as the program runs, one flush per
    event, and holds what the whole-file trace holds: the defs just before
    the calls that need them, the counts as a closing note."""

    def setUp(self):
        self.saved = install_fake_torch()
        MarkStepBox.mark_step_counter = 0
        self.dir = tempfile.TemporaryDirectory()
        self.cgt = sys.modules["torch._inductor.cudagraph_trees"]

    def tearDown(self):
        remove_fake_torch(self.saved)
        self.dir.cleanup()

    def program(self, path, follow, seen=None):
        mgr = CUDAGraphTreeManager()
        mgr.cache_replays = True
        fa, fb = mgr.add(0, static=[0]), mgr.add(1)
        mgr.models[0] = lambda ins: [Tensor([2, 4])]
        w = Tensor([4, 4])
        with cgtrace.record(path, name="followed", follow=follow) as rec:
            for i in range(6):
                self.cgt.mark_step_begin()
                y, = mgr._run([w, Tensor([2, 4])], fa)
                if seen is not None and i == 0:
                    seen.append(self.lines(path))
                z = mgr._run([y], fb)
                if i == 3:
                    y.item()
                del y, z
        self.assertIsNone(rec.error)

    @staticmethod
    def lines(path):
        with open(path, encoding="utf-8") as fh:
            return [json.loads(x) for x in fh if x.strip()]

    def test_streamed_trace_holds_the_same_records(self):
        whole = os.path.join(self.dir.name, "whole.cgt.jsonl")
        streamed = os.path.join(self.dir.name, "streamed.cgt.jsonl")
        at_one_line(self.program, whole, False)
        MarkStepBox.mark_step_counter = 0
        seen = []
        at_one_line(self.program, streamed, True, seen)
        # written while the program ran: the first call, its expect, and
        # the del of its input, which died inside it
        first = seen[0]
        self.assertEqual([r["op"] for r in first[1:]], ["step", "param", "tensor", "def", "call", "expect", "del"])
        self.assertEqual(first[-1]["names"], ["in"])
        w, st = self.lines(whole), self.lines(streamed)
        self.assertEqual(st[0]["meta"]["streamed"], True)
        self.assertNotIn("recorded", st[0]["meta"])
        body = [r for r in st[1:] if r["op"] not in ("def", "note")]
        self.assertEqual(body, [r for r in w[1:] if r["op"] not in ("def", "note")])
        self.assertEqual([r for r in st[1:] if r["op"] == "def"], [r for r in w[1:] if r["op"] == "def"])
        # each def lands right before the first call of its function
        for i, r in enumerate(st[1:], start=1):
            if r["op"] == "call":
                self.assertIn(r["fn"], [d["fn"] for d in st[1:i] if d["op"] == "def"])
        note = st[-1]["text"]
        self.assertTrue(note.startswith("cgtrace recorded: "), note)
        self.assertEqual(json.loads(note[len("cgtrace recorded: "):])["calls"], w[0]["meta"]["recorded"]["calls"])
        import test_recorded_examples
        self.assertEqual(test_recorded_examples.check_trace(streamed), [])

    @unittest.skipUnless(hasattr(os, "mkfifo"), "no named pipes here")
    def test_named_pipe_is_followed(self):
        """A named pipe is streamed to without being asked: a reader gets
        the records of a call before the recording ends."""
        import threading
        fifo = os.path.join(self.dir.name, "trace.pipe")
        os.mkfifo(fifo)
        got, first_call = [], threading.Event()

        def reader():
            with open(fifo, encoding="utf-8") as fh:
                for line in fh:
                    got.append(json.loads(line))
                    if got[-1].get("op") == "call":
                        first_call.set()

        t = threading.Thread(target=reader, daemon=True)
        t.start()
        mgr = CUDAGraphTreeManager()
        fid = mgr.add(0)
        with cgtrace.record(fifo) as rec:
            self.assertTrue(rec.follow)
            mgr._run([Tensor([2])], fid)
            self.assertTrue(first_call.wait(10), "no call record reached the reader during the recording")
            mgr._run([Tensor([2])], fid)
        t.join(10)
        self.assertIsNone(rec.error)
        self.assertEqual([r["op"] for r in got if r.get("op") == "call"], ["call", "call"])
        self.assertEqual(got[0]["cgtviz"], 1)

    def test_unopenable_stream_falls_back_to_the_whole_file(self):
        path = os.path.join(self.dir.name, "no", "such", "dir", "t.cgt.jsonl")
        mgr = CUDAGraphTreeManager()
        fid = mgr.add(0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with cgtrace.record(path, follow=True) as rec:
                out = mgr._run([Tensor([2])], fid)
        said = [str(w.message) for w in caught]
        self.assertEqual(len(said), 2, said)
        self.assertIn("cannot stream the trace", said[0])
        self.assertIn("could not write the trace", said[1])  # the directory is missing for that too
        self.assertIn("writing", rec.error)
        self.assertEqual(out[0].shape, (2,))

    def test_environment_asks_for_follow(self):
        os.environ["CGTRACE_FOLLOW"] = "1"
        try:
            rec = cgtrace.record(os.path.join(self.dir.name, "e.cgt.jsonl"))
        finally:
            del os.environ["CGTRACE_FOLLOW"]
        self.assertTrue(rec.follow)
        self.assertFalse(cgtrace.record(os.path.join(self.dir.name, "e.cgt.jsonl")).follow)


if __name__ == "__main__":
    unittest.main()
