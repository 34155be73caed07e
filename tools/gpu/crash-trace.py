#!/usr/bin/env python3
"""crash-trace: what a program that dies leaves recorded (issue 33 item 1).
Runs a program of traces/pytorch/programs twice, each in a process of its
own under a time limit: unrecorded, then under `python3 -m cgtrace run`;
says how each ended (its exit status, or the signal that killed it), then
what the trace holds: its records by kind, the calls, the last whole
record, and whether its last line was cut mid-write. With --cgtviz, the
trace is also checked (`cgtviz check`) and replayed (`cgtviz run` on each
--device), their summary lines printed.

    python3 tools/gpu/crash-trace.py static_generate [--cgtviz .bin/cgtviz-cuda --device sim --device cuda]
    python3 tools/gpu/crash-trace.py static_generate --out DIR -- --requests 2

Exits 1 when the trace is missing, holds no call record, or has a line
before its last that is not whole JSON, or when --cgtviz's check or a
replay exits other than 0; 2 for a program that is not in the folder.
How the program ended is reported, not judged: a program that dies
unrecorded too is PyTorch's, and one that finishes unrecorded but dies
recorded shows as such beside it."""
import argparse
import collections
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PROGRAMS = os.path.join(ROOT, "traces", "pytorch", "programs")


def ending(returncode, timed_out=False):
    """How a process ended, in words: "exit 0", "killed by SIGSEGV",
    "timed out"."""
    if timed_out:
        return "timed out"
    if returncode is None:
        return "did not run"
    if returncode < 0:
        try:
            return "killed by %s" % signal.Signals(-returncode).name
        except ValueError:
            return "killed by signal %d" % -returncode
    return "exit %d" % returncode


def summarize(path):
    """What the trace file at path holds: a dict of exists, lines (its
    whole lines, the header's among them), ops (records by op, the header not counted), calls, last (the
    last whole record's op), cut (its last line was not whole JSON), bad
    (the numbers of lines before the last that are not whole JSON)."""
    s = {"exists": os.path.exists(path), "lines": 0, "ops": {}, "calls": 0, "last": None, "cut": False, "bad": []}
    if not s["exists"]:
        return s
    with open(path, "rb") as fh:
        data = fh.read()
    lines = data.split(b"\n")
    ends_whole = lines[-1] == b""
    if ends_whole:
        lines.pop()
    ops = collections.Counter()
    for i, raw in enumerate(lines):
        try:
            rec = json.loads(raw)
        except ValueError:
            if i == len(lines) - 1 and not ends_whole:
                s["cut"] = True
            else:
                s["bad"].append(i + 1)
            continue
        s["lines"] += 1
        if isinstance(rec, dict) and "op" in rec:
            ops[rec["op"]] += 1
            s["last"] = rec["op"]
    s["ops"] = dict(ops)
    s["calls"] = ops.get("call", 0)
    return s


def run_and_say(label, cmd, timeout, log, env=None, n=3):
    """Runs cmd with its output into the file log, then prints how it
    ended after label and the log's last n lines; returns the exit status
    (None: timed out)."""
    with open(log, "wb") as fh:
        try:
            rc, to = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT,
                                    timeout=timeout, env=env).returncode, False
        except subprocess.TimeoutExpired:
            rc, to = None, True
    print("%s: %s" % (label, ending(rc, to)))
    for ln in tail(log, n):
        print("    " + ln)
    return rc


def tail(log, n=3):
    """The last n lines of the file log, stripped."""
    try:
        with open(log, "rb") as fh:
            lines = fh.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return []
    return [ln.strip() for ln in lines[-n:] if ln.strip()]


def record_cmd(trace, script, args):
    """The recorded run's command: the script under `python3 -m cgtrace
    run`, its trace to trace."""
    return [sys.executable, "-m", "cgtrace", "run", "-o", trace, script] + list(args)


def verdict(summary):
    """Why the trace fails the check (a list of reasons; empty: it passes)."""
    why = []
    if not summary["exists"]:
        why.append("no trace")
    else:
        if summary["calls"] == 0:
            why.append("no call recorded")
        if summary["bad"]:
            why.append("lines not whole JSON before the last: %s" % summary["bad"][:5])
    return why


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("program", help="a program of traces/pytorch/programs, by name (static_generate)")
    p.add_argument("args", nargs="*", help="its arguments (after --)")
    p.add_argument("--out", help="the folder for the trace and the logs (default: a temporary one, removed)")
    p.add_argument("--timeout", type=float, default=240, help="seconds each run may take (240)")
    p.add_argument("--cgtviz", help="a cgtviz binary: check the trace and replay it")
    p.add_argument("--device", action="append", default=None, help="a device to replay on (sim; repeatable)")
    p.add_argument("--recorded-only", action="store_true", help="skip the unrecorded run")
    # The program's own options after "--", cut off here, and the rest
    # parsed intermixed: parse_args gives "args" its strings where it
    # first meets the positionals, so after "program --out DIR" it has
    # none left for what follows (gpu.sh's killed_train steps failed so,
    # session 34).
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = []
    if "--" in argv:
        at = argv.index("--")
        argv, extra = argv[:at], argv[at + 1:]
    a = p.parse_intermixed_args(argv)
    a.args += extra
    script = os.path.join(PROGRAMS, a.program + ".py")
    if not os.path.isfile(script):
        print("crash-trace: no program %s in %s" % (a.program, PROGRAMS), file=sys.stderr)
        return 2
    folder = a.out or tempfile.mkdtemp(prefix="crash-trace-")
    os.makedirs(folder, exist_ok=True)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(ROOT, "traces", "pytorch") + (
        os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    trace = os.path.join(folder, a.program + ".cgt.jsonl")
    failed = False
    try:
        if not a.recorded_only:
            run_and_say(a.program + " unrecorded", [sys.executable, script] + a.args, a.timeout,
                        os.path.join(folder, "unrecorded.log"), env)
        run_and_say(a.program + " recorded", record_cmd(trace, script, a.args), a.timeout,
                    os.path.join(folder, "recorded.log"), env)
        s = summarize(trace)
        ops = ", ".join("%s %d" % kv for kv in sorted(s["ops"].items(), key=lambda kv: -kv[1]))
        print("trace: %s" % (trace if s["exists"] else "none"))
        if s["exists"]:
            print("  %d whole lines (records: %s); %d calls; the last whole record: %s; last line %s"
                  % (s["lines"], ops or "none", s["calls"], s["last"], "cut mid-write" if s["cut"] else "whole"))
        why = verdict(s)
        if why:
            print("FAIL: " + "; ".join(why))
            failed = True
        if a.cgtviz and s["exists"]:
            for cmd in [[a.cgtviz, "check", trace]] + [[a.cgtviz, "run", "--device", d, trace]
                                                        for d in (a.device or ["sim"])]:
                log = os.path.join(folder, "cgtviz-%s.log" % "-".join(cmd[1:-1]).replace("--", ""))
                if run_and_say(" ".join([os.path.basename(cmd[0])] + cmd[1:-1]), cmd, a.timeout, log, n=4) != 0:
                    failed = True
    finally:
        if not a.out:
            shutil.rmtree(folder, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
