"""The recorder's traces of a few programs against the stand-in for torch,
byte for byte, against files under testdata/: what a change to the
recorder's speed must leave alone (the goldens were written by the
recorder before its per-call path was made cheap). Each program mixes the
paths a steady loop takes (cached replays, names bound again, shared
expects) with the ones that break it (a new input, a dead output, a host
read, a config change, a re-record, a forward/backward pair).

    CGTRACE_UPDATE_GOLDEN=1 python3 -m unittest traces/pytorch/tests/test_recorder_golden.py

rewrites the files instead (then read the diff: it is the change in what
the recorder writes)."""

import json
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import fake_torch as fake  # noqa: E402  (puts the recorder on sys.path)

import cgtrace  # noqa: E402

GOLDEN = os.path.join(HERE, "testdata")
UPDATE = os.environ.get("CGTRACE_UPDATE_GOLDEN") == "1"


def steady_loop(mgr, cgt, n=40):
    """The overhead script's loop: three parameters, one input passed
    again, cached replay outputs; a new input at call 20, a host read of an
    output at call 25, an output kept past its successor at call 30."""
    fid = mgr.add(0, static=[0, 1, 2])
    params = [fake.Tensor([16, 16]) for _ in range(3)]
    x = fake.Tensor([4, 16])
    mgr.models[0] = lambda ins: [fake.Tensor([4, 16])]
    out = kept = None
    for i in range(n):
        cgt.mark_step_begin()
        fake._invocation()
        if i == 20:
            x = fake.Tensor([4, 16])
        out = mgr._run(params + [x], fid)
        if i == 25:
            out[0].item()
        if i == 30:
            kept = out
    del kept, out


def two_functions(mgr, cgt, n=12):
    """Two functions chained without steps (a child of the first), fresh
    outputs (no cache), a small input with values, a config change."""
    a = mgr.add(0)
    b = mgr.add(1)
    ind = sys.modules["torch._inductor.config"]
    for i in range(n):
        if i == 6:
            ind.triton.skip_cudagraph_warmup = True
        if i % 4 == 0:
            cgt.mark_step_begin()
        fake._invocation()
        y, = mgr._run([fake.Tensor([2, 2], values=[1.0, 2.0, 3.0, float(i)])], a)
        z, = mgr._run([y], b)
        del y
    del z


def forward_backward(mgr, cgt, n=6):
    """A training step as AOT autograd runs it (the fake test's shape), its
    forward's outputs cached by the tree."""
    w1, w2 = fake.Tensor([8, 8]), fake.Tensor([8, 8])
    fwd = mgr.add(2, mode="FORWARD", static=[0, 1], placeholders=["primals_1", "primals_2", "primals_3"])
    bwd = mgr.add(3, mode="BACKWARD", static=[0, 1],
                  placeholders=["primals_1", "primals_2", "primals_3", "relu", "tangents_1"])
    mgr.id_to_compile_id = {fwd: "0/0", bwd: "0/0"}
    mgr.models = {2: lambda ins: [fake.Tensor([4, 8]), ins[0], ins[1], ins[2], fake.Tensor([4, 8])],
                  3: lambda ins: [fake.Tensor([8, 8]), fake.Tensor([8, 8]), None]}
    for _ in range(n):
        cgt.mark_step_begin()
        fake._invocation()
        logits, *saved = mgr._run([w1, w2, fake.Tensor([4, 8])], fwd)
        grads = mgr._run(saved + [fake.Tensor([4, 8])], bwd)
        del saved, grads, logits


PROGRAMS = {"steady_loop": (steady_loop, True), "two_functions": (two_functions, False),
            "forward_backward": (forward_backward, True)}


class GoldenTest(unittest.TestCase):
    def setUp(self):
        self.saved = fake.install_fake_torch()
        fake.MarkStepBox.mark_step_counter = 0
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        fake.remove_fake_torch(self.saved)
        self.dir.cleanup()

    def check(self, name):
        program, cached = PROGRAMS[name]
        mgr = fake.CUDAGraphTreeManager()
        mgr.cache_replays = cached
        cgt = sys.modules["torch._inductor.cudagraph_trees"]
        path = os.path.join(self.dir.name, name + ".cgt.jsonl")
        with cgtrace.record(path) as rec:
            program(mgr, cgt)
        self.assertIsNone(rec.error)
        with open(path, encoding="utf-8") as fh:
            # (The srcs name this file by the path it was run from: the
            # golden holds its name alone.)
            got = fh.read().replace(json.dumps(HERE + os.sep)[1:-1], "")
        want_path = os.path.join(GOLDEN, name + ".cgt.jsonl")
        if UPDATE:
            os.makedirs(GOLDEN, exist_ok=True)
            tmp = want_path + ".tmp"
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.write(got)
            os.replace(tmp, want_path)
            return
        with open(want_path, encoding="utf-8") as fh:
            want = fh.read()
        if got != want:
            g, w = got.splitlines(), want.splitlines()
            for i, (a, b) in enumerate(zip(g, w)):
                if a != b:
                    self.fail("%s line %d:\n got  %s\n want %s" % (want_path, i + 1, a, b))
            self.fail("%s: %d lines, want %d" % (want_path, len(g), len(w)))

    def test_steady_loop(self):
        self.check("steady_loop")

    def test_two_functions(self):
        self.check("two_functions")

    def test_forward_backward(self):
        self.check("forward_backward")


if __name__ == "__main__":
    unittest.main()
