"""Random programs against the stand-in, recorded by every path of the
recorder at once and by the general path alone: the same trace, byte for
byte, and the same session state (issue 33 item 5). The recorder's short
paths (the steady replay deferred, the fresh path, _fresh_call and its
queue, the lean fresh path, the rebound replay) each promise the general
path's records; the hand-written scenarios of test_recorder_fresh and
test_recorder_deferred test what their authors thought of, these mixes
of a training loop's events what they did not. Half the programs' forward
hands out an activation saved for the backward besides its output, which
dies once the backward ran: its replays bind some outputs anew and rename
the others (_fast_after's rebound replays); the other half's forward has
one output, whose calls may queue (freshq.py)."""

import os
import random
import sys
import unittest
from contextlib import nullcontext
from unittest import mock

import fake_torch as fake  # (puts the recorder on sys.path)

import cgtrace  # noqa: E402
from cgtrace import fastpath  # noqa: E402
from cgtrace.freshq import _FQ_BOUND  # noqa: E402
from test_recorder_fresh import settled_state  # noqa: E402

# What a program does at each of its steps, with how often: mostly a
# forward on a new batch, a backward on its output, replays on the same
# input, and now and then everything that sends a call another way.
_OPS = (("fwd_new", 30), ("bwd", 16), ("fwd_same", 8), ("other_fn", 4), ("drop_out", 4), ("keep_in", 3),
        ("release", 3), ("keep_grads", 3), ("drop_grads", 3), ("read", 3), ("die_inside", 3), ("shape", 2),
        ("steps", 3), ("knob", 1), ("fail", 1), ("rerecord", 1), ("steps64", 1), ("reset", 1))


# An inference loop's mix: forwards on new batches in long runs (the
# queue's, and the lean fresh path's), the rest as rare as above.
_QUEUE_OPS = tuple((o, {"fwd_new": 80, "bwd": 2, "keep_grads": 1}.get(o, w)) for o, w in _OPS)
# Longer runs still: the queue written at its bound (its last call kept
# queued) every _FQ_BOUND + 1 calls, the rare events falling anywhere
# about it (the forwards' weight and the programs' length grow with the
# bound: as many runs a program, as many of them past the bound).
_LONG_QUEUE_OPS = tuple((o, {"fwd_new": 28 * _FQ_BOUND, "bwd": 2, "keep_grads": 1}.get(o, w)) for o, w in _OPS)
_LONG_QUEUE_N = 400 * _FQ_BOUND // 32


def program(seed, n=160, mix=_OPS):
    """The ops of program seed: n of them, drawn by their weights in mix."""
    r = random.Random(seed)
    names = [o for o, _ in mix]
    weights = [w for _, w in mix]
    return [(op, r.randrange(4)) for op in r.choices(names, weights, k=n)]


def run(ops, path, saves=False, engine=False):
    """Runs ops against a new tree of three functions (a forward on two
    static parameters and one input, handing out its output, and with
    saves an activation saved for its backward too; the backward on that
    activation, or on the output, and a new gradient, handing out three
    gradients, called with engine in a thread of the library's own, as
    autograd's engine runs a GPU's backward: no src, the forward then
    handing out its weight as is too, as a training forward returns the
    inputs it saves; another function),
    recorded to path. Returns the trace's lines after its header, the
    session's state at the end and the recorder's counts of its paths."""
    cgt = sys.modules["torch._inductor.cudagraph_trees"]
    ind = sys.modules["torch._inductor.config"]
    mgr, fwd, bwd = fake.training_tree(fwd_outs=1 + saves, saves_weight=engine)
    engine = fake.AutogradEngine() if engine else None
    other = mgr.add(2)
    mgr.models[2] = lambda ins: [fake.Tensor([4])]
    w, b = fake.Tensor([8, 8]), fake.Tensor([8])
    with cgtrace.record(path) as rec:
        x = y = saved = grads = z = None
        kept = []

        def call(ins, fid):
            try:
                if fid is bwd and engine is not None:
                    return engine.run(mgr._run, ins, fid)
                return mgr._run(ins, fid)
            except RuntimeError:
                return None

        for op, arg in ops:
            if op in ("fwd_new", "fwd_same", "die_inside", "shape"):
                cgt.mark_step_begin()
                fake._invocation()
                if op == "die_inside":
                    got = call([w, b, fake.Tensor([16, 8])], fwd)  # (only the tree's list holds it)
                else:
                    if op != "fwd_same" or x is None:
                        x = fake.Tensor([16, 8] if op != "shape" else [32, 8])
                    got = call([w, b, x], fwd)
                if got is not None:
                    y, saved = got[:2] if saves else (got[0], got[0])
                mgr.fail.discard(fwd.id)
            elif op == "bwd" and saved is not None:
                fake._invocation()
                got = call([saved, fake.Tensor([16, 8])], bwd)
                grads = got if arg == 0 else None  # (mostly dropped at once, as zero_grad lets go)
                if arg != 1:
                    saved = None  # (autograd lets the saved activation go once the backward ran)
            elif op == "other_fn":
                cgt.mark_step_begin()
                z = call([fake.Tensor([4])], other)
            elif op == "drop_out":
                y = saved = None
            elif op == "keep_in" and x is not None:
                kept.append(x)
            elif op == "release":
                kept = []
            elif op == "keep_grads" and saved is not None:
                grads = call([saved, fake.Tensor([16, 8])], bwd)
            elif op == "drop_grads":
                grads = None
            elif op == "read" and y is not None:
                y.item()
            elif op == "steps":
                for _ in range(arg):
                    cgt.mark_step_begin()
            elif op == "knob":
                ind.triton.skip_cudagraph_warmup = not ind.triton.skip_cudagraph_warmup
            elif op == "fail" and mgr.calls.get(fwd, 0) >= 2:
                mgr.fail.add(fwd.id)  # (the next forward raises; once recorded: the stand-in's tree needs a root)
            elif op == "rerecord":
                mgr.calls[fwd] = 1  # (the tree records the forward again at its next call)
            elif op == "steps64":
                for _ in range(64):
                    cgt.mark_step_begin()
            elif op == "reset":
                cgt.reset_cudagraph_trees()
        x = y = saved = grads = z = None
        kept = []
        state = settled_state(rec)
    if engine is not None:
        engine.stop()
    counts = {"short": rec.short_calls, "fresh": rec.fresh_calls, "lean": rec.lean_fresh_calls,
              "queued": rec.queued_fresh_calls, "armed": rec.lean_queued_calls, "rebound": rec.rebound_calls,
              "kept": rec.kept_queued}
    assert rec.error is None, rec.error
    with open(path) as fh:
        return fh.read().split("\n")[1:], state, counts  # (the header names the file)


