#!/usr/bin/env python3
"""The recorder's deferred replays against its general path, on real
PyTorch: records each program of traces/pytorch/programs twice, in
processes of their own, as the recorder records by default (a steady
replay checked by the _run wrapper's lean path and written later, a call
on new inputs through the fresh path, fresh.py, taken whole by the _run
wrapper and queued, freshq.py, its queue's later calls by the lean fresh
path; a replay's records made again by _fast_after, its outputs rebound
when they died since) and with CGTRACE_DEFER=0 (every call through the
general path, which asks the tree about each tensor), and compares the
two traces record by record.

The lean path judges a cached output alive by its refcount, as the tree's
own check would (cgtrace._refcount_rule), and a data pointer or an input by
identity: a difference here is a liveness or an input the lean path judged
otherwise than the tree. Input values a program draws unseeded differ from
run to run, so `values` fields are left out of the comparison.

    python3 tools/gpu/deferred-same.py --jobs 6            # every program
    python3 tools/gpu/deferred-same.py graph_break host_reads
    python3 tools/gpu/deferred-same.py --against python    # C checks against Python's
    python3 tools/gpu/deferred-same.py --against bindings  # C++ reads against torch's bindings

With --against python the second recording takes the lean paths' Python
checks (CGTRACE_FAST=0) where the first took the C ones (the recorder
builds cgtrace/_fastpath.c where a compiler and Python.h are): a
difference there is one the C functions make that their reference does
not.

Prints one line a program; exits 1 when any program's traces differ or a
run failed, 2 for a NAME that is not a program. Needs a CUDA GPU and
PyTorch 2.11 (the comparison, same_records, is tested without them)."""
import argparse
import concurrent.futures
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PROGRAMS = os.path.join(ROOT, "traces", "pytorch", "programs")


# record_all.sh's programs, and the choice among them, as graphs-unchanged.py has them.
_spec = importlib.util.spec_from_file_location("graphs_unchanged", os.path.join(HERE, "graphs-unchanged.py"))
_gu = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_gu)


def _programs():
    with open(os.path.join(PROGRAMS, "record_all.sh"), encoding="utf-8") as fh:
        return _gu.programs(fh.read())


def _without_values(v):
    if isinstance(v, dict):
        return {k: _without_values(x) for k, x in v.items() if k != "values"}
    if isinstance(v, list):
        return [_without_values(x) for x in v]
    return v


def same_records(deferred_lines, general_lines):
    """(records compared, the differences as lines: none when the traces
    agree). The first line of each is the header (it names the file); a
    record's `values` are left out. At most the first five differences."""
    a, b = deferred_lines[1:], general_lines[1:]
    diff = []
    if len(a) != len(b):
        diff.append("%d records deferred, %d through the general path" % (len(a), len(b)))
    for i, (x, y) in enumerate(zip(a, b)):
        if x == y:
            continue
        try:
            same = _without_values(json.loads(x)) == _without_values(json.loads(y))
        except ValueError:
            same = False
        if not same:
            diff.append("line %d: deferred %s" % (i + 2, x[:200]))
            diff.append("line %d: general  %s" % (i + 2, y[:200]))
            if len(diff) >= 10:
                break
    return min(len(a), len(b)), diff


# The second recording's setting, by --against: the general path, or the
# lean paths' Python checks (fastpath.py) where the first took the C ones.
# --against: the variable the second recording sets, its value there, and
# the value the first recording sets it to (None: left unset, the default).
AGAINST = {"general": ("CGTRACE_DEFER", "0", None), "python": ("CGTRACE_FAST", "0", None),
           "bindings": ("CGTRACE_CPP", "0", "wait")}


def record(name, script, args, path, defer, timeout, against="general"):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(ROOT, "traces", "pytorch") + (
        os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    for k, _, _ in AGAINST.values():
        env.pop(k, None)
    k, second, first = AGAINST[against]
    if not defer:
        env[k] = second
    elif first is not None:
        env[k] = first
    cmd = [sys.executable, "-m", "cgtrace", "run", "-o", path, "--name", name,
           os.path.join(PROGRAMS, script)] + list(args)
    try:
        p = subprocess.run(cmd, cwd=PROGRAMS, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "run past %d s" % timeout
    if p.returncode != 0:
        return "failed (%d): %s" % (p.returncode, p.stderr.strip()[-600:])
    return None


def run_one(name, script, args, tmp, timeout, against="general"):
    paths = {}
    for defer in (True, False):
        paths[defer] = os.path.join(tmp, "%s.%s.cgt.jsonl" % (name, "deferred" if defer else against))
        err = record(name, script, args, paths[defer], defer, timeout, against)
        if err is not None:
            return None, "%s recording %s" % ("deferred" if defer else "general", err)
    with open(paths[True], encoding="utf-8") as a, open(paths[False], encoding="utf-8") as b:
        return same_records(a.read().splitlines(), b.read().splitlines()), None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help="programs of record_all.sh (default: all)")
    ap.add_argument("--timeout", type=int, default=300, help="seconds a recording may take")
    ap.add_argument("--jobs", type=int, default=1, help="programs recorded at once (each its two runs in turn)")
    ap.add_argument("--against", choices=sorted(AGAINST), default="general",
                    help="the second recording: through the general path (CGTRACE_DEFER=0, the default), or "
                         "with the lean paths' Python checks (CGTRACE_FAST=0), where the first took the C ones "
                         "(cgtrace/_fastpath.c), or reading tensors through torch's bindings (CGTRACE_CPP=0), "
                         "where the first read them through the C++ module (CGTRACE_CPP=wait: cgtrace/_cpp.cpp)")
    opts = ap.parse_args(argv)
    listed = _programs()
    try:
        _gu.select(listed, opts.names, 0)
    except KeyError as e:
        print("deferred-same: no program named %s" % e.args[0], file=sys.stderr)
        return 2
    import torch
    todo, skipped = _gu.select(listed, opts.names, torch.cuda.device_count() if torch.cuda.is_available() else 0)
    for line in skipped:
        print(line)
    status = 0
    with tempfile.TemporaryDirectory() as tmp:
        with concurrent.futures.ThreadPoolExecutor(max(1, opts.jobs)) as pool:
            results = pool.map(lambda p: run_one(p[0], p[1], p[2], tmp, opts.timeout, opts.against), todo)
            for (name, _, _), (got, err) in zip(todo, results):
                if err is not None:
                    print("%-22s FAILED: %s" % (name, err))
                    status = 1
                    continue
                n, diff = got
                if diff:
                    print("%-22s DIFFERENT (%d records compared)" % (name, n))
                    print("\n".join("    " + d for d in diff))
                    status = 1
                else:
                    print("%-22s same: %d records" % (name, n))
                sys.stdout.flush()
    return status


if __name__ == "__main__":
    sys.exit(main())
