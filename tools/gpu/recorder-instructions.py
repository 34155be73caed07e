#!/usr/bin/env python3
"""recorder-instructions: what recording adds to a call of the fake-torch
loops of recorder-overhead.py --fake, in CPU instructions (valgrind's
callgrind), a count that does not move with the machine's load: on a
host shared with other programs the microseconds of two runs differ by
more than most changes to the recorder do.

    python3 tools/gpu/recorder-instructions.py [--fresh | --train] [--baseline RECORDER] [--calls 1000]

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
instructions alone).

    python3 tools/gpu/recorder-instructions.py --cold [--fresh] [--calls 300]
    python3 tools/gpu/recorder-instructions.py --cold --fresh --calls 300 --by-function 30

also counts the last-level cache misses a call adds, with a buffer of
twice the (simulated, 1 MiB) last-level cache read between two calls:
what torch's own code does between two of a real program's calls (Dynamo's
guards, the AOT and Inductor wrappers, the driver), so that the recorder's
objects and code are cold at every call. On a GPU host that is most of
what recording costs: the CPU stand-in with its caches emptied between
calls loses about what the H200 loses (a new input a call: about 100 us
added with an 8 MiB buffer read between calls on the 16 MiB L3 of the
development machine, 106 us on the H200 on 2026-12-05, about 50 us with
warm caches: recorder-overhead.py --fake --evict-mb). The misses are not a time (the CPU overlaps them, and
prefetches), but they do not move with the machine's load as the
microseconds do, and fewer of them is what a faster recorder on a GPU
host needs (issue 33 item 5).

--by-function N keeps the four runs' profiles and lists the N functions
whose own counts recording adds to most, a call: the C of the recorder's
modules and of CPython (PyObject_GetAttr's type lookups, a dict's, the
allocator's), with the Python code of both as the interpreter's loop. It
is how session 19 found that a lean call's largest data misses were the
type lookups of PyObject_GetAttr on the recorder's own slotted objects
(BENCHMARKS.md)."""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))


# The simulated caches of --cold (valgrind's size,associativity,line):
# a last-level cache small enough that reading twice its size between
# calls stays cheap under the simulation.
_LL_BYTES = 1 << 20
_CACHES = ["--I1=32768,8,64", "--D1=32768,8,64", "--LL=%d,16,64" % _LL_BYTES]


