#!/usr/bin/env python3
"""Recording must never change a program's graphs: runs each program of
traces/pytorch/programs twice, in processes of their own, unrecorded and
under cgtrace.record, and compares what Dynamo and Inductor made of it:

- the code of every FX graph Dynamo handed to its backend, in order;
- Dynamo's counters: frames converted, graphs captured, the graph breaks
  and their reasons, recompiles;
- the frames Dynamo's frame hook was handed, by file and function;
- what the program printed.

A wrapper of the recorder's that Dynamo traced into (a guard on the
recorder's state, a graph break) or whose frame it converted (a frame more
than unrecorded) shows as a difference. Needs a CUDA GPU and PyTorch 2.11.

    python3 tools/gpu/graphs-unchanged.py --jobs 6       # every program
    python3 tools/gpu/graphs-unchanged.py graph_break host_reads
    python3 tools/gpu/graphs-unchanged.py --recorder old/traces/pytorch/cgtrace graph_break

Prints one line a program and, for a difference, what differs; exits 1
when any program's graphs differ or a run failed, 2 for a NAME that is
not a program."""
import argparse
import concurrent.futures
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PROGRAMS = os.path.join(ROOT, "traces", "pytorch", "programs")

# Counters of torch._dynamo.utils.counters that say what was compiled (the
# others time things or count cache hits, which differ run to run).
COUNTER_GROUPS = ("stats", "frames", "graph_break", "recompiles", "unimplemented")


def programs(record_all_text):
    """[(name, script, args)] from record_all.sh's LIST, in its order."""
    m = re.search(r"<<'LIST'\n(.*?)\nLIST\n", record_all_text, re.S)
    if m is None:
        raise ValueError("record_all.sh has no LIST")
    out = []
    for line in m.group(1).splitlines():
        parts = line.split()
        if parts:
            out.append((parts[0], parts[1], parts[2:]))
    return out


def select(listed, names, gpus):
    """The programs of listed (programs()) to run: those named (all when
    none is), two_gpus only with two GPUs. Returns (todo, the lines for
    those skipped), or raises KeyError with a name that is not listed."""
    known = {n for n, _, _ in listed}
    for n in names:
        if n not in known:
            raise KeyError(n)
    todo, skipped = [], []
    for name, script, args in listed:
        if names and name not in names:
            continue
        if name == "two_gpus" and gpus < 2:
            skipped.append("%-22s skipped: it needs two CUDA devices" % name)
            continue
        todo.append((name, script, args))
    return todo, skipped


def compare(plain, recorded):
    """The differences between two children's reports, as lines (none when
    the graphs are the same)."""
    diff = []
    for key in ("graphs", "counters", "converted", "stdout"):
        a = json.dumps(plain.get(key), indent=1, sort_keys=True).splitlines()
        b = json.dumps(recorded.get(key), indent=1, sort_keys=True).splitlines()
        if a != b:
            diff.append("%s differ:" % key)
            diff.extend("  " + d for d in difflib.unified_diff(a, b, "unrecorded", "recorded", lineterm="", n=1))
    return diff


def summary(report):
    c = report.get("counters", {})
    breaks = sum(c.get("graph_break", {}).values())
    return "%d graphs, %d graph breaks, %d frames" % (
        len(report.get("graphs", [])), breaks, c.get("frames", {}).get("total", 0))


