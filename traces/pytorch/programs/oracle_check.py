"""Replays recorded traces under PyTorch's own CUDAGraph Trees, through
shared/tools/torch-oracle.py, and reports whether PyTorch, running the
synthesised trace, decides as it did when the real program ran (the trace's
expect records). That is the test of the recorder's approximations:
synthesised bodies, names, deaths and steps.

    python3 oracle_check.py PATH/torch-oracle.py OUT.json TRACE...

Needs a CUDA GPU and PyTorch 2.11. Each def is compiled as its own static
function (automatic dynamic shapes off, a high recompile limit), since the
oracle compiles every def from one code object and the defaults would turn
later defs dynamic or, past the limit, eager.
"""
import importlib.util
import json
import sys

import torch._dynamo


def main(argv):
    oracle_path, out_path, traces = argv[0], argv[1], argv[2:]
    torch._dynamo.config.automatic_dynamic_shapes = False
    for attr in ("recompile_limit", "cache_size_limit"):
        if hasattr(torch._dynamo.config, attr):
            setattr(torch._dynamo.config, attr, 512)
    if hasattr(torch._dynamo.config, "accumulated_recompile_limit"):
        torch._dynamo.config.accumulated_recompile_limit = 4096
    spec = importlib.util.spec_from_file_location("torch_oracle", oracle_path)
    oracle = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(oracle)
    oracle._patch()
    results, bad = [], 0
    for path in traces:
        try:
            res = oracle.run_trace(path)
        except Exception as e:  # report and go on with the next trace
            res = {"trace": path, "crash": "%s: %s" % (type(e).__name__, e)}
        results.append(res)
        if "crash" in res:
            bad += 1
            print("%s: CRASH %s" % (path, res["crash"]))
            continue
        calls = [s for s in res["steps"] if s["op"] == "call"]
        acts = {}
        for s in calls:
            acts[s.get("action")] = acts.get(s.get("action"), 0) + 1
        errors = [s for s in res["steps"] if s.get("error")]
        fails = res["expect_failures"]
        bad += bool(fails)
        print("%s: %d calls %s, %d errors, %d expect failures, final %s" % (
            path, len(calls), json.dumps(acts, sort_keys=True), len(errors), len(fails),
            {k: res["final"][k] for k in ("nodes", "roots", "checkpoints")}))
        for f in fails[:8]:
            print("   line %d: %s" % (f["line"], "; ".join(f["failed"])))
        for s in errors[:4]:
            print("   error at line %d: %s" % (s["line"], s["error"][:200]))
    with open(out_path, "w") as fh:
        json.dump(results, fh)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
