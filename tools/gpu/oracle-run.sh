#!/usr/bin/env bash
# oracle-run.sh: PyTorch's decisions for every example (torch-oracle.py on
# the GPU machine), the engine's tests on the GPU against them, one node's
# CUDA graph as the driver prints it, and the probe of the open random
# traces (docs/oracle-differences.md). One device call after `make
# gpu-build` (carry .bin); compare back here with TestOracle.
set -uo pipefail
out=${OUT:-/tmp/cgtviz-gpu}
mkdir -p "$out" engine/testdata/oracle
export PYTHONUNBUFFERED=1
python3 .bin/torch-oracle.py examples/*.cgt.jsonl examples/recorded/*.cgt.jsonl > engine/testdata/oracle/oracle.jsonl 2> "$out/oracle.err"
echo "oracle: $(wc -l < engine/testdata/oracle/oracle.jsonl) traces"
cp engine/testdata/oracle/oracle.jsonl "$out/"
(cd engine && CGTVIZ_DEVICE=cuda ../.bin/engine-cuda.test -test.count=1 -test.v > "$out/engine-cuda.log" 2>&1; echo "engine tests on cuda: rc=$?")
grep -E "^(--- FAIL|FAIL|ok|PASS)|^    --- FAIL" "$out/engine-cuda.log" | head -20
./.bin/cgtviz-cuda export --run-on cuda --graph --node 2 examples/seed-a-checkpoint.cgt.jsonl -o "$out/seed-a-node2-gpu.dot" && head -c 1500 "$out/seed-a-node2-gpu.dot"
./.bin/cgtviz-cuda export --run-on cuda --graph --node 2 examples/seed-a-checkpoint.cgt.jsonl -o "$out/seed-a-node2-gpu.svg" && echo "svg: $(wc -c < "$out/seed-a-node2-gpu.svg") bytes"
python3 tools/gpu/oracle-probe.py .bin/torch-oracle.py engine/testdata/oracle/random3/*.cgt.jsonl > "$out/probe-random3.jsonl" 2> "$out/probe.err"
echo "probe: $(wc -l < "$out/probe-random3.jsonl") traces (compare: CGTVIZ_SHARED_CODE=0 CGTVIZ_ORACLE=\$OUT/probe-random3.jsonl go test ./engine -run TestOracle)"
