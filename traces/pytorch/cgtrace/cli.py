"""The command line: `python3 -m cgtrace run SCRIPT` records a script,
`summary TRACE` counts what a trace holds (no torch needed), `build`
builds the recorder's C checks and C++ reads now (a recording otherwise
builds them at its start, the C++ ones in the background for the next)."""

import argparse
import json
import os
import runpy
import sys

from .recorder import record


def summarise_file(path):
    """Counts of a trace's records and of PyTorch's decisions in its
    expects; needs no torch. A trace a program that died left (issue 33
    item 1) is read as far as it goes: "ended" is False where its header
    still says the recording did not end (the journal's `journal` key) or
    its last line was cut mid-write ("cut": True; that line not counted)."""
    counts = {"defs": 0, "calls": 0, "steps": 0, "dels": 0, "tensors": 0, "params": 0,
              "warmup": 0, "record": 0, "replay": 0, "eager": 0, "errors": 0}
    checkpoints = 0
    header = None
    cut = False
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                if line.endswith("\n"):
                    raise  # (a whole line that is not JSON: not a cut)
                cut = True  # (the last line, without its end: written half)
                break
            if header is None:
                header = rec
                continue
            op = rec.get("op")
            key = {"def": "defs", "call": "calls", "step": "steps", "tensor": "tensors",
                   "param": "params"}.get(op)
            if key:
                counts[key] += 1
            if op == "del":
                counts["dels"] += len(rec["names"])
            if op == "expect":
                if "action" in rec:
                    counts[rec["action"]] += 1
                if rec.get("error") is not None:
                    counts["errors"] += 1
                checkpoints = max(checkpoints, rec.get("checkpoints", 0))
    counts["checkpoints"] = checkpoints
    meta = (header or {}).get("meta")
    journal = meta.get("journal") if isinstance(meta, dict) else None
    out = {"name": (header or {}).get("name"), "counts": counts}
    if cut or (journal is not None and journal is not False):  # (as cgtviz reads the key)
        out["ended"] = False
    if cut:
        out["cut"] = True
    return out


def torch_missing():
    """None when this Python can import torch; otherwise the one line that
    says what to install (a recording needs torch; `summary` does not)."""
    import importlib.util
    if sys.modules.get("torch") is not None:  # (imported already: by the program's launcher, a test)
        return None
    try:
        found = importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):  # a broken or blocked torch
        found = False
    if found:
        return None
    return ("cgtrace: PyTorch is not installed in this Python (%s): pip install torch "
            "(cgtrace run records a program that uses torch.compile; "
            "cgtrace summary needs no torch)" % sys.executable)


def build():
    """`build`: the lean paths' C checks (fastpath.py) and C++ reads
    (cpp.py, against this torch) built at once; prints what a recording
    will use and why not the built ones. Exit 1 when either cannot be
    had (the recording still runs, on the Python parts)."""
    import time
    from . import cpp, fastpath
    t0 = time.perf_counter()
    checks, why = fastpath.load()
    print("cgtrace: the lean paths' checks: %s" % (
        "C (%s)" % checks.__file__ if why is None else "Python (%s)" % why))
    missing = torch_missing()
    if missing is not None:
        print(missing, file=sys.stderr)
        return 2
    from . import torch_api
    torch = torch_api.load()[0]
    asked = os.environ.get("CGTRACE_CPP", cpp.DEFAULT) != "0"
    if os.environ.get("CGTRACE_CPP") != "0":
        os.environ["CGTRACE_CPP"] = "wait"  # (built now, not in the background)
    got, why2 = cpp.load(torch)
    print("cgtrace: the lean paths' torch reads: %s" % (
        "torch's bindings (%s)" % why2 if got is None else
        "C++ (%s)" % got.__file__ if asked else
        "torch's bindings; C++ built (%s), used unless CGTRACE_CPP=0" % got.__file__))
    print("cgtrace: %.1f s" % (time.perf_counter() - t0))
    return 0 if why is None and got is not None else 1


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m cgtrace",
                                description="Record a PyTorch program's CUDAGraph Trees activity as a cgtviz trace.")
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run a script and record it")
    r.add_argument("-o", "--output", help="trace file (default: SCRIPT.cgt.jsonl in the current directory)")
    r.add_argument("--name", help="the trace's title (default: the script's file name)")
    r.add_argument("--follow", action="store_true",
                   help="write the trace as the program runs, for cgtviz run --follow (also CGTRACE_FOLLOW=1; "
                        "a named pipe always is)")
    r.add_argument("script")
    r.add_argument("args", nargs=argparse.REMAINDER)
    s = sub.add_parser("summary", help="print what a recorded trace holds")
    s.add_argument("traces", nargs="+")
    sub.add_parser("build", help="build the recorder's C checks and its C++ reads of torch's tensors now, "
                                 "into CGTRACE_CACHE, and say which a recording will use")
    a = p.parse_args(argv)
    if a.cmd == "summary":
        for t in a.traces:
            print(json.dumps(dict(summarise_file(t), file=t)))
        return 0
    if a.cmd == "build":
        return build()
    script = a.script
    if not os.path.exists(script):
        print("cgtrace: no such script: %s" % script, file=sys.stderr)
        return 2
    missing = torch_missing()
    if missing is not None:
        print(missing, file=sys.stderr)
        return 2
    out = a.output or os.path.splitext(os.path.basename(script))[0] + ".cgt.jsonl"
    name = a.name or os.path.basename(script)
    sys.argv = [script] + list(a.args)
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    rec = record(out, name=name, meta={"source": "cgtrace", "script": os.path.basename(script),
                                       "argv": list(a.args)}, follow=a.follow or None)
    status = 0
    with rec:
        try:
            runpy.run_path(script, run_name="__main__")
        except SystemExit as e:
            status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    print("cgtrace: wrote %s (%d calls)" % (out, rec.session.counts["calls"]), file=sys.stderr)
    return status
