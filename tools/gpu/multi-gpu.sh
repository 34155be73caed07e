#!/usr/bin/env bash
# multi-gpu.sh: on a machine with two GPUs, the two-device trace runs one
# tree and one pool per GPU, with the same decisions as on the simulated
# device; also the session test stepping the demo live on the GPU.
set -uo pipefail
out=${OUT:-/tmp/cgtviz-gpu}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
./.bin/cgtviz-cuda version
./.bin/cgtviz-cuda run --device cuda --check examples/s35-two-devices.cgt.jsonl | tee "$out/s35-cuda.txt" | tail -12
./.bin/cgtviz run --device sim examples/s35-two-devices.cgt.jsonl --json > "$out/s35-sim.json"
./.bin/cgtviz-cuda run --device cuda examples/s35-two-devices.cgt.jsonl --json > "$out/s35-cuda.json"
python3 - "$out/s35-sim.json" "$out/s35-cuda.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
strip = lambda r: [(s["line"], s.get("action"), s.get("node"), s.get("parent"), s.get("checkpoint"), s["error"]) for s in r["steps"]]
print("s35 sim vs cuda reports:", "same decisions" if strip(a) == strip(b) else "DIFFERENT", "| devices:", b["device"], "| nodes:", [(n["device"], n["id"], n["fn"]) for n in b["nodes"]])
PY
(cd sessions && ../.bin/sessions-cuda.test -test.run TestCUDASession -test.v 2>&1 | tail -5)
(cd engine && CGTVIZ_DEVICE=cuda ../.bin/engine-cuda.test -test.run 'TestCUDAMatchesSim|TestScenarios' -test.v 2>&1 | grep -E "s35|^(ok|PASS|FAIL)" )
