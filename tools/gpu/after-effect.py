#!/usr/bin/env python3
"""after-effect: which kind of work, done between two calls of the
new-input loop every `--every` calls as the recorder's queue is written at
its bound, slows the calls after it, and by how much (issue 33 item 5).

The recorder writes its queued calls at a bound (every 33rd call of a
new-input loop when this was written, session 26; every 65th since: the
bound is freshq._FQ_BOUND): that call cost some 100 us more than the
median one on the GPU, and the call after it some 20 to 40 us more
(recorder-overhead.py --by-path, "the call after a writing"), a cost of
the writing that shows in the next call: what the writing left in the
caches is not what torch's code needs. The work here is a batch of 32
calls', every 33rd call by default, as it was measured then. This times the
unrecorded loop (recorder-overhead.py's mlp3, or its stand-in with --fake)
with one kind of the writing's work injected after every `--every`th call,
each kind alone, in the same run: the text of a bound's records made (32
calls' lines, 17 KB), that text written to a file (os.write, as the
journal does) in the run's temporary folder and in /dev/shm, 400 objects
of 32 queued calls made and let go (the queued calls' objects the writing
frees), the same number of Python bytecodes without objects, and the
objects and the write together. Per kind: the work's own microseconds,
and what the injected call, the next call and the three after it take more
than the loop's median call.

    python3 tools/gpu/after-effect.py [--rounds 3] [--iters 2000] [--every 33]
    python3 tools/gpu/after-effect.py --fake   # no GPU: the stand-in's loop

Needs a CUDA GPU and PyTorch (or --fake); records nothing.
"""
import argparse
import importlib.util
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# One queued call's lines as the writer makes them (a tensor, the call,
# its expect and the dels), some 530 bytes (the new-input loop's trace
# has 637 B a call on the GPU).
_SRC = '{"file": "/home/user/projects/serving/examples/new_input_loop.py", "line": 127, "fn": "serve_batches"}'
_CALL_LINES = ('{"op": "tensor", "name": "x_%d", "shape": [64, 1024], "init": "rand", "seed": %d, "src": ' + _SRC
               + '}\n{"op": "call", "fn": "forward_0", "args": ["p0", "p1", "p2", "p3", "p4", "p5", "x_%d"], '
               '"out": ["y_%d"], "invocation": %d, "src": ' + _SRC + '}\n'
               '{"op": "expect", "action": "replay", "node": 3}\n'
               '{"op": "del", "names": ["y_%d"]}\n{"op": "del", "names": ["x_%d"]}')
_CALLS = 32  # the queued calls a batch holds (the bound's, when this was measured)


class _QueuedLike:
    """A queued call's shape: a dozen fields, most of them objects of its
    own (the recorder's _Queued with its ints, weak references, deaths)."""
    __slots__ = ("steps", "groups", "oid", "wr", "ptr", "cd", "name", "order", "vk", "inv", "spec", "src")


_PIECES = [_CALL_LINES % ((i,) * 7) for i in range(_CALLS)]


def make_text():
    """A bound's records as the recorder's flush makes them of its lines
    (joined, a line end added, encoded: 17 KB copied three times), the
    lines themselves made beforehand."""
    return ("\n".join(_PIECES) + "\n").encode("utf-8")


def make_and_free(base=0):
    """400 objects of 32 queued calls made, then let go."""
    q = []
    for i in range(_CALLS):
        t = _QueuedLike()
        k = base + i
        t.steps, t.oid, t.ptr, t.cd, t.order, t.inv = 1, 10**12 + k, 10**12 + 2 * k, 10**12 + 3 * k, 10**6 + k, k
        t.groups = {0: [(None, t)]}
        t.wr, t.name, t.vk = [k], "x_%d" % k, (t.cd, 0, (64, 1024), (1024, 1))
        t.spec, t.src = None, None
        q.append(t)
    for t in q:
        t.groups = None  # (the cycle through the deaths' pair broken, as the writer's)
    return len(q)


def bytecodes(n=400):
    """Python bytecodes, no objects kept: some 3,000 of them (about the
    recorder's Python at a bound)."""
    s = 0
    for i in range(n):
        s += i * i % 7
    return s