def child(fresh, calls, baseline, evict=0, train=False):
    """The measured program: the fake loop's warm-up, then `calls` calls
    recorded (calls > 0) or unrecorded (calls < 0, after an empty
    recording, so both start and write a recording alike); evict: the
    bytes read between two calls (--cold); train: the training step's
    loop (each "call" a step of two tree calls)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("recorder_overhead", os.path.join(HERE, "recorder-overhead.py"))
    ro = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ro)
    record = ro.load_baseline(baseline).record if baseline else ro.cgtrace.record
    step, _, restore = ro.fake_workload(fresh, train)
    step = ro.evicting(step, evict)
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


_COLLECTED = re.compile(r"Collected : ([\d ]+)")
# The names of the events counted, in the order Collected gives them
# (with --cache-sim=yes, valgrind 3.19: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr
# DLmw). Read from the run itself: up to session 22 the order was assumed
# (Ir I1mr ILmr Dr ...), and the "last-level misses" were Dw + D1mw + DLmw,
# ten times the true count (BENCHMARKS.md, session 23).
_EVENT_NAMES = re.compile(r"Events\s*: ([\w ]+)")
_LL_MISSES = ("ILmr", "DLmr", "DLmw")


def counts(fresh, calls, baseline, cold=False, run=subprocess.run, train=False, out=None):
    """callgrind's counts for one child run: {"Ir": instructions}, and
    with cold every cache event (the last-level misses: ILmr, DLmr,
    DLmw); out: the file callgrind writes its profile to (by_function)."""
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=%s" % (out or "/dev/null")]
    if cold:
        cmd += ["--cache-sim=yes"] + _CACHES
    cmd += [sys.executable, os.path.abspath(__file__), "--child", str(calls)]
    if fresh:
        cmd.append("--fresh")
    if train:
        cmd.append("--train")
    if cold:
        cmd += ["--evict", str(2 * _LL_BYTES)]
    if baseline:
        cmd += ["--baseline", baseline]
    # (set iteration orders the same in every run; and no C++ reads: the
    # stand-in torch has none to build, and a recording that tried would
    # start a build in the background whose thread, taking the GIL
    # between calls, counted 7k instructions a call more in one recorder
    # than in another; and the journal's calls written by their bounds in
    # calls only: under valgrind a call takes some 50 times its time, so
    # Recorder.JOURNAL_MS's 20 ms would write them every few calls, as
    # no host runs this loop, and count a flush where a call has none)
    env = dict(os.environ, PYTHONHASHSEED="0", CGTRACE_CPP="0", CGTRACE_JOURNAL_MS="600000")
    p = run(cmd, capture_output=True, text=True, env=env)
    m = _COLLECTED.search(p.stderr or "")
    if p.returncode != 0 or m is None:
        raise SystemExit("recorder-instructions: %s failed (%d): %s" % (" ".join(cmd), p.returncode,
                                                                        (p.stderr or "")[-2000:]))
    vals = list(map(int, m.group(1).split()))
    names = _EVENT_NAMES.search(p.stderr)
    names = names.group(1).split() if names is not None else ["Ir"]
    if len(names) != len(vals) or names[0] != "Ir":
        raise SystemExit("recorder-instructions: callgrind counted %s, events %s" % (m.group(1).strip(), names))
    got = dict(zip(names, vals))
    if cold and not all(e in got for e in _LL_MISSES):
        raise SystemExit("recorder-instructions: callgrind counted %s, not the cache events" % " ".join(names))
    return got


def measure(fresh, calls, baseline=None, run=subprocess.run, cold=False, train=False, folder=None):
    """{off, on, added}: instructions per call, from the differences of
    runs of calls and 2*calls calls; with cold also {misses_off,
    misses_on, misses_added}: the last-level cache misses a call. folder:
    each run's profile is kept there (profile_path), for by_function."""
    runs = {n: counts(fresh, n, baseline, cold, run, train, profile_path(folder, n) if folder else None)
            for n in (2 * calls, calls, -2 * calls, -calls)}

    def per_call(events, sign):
        return sum(runs[sign * 2 * calls][e] - runs[sign * calls][e] for e in events) / calls

    on, off = per_call(("Ir",), 1), per_call(("Ir",), -1)
    r = {"off": off, "on": on, "added": on - off}
    if cold:
        ll = _LL_MISSES
        r["misses_on"], r["misses_off"] = per_call(ll, 1), per_call(ll, -1)
        r["misses_added"] = r["misses_on"] - r["misses_off"]
    return r


def profile_path(folder, n):
    """Where the run of n calls (negative: unrecorded) keeps its profile."""
    return os.path.join(folder, "callgrind.%s%d.out" % ("on" if n > 0 else "off", abs(n)))


def _row(events):
    """A callgrind_annotate row: each of `events` columns a count (or "."
    for none) with its share where it prints one, then the function."""
    return re.compile(r"^\s*" + r"([\d,]+|\.)\s+(?:\([^)]*\)\s+)?" * events + r"(\S.*)$")


# The rows of --by-function: with --cold Ir and the three last-level
# misses, without Ir alone.
_ROWS = {True: _row(4), False: _row(1)}


