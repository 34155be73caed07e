#!/usr/bin/env python3
"""recorder-instructions: what recording adds to a call of the fake-torch
loops of recorder-overhead.py --fake, in CPU instructions (valgrind's
callgrind), a count that does not move with the machine's load: on a
host shared with other programs the microseconds of two runs differ by
more than most changes to the recorder do.

    python3 tools/gpu/recorder-instructions.py [--fresh] [--baseline RECORDER] [--calls 1000]

Runs the loop four times under callgrind: recorded and unrecorded, each
with --calls and with twice that many calls after the same warm-up, so
that start-up, compile and the trace's writing at the end cancel out in
the differences. Prints the instructions per call unrecorded, recorded
and added (recorded - unrecorded), and the added ones as a multiple of
the unrecorded call. RECORDER: another recorder's package folder, as
recorder-overhead.py --baseline takes it; count a copy of this checkout's
(git archive HEAD traces/pytorch/cgtrace | tar -x -C /tmp/x) when it may
be edited meanwhile: each of the four runs loads the recorder anew, and
runs of two versions give a difference of nothing. Needs valgrind; the GPU loop
is timed by recorder-overhead.py (what a GPU call costs is not the CPU's
instructions alone)."""
import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def child(fresh, calls, baseline):
    """The measured program: the fake loop's warm-up, then `calls` calls
    recorded (calls > 0) or unrecorded (calls < 0, after an empty
    recording, so both start and write a recording alike)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("recorder_overhead", os.path.join(HERE, "recorder-overhead.py"))
    ro = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ro)
    record = ro.load_baseline(baseline).record if baseline else ro.cgtrace.record
    step, _, restore = ro.fake_workload(fresh)
    try:
        for _ in range(50):
            step()
        with tempfile.TemporaryDirectory() as d:
            with record(os.path.join(d, "t.cgt.jsonl")):
                for _ in range(max(calls, 0)):
                    step()
            for _ in range(max(-calls, 0)):
                step()
    finally:
        restore()


_COLLECTED = re.compile(r"Collected : (\d+)")


def instructions(fresh, calls, baseline, run=subprocess.run):
    """The instructions callgrind counted for one child run."""
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
           os.path.abspath(__file__), "--child", str(calls)]
    if fresh:
        cmd.append("--fresh")
    if baseline:
        cmd += ["--baseline", baseline]
    env = dict(os.environ, PYTHONHASHSEED="0")  # (set iteration orders the same in every run)
    p = run(cmd, capture_output=True, text=True, env=env)
    m = _COLLECTED.search(p.stderr or "")
    if p.returncode != 0 or m is None:
        raise SystemExit("recorder-instructions: %s failed (%d): %s" % (" ".join(cmd), p.returncode,
                                                                        (p.stderr or "")[-2000:]))
    return int(m.group(1))


def measure(fresh, calls, baseline=None, run=subprocess.run):
    """{off, on, added}: instructions per call, from the differences of
    runs of calls and 2*calls calls."""
    on = (instructions(fresh, 2 * calls, baseline, run) - instructions(fresh, calls, baseline, run)) / calls
    off = (instructions(fresh, -2 * calls, baseline, run) - instructions(fresh, -calls, baseline, run)) / calls
    return {"off": off, "on": on, "added": on - off}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--fresh", action="store_true", help="a new input at every call (else the steady loop)")
    p.add_argument("--calls", type=int, default=1000, help="calls of the shorter runs")
    p.add_argument("--baseline", metavar="RECORDER", help="count this recorder instead of this checkout's")
    p.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child is not None:
        child(a.fresh, a.child, a.baseline)
        return 0
    if a.calls < 1:
        p.error("--calls must be at least 1")
    r = measure(a.fresh, a.calls, a.baseline)
    print("%s%s: %.0f instructions a call unrecorded, %.0f recorded, %.0f added (%.1fx the unrecorded call)"
          % ("a new input each call" if a.fresh else "the same input (steady)",
             ", recorder %s" % a.baseline if a.baseline else "", r["off"], r["on"], r["added"],
             r["added"] / r["off"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
