#!/usr/bin/env bash
# final-run.sh: every engine test on the GPU (all scenario traces, the
# oracle comparison, sim against cuda), the session test, and the GPU
# benchmarks with PyTorch's in the same run.
set -uo pipefail
out=${OUT:-/tmp/cgtviz-gpu}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
(cd engine && CGTVIZ_DEVICE=cuda ../.bin/engine-cuda.test -test.count=1 -test.v > "$out/engine-cuda.log" 2>&1; echo "engine tests on cuda: rc=$?")
grep -E "^(--- FAIL|FAIL|ok|PASS)|^    --- FAIL" "$out/engine-cuda.log" | head -20
echo "passed: $(grep -c -- '--- PASS' "$out/engine-cuda.log"), skipped: $(grep -c -- '--- SKIP' "$out/engine-cuda.log"), failed: $(grep -c -- '--- FAIL' "$out/engine-cuda.log")"
grep -A2 "TestCUDAReplayOverwrites" "$out/engine-cuda.log" | grep memory
(cd sessions && ../.bin/sessions-cuda.test -test.run TestCUDASession -test.v 2>&1 | tail -3)
(cd engine && ../.bin/engine-cuda.test -test.run '^$' -test.bench GPU -test.benchmem -test.count 3 > "$out/bench.log" 2>&1)
grep Benchmark "$out/bench.log"
python3 tools/gpu/torch-bench.py | tee "$out/torch-bench.log"