def function_events(path, run=subprocess.run, cold=True):
    """{function: [Ir, ILmr, DLmr, DLmw]} of one profile, each function's
    own (callgrind_annotate --inclusive=no), its recursion levels and the
    library it is in merged into one name ("file:function"). Without cold
    the profile has instructions only: the misses are 0."""
    show = "Ir,ILmr,DLmr,DLmw" if cold else "Ir"
    p = run(["callgrind_annotate", "--inclusive=no", "--threshold=100", "--show=" + show, path],
            capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit("recorder-instructions: callgrind_annotate %s failed: %s" % (path, (p.stderr or "")[-500:]))
    got = {}
    for line in p.stdout.splitlines():
        m = _ROWS[cold].match(line)
        if m is None or "PROGRAM TOTALS" in line:
            continue
        *counts, name = m.groups()
        vals = [0 if v == "." else int(v.replace(",", "")) for v in counts]
        vals += [0] * (4 - len(vals))
        name = re.sub(r" \[[^\]]*\]$", "", name.strip())
        name = re.sub(r"'\d+", "", name).rsplit("/", 1)[-1]
        got[name] = [a + b for a, b in zip(got.get(name, [0, 0, 0, 0]), vals)]
    return got


def by_function(folder, calls, run=subprocess.run, cold=True):
    """Per function, what recording adds to a call (the runs' differences,
    as measure takes them, from the profiles measure kept in folder):
    rows (added [Ir, ILmr, DLmr, DLmw], function), the most last-level
    misses first (then the most instructions)."""
    ev = {n: function_events(profile_path(folder, n), run, cold) for n in (2 * calls, calls, -2 * calls, -calls)}
    names = set().union(*ev.values())
    rows = []
    for f in names:
        def per_call(sign):
            a, b = ev[sign * 2 * calls].get(f, [0] * 4), ev[sign * calls].get(f, [0] * 4)
            return [(x - y) / calls for x, y in zip(a, b)]
        rows.append(([x - y for x, y in zip(per_call(1), per_call(-1))], f))
    rows.sort(key=lambda r: (-(r[0][1] + r[0][2] + r[0][3]), -r[0][0], r[1]))
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--fresh", action="store_true", help="a new input at every call (else the steady loop)")
    p.add_argument("--train", action="store_true",
                   help="the training step's loop (forward and backward: the figures are a step's)")
    p.add_argument("--calls", type=int, default=1000, help="calls of the shorter runs")
    p.add_argument("--baseline", metavar="RECORDER", help="count this recorder instead of this checkout's")
    p.add_argument("--against", metavar="RECORDER",
                   help="also count this other recorder (a package folder, as --baseline takes, say the one "
                        "before a change), its runs beside the first's, and print the first less it")
    p.add_argument("--cold", action="store_true",
                   help="also count the last-level cache misses a call adds, the caches emptied between calls")
    p.add_argument("--by-function", type=int, default=0, metavar="N",
                   help="then the N functions (C and CPython's; Python code is the interpreter's) whose "
                        "last-level misses (with --cold) and instructions recording adds to most, a call")
    p.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--evict", type=int, default=0, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.fresh and a.train:
        p.error("--fresh and --train are two loops: one at a time")
    if a.child is not None:
        child(a.fresh, a.child, a.baseline, a.evict, a.train)
        return 0
    if a.calls < 1:
        p.error("--calls must be at least 1")
    if a.by_function < 0:
        p.error("--by-function must be at least 0")
    other = None
    with tempfile.TemporaryDirectory() as d:
        if a.against:
            # (the other recorder's runs in a thread beside the first's:
            # each a valgrind of its own, and both on the same machine
            # meanwhile; the counts do not move with its load)
            got = {}
            t = threading.Thread(target=lambda: got.update(r=measure(a.fresh, a.calls, a.against, cold=a.cold,
                                                                     train=a.train)))
            t.start()
        try:
            r = measure(a.fresh, a.calls, a.baseline, cold=a.cold, train=a.train,
                        folder=d if a.by_function else None)
        finally:
            if a.against:
                t.join()
        if a.against:
            other = got.get("r")
            if other is None:
                raise SystemExit("recorder-instructions: --against %s: its runs failed" % a.against)
        rows = by_function(d, a.calls, cold=a.cold)[:a.by_function] if a.by_function else []
    loop = "a training step" if a.train else "a new input each call" if a.fresh else "the same input (steady)"
    unit = "step" if a.train else "call"
    for rec, res in ((a.baseline, r), (a.against, other)):
        if res is None:
            continue
        what = "%s%s" % (loop, ", recorder %s" % rec if rec else "")
        print("%s: %.0f instructions a %s unrecorded, %.0f recorded, %.0f added (%.1fx the unrecorded %s)"
              % (what, res["off"], unit, res["on"], res["added"], res["added"] / res["off"], unit))
        if a.cold:
            print("%s, cold caches: %.0f last-level misses a %s unrecorded, %.0f recorded, %.0f added"
                  % (what, res["misses_off"], unit, res["misses_on"], res["misses_added"]))
    if other is not None:
        print("%s: %s less %s: %+.0f instructions a %s%s" % (
            loop, a.baseline or "this checkout's recorder", a.against, r["added"] - other["added"], unit,
            ", %+.0f last-level misses (cold caches; two runs of one recorder differ by some 60)"
            % (r["misses_added"] - other["misses_added"]) if a.cold else ""))
    if rows:
        print("added a %s, by function (own; last-level misses: instruction fetch, data read, data write):" % unit)
        print("| function | instructions | IL misses | DL read misses | DL write misses |")
        print("| --- | --- | --- | --- | --- |")
        for (ir, il, dr, dw), f in rows:
            print("| %s | %.0f | %.1f | %.1f | %.1f |" % (f, ir, il, dr, dw))
    return 0


if __name__ == "__main__":
    sys.exit(main())