class RandomProgramsTest(fake.FakeTorchTest):
    def recorded(self, ops, name, saves, checks=None, engine=False, env=None, **patch):
        """run's results, recorded with the Recorder's attributes patch,
        the environment's variables env and, given checks, those lean-path
        checks (fastpath.py's Python ones: else the C module where it was
        built)."""
        self.tearDown()  # (the stand-in's invocation count and step counter from 0 again)
        self.setUp()
        with mock.patch.multiple(cgtrace.Recorder, **(patch or {"_defer": True})), \
                mock.patch.dict(os.environ, env or {}), \
                mock.patch.object(fastpath, "load", return_value=(checks, "test")) if checks else nullcontext():
            return fake.at_one_line(run, ops, os.path.join(self.dir.name, name), saves, engine)

    def test_every_path_writes_what_the_general_path_writes(self):
        self.against_general(_OPS, int(os.environ.get("CGTRACE_RANDOM_PROGRAMS", "24")), lambda seed: seed % 2 == 1)

    def test_backwards_in_autograds_thread_write_what_the_general_path_writes(self):
        # (The backward called as torch's engine calls a GPU's, in its
        # device thread: no src, which the fresh paths take where no
        # frame is the program's.)
        totals = self.against_general(_OPS, int(os.environ.get("CGTRACE_RANDOM_PROGRAMS", "24")) // 2,
                                      lambda seed: seed % 2 == 1, first=300, engine=True,
                                      paths=("short", "fresh", "lean", "rebound"))  # (no forward of one output)
        self.assertGreater(totals["fresh"], 700)  # (880 here; 242 with no partial plans)
        self.assertGreater(totals["short"], 800)  # (1013 here; 175 with no mixed plans)

    def test_queued_calls_write_what_the_general_path_writes(self):
        # (Forwards of one output on new batches in long runs: the lean
        # fresh path takes thousands of calls, among the rare events.)
        totals = self.against_general(_QUEUE_OPS, int(os.environ.get("CGTRACE_RANDOM_PROGRAMS", "24")) // 2,
                                      lambda seed: False, first=1000, n=300)
        self.assertGreater(totals["armed"], 1000)

    def test_long_queues_write_what_the_general_path_writes(self):
        totals = self.against_general(_LONG_QUEUE_OPS, max(2, int(os.environ.get("CGTRACE_RANDOM_PROGRAMS", "24")) // 6),
                                      lambda seed: False, first=5000, n=_LONG_QUEUE_N, paths=("queued", "armed", "kept"))
        self.assertGreater(totals["kept"], 20)

    def against_general(self, mix, programs, saves_of, first=0, n=160,
                        paths=("short", "fresh", "lean", "queued", "armed", "rebound"), engine=False):
        """Each of programs programs drawn from mix (from seed first, of n
        steps, with saves_of(seed) for run's saves) recorded four ways
        and compared (the general path's, the queue's without the lean fresh
        path, with the lean paths' checks in Python where the recorder
        took C's, and with every call's records written to the journal as
        the call ends, CGTRACE_JOURNAL_MS=0, where they wait for a bound
        otherwise), each of paths taken by them; returns the recorder's path
        counts over them all."""
        totals = {}
        for seed in range(first, first + programs):
            ops = program(seed, n, mix)
            saves = saves_of(seed)  # (a forward of one output, whose calls may queue; or of two)
            with self.subTest(seed=seed):
                on, on_state, counts = self.recorded(ops, "on.cgt.jsonl", saves, engine=engine)
                for k, v in counts.items():
                    totals[k] = totals.get(k, 0) + v
                for way, checks, env, patch in (
                        ("general", None, None, {"_defer": False, "_fresh_path": False, "_fast": False}),
                        ("unarmed", None, None, {"_fresh_armed": False}),
                        ("python checks", fastpath, None, {}),
                        ("written at every call", None, {"CGTRACE_JOURNAL_MS": "0", "CGTRACE_JOURNAL": "1"}, {})):
                    other, other_state, _ = self.recorded(ops, way + ".cgt.jsonl", saves, checks, engine, env,
                                                          **patch)
                    self.assertEqual(len(on), len(other), way)
                    for i, (a, b) in enumerate(zip(on, other)):
                        self.assertEqual(a, b, "%s: line %d" % (way, i + 2))
                    self.assertEqual(on_state, other_state, way)
        # Every short path of paths was taken, in these programs
        # together: the comparison with the general path
        # (CGTRACE_DEFER=0's: none of them) covers each.
        for k in paths:
            self.assertGreater(totals.get(k, 0), 10, (k, totals))
        return totals


if __name__ == "__main__":
    unittest.main()