def kinds(folder):
    """[(name, work or None, cleanup)]: each kind of work injected, made
    here with its files in folder (and /dev/shm where there is one)."""
    fd = os.open(os.path.join(folder, "journal"), os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    shm_path = None
    if os.path.isdir("/dev/shm"):
        shm_path = os.path.join("/dev/shm", "cgtviz-after-effect-%d" % os.getpid())
    shm = os.open(shm_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND) if shm_path else None
    text = make_text()

    def write_file():
        os.write(fd, text)

    def write_shm():
        os.write(shm, text)

    def objects_and_write():
        make_and_free()
        os.write(fd, make_text())

    def cleanup():
        os.close(fd)
        if shm is not None:
            os.close(shm)
            os.unlink(shm_path)

    got = [("nothing", None), ("the text made (17 KB, 3 copies)", make_text),
           ("the text written to a file", write_file)]
    if shm is not None:
        got.append(("the text written to /dev/shm", write_shm))
    got += [("400 objects made and let go", make_and_free), ("Python bytecodes, no objects", bytecodes),
            ("the objects, then text made and written", objects_and_write)]
    return got, cleanup


def injected_loop(step, sync, iters, every, work):
    """Each of iters calls of step() timed, work() run after every
    `every`th one (inside that call's time, as the bound's writing is):
    (the calls' ns, the works' ns)."""
    ns = time.perf_counter_ns
    each, cost = [0] * iters, []
    sync()
    for i in range(iters):
        a = ns()
        step()
        if work is not None and i % every == every - 1:
            b = ns()
            work()
            cost.append(ns() - b)
        each[i] = ns() - a
    sync()
    return each, cost


def split(each, cost, every):
    """{median_us, work_us, injected_us, next_us, after3_us, mean_excess_us}:
    the loop's median call, the work's own median, and what the injected
    calls, the calls right after them and the three after those take more
    than the median call (medians of each), and the mean call's excess
    over the median one."""
    med = statistics.median(each)
    at = [t for i, t in enumerate(each) if i % every == every - 1]
    nxt = [t for i, t in enumerate(each) if i % every == 0 and i > 0]
    later = [t for i, t in enumerate(each) if 1 <= i % every <= 3 and i > every]
    us = lambda v: v / 1e3  # noqa: E731
    return {"median_us": us(med), "work_us": us(statistics.median(cost)) if cost else 0.0,
            "injected_us": us(statistics.median(at) - med) if at else 0.0,
            "next_us": us(statistics.median(nxt) - med) if nxt else 0.0,
            "after3_us": us(statistics.median(later) - med) if later else 0.0,
            "mean_excess_us": us(statistics.mean(each) - med)}


def workload(fake):
    """(step, sync, restore) of recorder-overhead.py's new-input loop."""
    spec = importlib.util.spec_from_file_location("recorder_overhead", os.path.join(HERE, "recorder-overhead.py"))
    ro = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ro)
    if fake:
        return ro.fake_workload(fresh=True)
    step, sync = ro.mlp_workload(fresh=True)
    return step, sync, lambda: None


def main(argv=None, out=None):
    out = out or sys.stdout
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--fake", action="store_true", help="the recorder tests' stand-in for torch, on CPU")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--iters", type=int, default=2000)
    p.add_argument("--every", type=int, default=33, help="work after every Nth call (a batch of 32 calls, and one)")
    p.add_argument("--warm", type=int, default=100)
    a = p.parse_args(argv)
    if a.rounds < 1 or a.iters < 2 * a.every or a.every < 2:
        p.error("--rounds at least 1, --every at least 2, --iters at least twice --every")
    if not a.fake:
        try:
            import torch
        except ImportError:
            print("after-effect: needs PyTorch and a CUDA GPU (or --fake)", file=sys.stderr)
            return 2
        if not torch.cuda.is_available():
            print("after-effect: no CUDA GPU here (or --fake)", file=sys.stderr)
            return 2
    step, sync, restore = workload(a.fake)
    try:
        for _ in range(a.warm):
            step()
        with tempfile.TemporaryDirectory() as d:
            got, cleanup = kinds(d)
            try:
                rows = {name: [] for name, _ in got}
                for _ in range(a.rounds):
                    for name, work in got:
                        rows[name].append(split(*injected_loop(step, sync, a.iters, a.every, work), a.every))
            finally:
                cleanup()
    finally:
        restore()
    print("%s: work after every %dth call; us, medians of %d rounds of %d calls (the injected call, the next "
          "and the three after: over the loop's median call)" % ("stand-in loop" if a.fake else "mlp3, a new input "
                                                                 "each call", a.every, a.rounds, a.iters), file=out)
    print("| work | its own us | the loop's median call | the injected call | the next call | each of the 3 after "
          "| the mean call over the median |", file=out)
    print("| --- | --- | --- | --- | --- | --- | --- |", file=out)
    for name, rs in rows.items():
        m = {k: statistics.median(r[k] for r in rs) for k in rs[0]}
        print("| %s | %.1f | %.1f | %+.1f | %+.1f | %+.1f | %+.2f |"
              % (name, m["work_us"], m["median_us"], m["injected_us"], m["next_us"], m["after3_us"],
                 m["mean_excess_us"]), file=out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
