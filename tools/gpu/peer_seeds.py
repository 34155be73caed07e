#!/usr/bin/env python3
"""peer_seeds.py: does a peer test fail because of recording, or because of
the process it runs in?

A test that fails in one round of the suite and passes in the next may
depend on things a round does not hold fixed: the string hash seed (which
orders Python's sets of names, and inductor iterates such sets) and the
tests that ran before it in its worker. This runs each test of --tests
alone, in a fresh process per run, under each hash seed of --seeds
(PYTHONHASHSEED), unrecorded and recorded (the peer plugin's PEER_RECORD),
--jobs at a time, and prints a table of outcomes: a test that fails under
a seed in both modes is PyTorch's (seed-dependent), one that fails only
recorded under a seed where it passes unrecorded is recording's.

    python3 tools/gpu/peer_seeds.py --file test_cudagraph_trees_guarded.py \\
        --tests test_a test_b --seeds 1-8 --jobs 16 --out DIR

Each run's pytest log and JUnit XML are under DIR/<test>/<seed>-<mode>.
Exit status 1 when recording changed a test's outcome under some seed,
else 0. Needs nothing but Python (and pytest where the tests run).
"""
import argparse
import concurrent.futures
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import peer_compare  # noqa: E402

MODES = (("0", "unrecorded"), ("1", "recorded"))


def parse_seeds(text):
    """"1-4,9" -> [1, 2, 3, 4, 9]."""
    seeds = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        if sep:
            seeds.extend(range(int(lo), int(hi) + 1))
        else:
            seeds.append(int(part))
    if not seeds:
        raise ValueError("no seeds in %r" % text)
    return seeds


def one_run(cmd, env, log, xml, timeout):
    """Runs one test process; its outcome from its JUnit XML ("missing"
    when the process wrote none: it crashed or timed out)."""
    with open(log, "w") as fh:
        try:
            subprocess.run(cmd + ["--junitxml", xml], env=env, stdout=fh, stderr=subprocess.STDOUT, timeout=timeout)
        except subprocess.TimeoutExpired:
            fh.write("\npeer_seeds: timed out\n")
            return "timeout"
    try:
        got = peer_compare.outcomes(xml)
    except (OSError, peer_compare.ET.ParseError):
        return "missing"
    if not got:
        return "missing"
    # One test a process: a failed call and an errored tearDown both count.
    kinds = set(got.values())
    for k in ("error", "failed", "skipped"):
        if k in kinds:
            return k
    return "passed"


def verdict(rows):
    """rows: seed -> {mode: [outcomes]}; the test's verdict and the seeds
    that make it."""
    changed, both, unsteady = [], [], []
    for seed, by in sorted(rows.items()):
        u, r = by["unrecorded"], by["recorded"]
        if len(set(u)) > 1 or len(set(r)) > 1:
            unsteady.append(seed)
        elif u[0] != r[0]:
            changed.append(seed)
        elif u[0] != "passed" and u[0] != "skipped":
            both.append(seed)
    if changed:
        return "changed by recording under seeds %s" % fmt(changed), True
    parts = []
    if both:
        parts.append("fails unrecorded and recorded alike under seeds %s" % fmt(both))
    if unsteady:
        parts.append("differs between repeats of one seed and mode under seeds %s" % fmt(unsteady))
    return ("; ".join(parts) if parts else "passes under every seed, unrecorded and recorded"), False


def fmt(seeds):
    return ",".join(str(s) for s in seeds)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", required=True, help="the (guarded) test file")
    ap.add_argument("--klass", default="CudaGraphTreeTests", help="the tests' class (default %(default)s)")
    ap.add_argument("--tests", nargs="+", required=True, help="test names")
    ap.add_argument("--seeds", default="1-8", help="PYTHONHASHSEED values, e.g. 1-8 or 0,3,7 (default %(default)s)")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each seed and mode (default %(default)s)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--timeout", type=float, default=300, help="seconds a run may take (default %(default)s)")
    ap.add_argument("--out", required=True, help="folder for each run's log and XML")
    ap.add_argument("--python", default=sys.executable, help="the interpreter that runs pytest")
    ap.add_argument("--pytest-args", default="-p conftest -q -p no:cacheprovider",
                    help="pytest's arguments after the test id (default: %(default)s)")
    a = ap.parse_args(argv)
    try:
        seeds = parse_seeds(a.seeds)
    except ValueError as e:
        print("peer_seeds: --seeds: %s" % e, file=sys.stderr)
        return 2
    jobs = []
    for test in a.tests:
        for seed in seeds:
            for flag, mode in MODES:
                for rep in range(a.repeat):
                    d = os.path.join(a.out, test, "%d-%s-%d" % (seed, mode, rep))
                    os.makedirs(d, exist_ok=True)
                    env = dict(os.environ, PYTHONHASHSEED=str(seed), PEER_OUT=d, PEER_RECORD=flag)
                    cmd = [a.python, "-m", "pytest", "%s::%s::%s" % (a.file, a.klass, test)] + a.pytest_args.split()
                    jobs.append(((test, seed, mode), cmd, env, os.path.join(d, "pytest.log"), os.path.join(d, "junit.xml")))
    results = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        futs = {pool.submit(one_run, cmd, env, log, xml, a.timeout): key for key, cmd, env, log, xml in jobs}
        for fut in concurrent.futures.as_completed(futs):
            test, seed, mode = futs[fut]
            results.setdefault(test, {}).setdefault(seed, {"unrecorded": [], "recorded": []})[mode].append(fut.result())
    any_changed = False
    for test in a.tests:
        rows = results.get(test, {})
        print("%s (%d seeds x %d runs a mode, a fresh process each)" % (test, len(rows), a.repeat))
        print("  %-6s %-24s %s" % ("seed", "unrecorded", "recorded"))
        for seed in sorted(rows):
            print("  %-6d %-24s %s" % (seed, "/".join(rows[seed]["unrecorded"]), "/".join(rows[seed]["recorded"])))
        text, changed = verdict(rows)
        any_changed |= changed
        print("  => %s" % text)
    return 1 if any_changed else 0


if __name__ == "__main__":
    sys.exit(main())