def child(mode, out_path, script, args):
    """Runs script as __main__ (recorded when mode is "recorded") and writes
    the report: the graphs' code, the counters, the printed lines."""
    import contextlib
    import io
    import runpy

    import torch._dynamo.output_graph as og
    from torch._dynamo.utils import counters

    graphs = []
    orig = og.OutputGraph.call_user_compiler

    def call_user_compiler(self, gm, *a, **k):
        graphs.append(gm.code)
        return orig(self, gm, *a, **k)

    og.OutputGraph.call_user_compiler = call_user_compiler
    # The frames Dynamo's frame hook was handed to convert, by file and
    # function: one of the recorder's there is a frame the recording added.
    converted = {}
    import torch._dynamo.convert_frame as cf
    assert_cls = getattr(cf, "ConvertFrameAssert", None)
    if assert_cls is not None:
        orig_convert = assert_cls.__call__

        def convert(self, frame, *a, **k):
            code = frame.f_code
            key = "%s:%s" % (os.path.basename(code.co_filename), code.co_name)
            converted[key] = converted.get(key, 0) + 1
            return orig_convert(self, frame, *a, **k)

        assert_cls.__call__ = convert
    sys.argv = [script] + list(args)
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    buf = io.StringIO()
    reads = None
    with contextlib.redirect_stdout(buf):
        if mode == "recorded":
            import cgtrace
            trace = out_path + ".cgt.jsonl"
            with cgtrace.record(trace):
                runpy.run_path(script, run_name="__main__")
            with open(trace, encoding="utf-8") as fh:
                reads = sum('"op": "read"' in line for line in fh)
        else:
            runpy.run_path(script, run_name="__main__")
    report = {
        "graphs": graphs,
        "counters": {g: {str(k): v for k, v in sorted(counters[g].items())} for g in COUNTER_GROUPS
                     if counters.get(g)},
        "stdout": buf.getvalue().splitlines(),
        "converted": dict(sorted(converted.items())) if assert_cls is not None else None,
        "reads": reads,
    }
    with open(out_path, "w", encoding="utf-8") as fh:
        json.dump(report, fh)


def run_one(name, script, args, tmp, timeout, recorder_dir):
    reports = {}
    env = dict(os.environ)
    env["PYTHONPATH"] = recorder_dir + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    for mode in ("plain", "recorded"):
        out = os.path.join(tmp, "%s.%s.json" % (name, mode))
        cmd = [sys.executable, os.path.abspath(__file__), "--child", mode, out,
               os.path.join(PROGRAMS, script)] + args
        try:
            p = subprocess.run(cmd, cwd=PROGRAMS, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return None, "%s run past %d s" % (mode, timeout)
        if p.returncode != 0:
            return None, "%s run failed (%d): %s" % (mode, p.returncode, p.stderr.strip()[-600:])
        with open(out, encoding="utf-8") as fh:
            reports[mode] = json.load(fh)
    return reports, None


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        child(argv[1], argv[2], argv[3], argv[4:])
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help="programs of record_all.sh (default: all)")
    ap.add_argument("--timeout", type=int, default=300, help="seconds a run may take")
    ap.add_argument("--recorder", help="the recorder to record with: a cgtrace package folder, or a cgtrace.py "
                                       "of one file from before the package (default: this tree's)")
    ap.add_argument("--jobs", type=int, default=1, help="programs run at once (each its two runs in turn)")
    opts = ap.parse_args(argv)
    with open(os.path.join(PROGRAMS, "record_all.sh"), encoding="utf-8") as fh:
        listed = programs(fh.read())
    try:
        select(listed, opts.names, 0)
    except KeyError as e:
        print("graphs-unchanged: no program named %s" % e.args[0], file=sys.stderr)
        return 2
    import torch
    todo, skipped = select(listed, opts.names, torch.cuda.device_count() if torch.cuda.is_available() else 0)
    for line in skipped:
        print(line)
    status = 0
    with tempfile.TemporaryDirectory() as tmp:
        recorder_dir = os.path.join(ROOT, "traces", "pytorch")
        if opts.recorder:
            recorder_dir = os.path.join(tmp, "recorder")
            os.mkdir(recorder_dir)
            if os.path.isdir(opts.recorder):
                shutil.copytree(opts.recorder, os.path.join(recorder_dir, "cgtrace"),
                                ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy(opts.recorder, os.path.join(recorder_dir, "cgtrace.py"))
        with concurrent.futures.ThreadPoolExecutor(max(1, opts.jobs)) as pool:
            results = pool.map(lambda p: run_one(p[0], p[1], p[2], tmp, opts.timeout, recorder_dir), todo)
            for (name, _, _), (reports, err) in zip(todo, results):
                if err is not None:
                    print("%-22s FAILED: %s" % (name, err))
                    status = 1
                    continue
                diff = compare(reports["plain"], reports["recorded"])
                if diff:
                    print("%-22s DIFFERENT (%s unrecorded, %s recorded)" % (
                        name, summary(reports["plain"]), summary(reports["recorded"])))
                    print("\n".join("    " + d for d in diff))
                    status = 1
                else:
                    print("%-22s same: %s; %s reads recorded" % (name, summary(reports["plain"]),
                                                                  reports["recorded"].get("reads")))
                sys.stdout.flush()
    return status


if __name__ == "__main__":
    sys.exit(main())
