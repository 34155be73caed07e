"""A loop with a new input at every call (issue 33 item 5): each new
tensor like the last one made for its slot is written from that record's
line (Session._tensor_record's template), which must be the line the
record dict gives."""

import json
import os
import sys
import unittest
from unittest import mock

import fake_torch as fake  # (puts the recorder on sys.path)

import cgtrace  # noqa: E402


def fresh_loop(path, n=24):
    """Calls of two functions: f on a static param and a new [64, 1024]
    input at every call (a data loader's batches), some bfloat16, the last
    ones of another shape (each new kind takes the dict path, then the
    template), g on f's output; a host read. Returns the trace's text and
    how many tensor records were written from a template."""
    cgt = sys.modules["torch._inductor.cudagraph_trees"]
    mgr = fake.CUDAGraphTreeManager()
    mgr.cache_replays = True
    f = mgr.add(0, static=[0])
    g = mgr.add(1)
    mgr.models[0] = lambda ins: [fake.Tensor([64, 1024])]
    mgr.models[1] = lambda ins: [fake.Tensor([64, 1024])]
    w = fake.Tensor([1024, 1024])
    with cgtrace.record(path) as rec:
        for i in range(n):
            cgt.mark_step_begin()
            fake._invocation()
            dtype = fake.bfloat16 if 8 <= i < 12 else fake.float32
            x = fake.Tensor([64, 1024], dtype=dtype)
            if i >= 16:
                x = fake.Tensor([32, 1024])
            y, = mgr._run([w, x], f)
            z, = mgr._run([y], g)
            if i == 5:
                z.item()
            del x, y, z
    assert rec.error is None, rec.error
    with open(path) as fh:
        return fh.read(), rec.session.counts["tensors"] - sum(1 for k in rec.session._tensor_lines if k[0] == "tensor")


class FreshInputTest(fake.FakeTorchTest):
    def test_template_lines_are_the_records_lines(self):
        on, templated = fake.at_one_line(fresh_loop, os.path.join(self.dir.name, "on.cgt.jsonl"))
        self.assertEqual(templated, 24 - 3)  # all but the first of each kind
        self.tearDown()
        self.setUp()
        with mock.patch.object(cgtrace.Session, "templates", False):
            off, _ = fake.at_one_line(fresh_loop, os.path.join(self.dir.name, "off.cgt.jsonl"))
        self.assertEqual(on.split("\n", 1)[1], off.split("\n", 1)[1])
        recs = [json.loads(x) for x in on.splitlines()[1:]]
        tensors = [r for r in recs if r["op"] == "tensor"]
        self.assertEqual(len(tensors), 24)
        self.assertEqual({r["init"] for r in tensors}, {"rand"})
        self.assertEqual({r.get("dtype", "float32") for r in tensors}, {"bfloat16", "float32"})


if __name__ == "__main__":
    unittest.main()
