#!/usr/bin/env bash
# engine-run.sh: the GPU-machine half of the engine's proof (see README, The
# GPU). Run from the repository root after `make gpu-build`, with .bin carried:
# PyTorch's decisions for every example (torch-oracle.py), every engine test
# on the GPU, the GPU benchmarks with PyTorch's in the same run, and the
# memory snapshot opened by PyTorch's own tools. Logs go to $OUT.
set -uo pipefail
out=${OUT:-/tmp/cgtviz-gpu}
mkdir -p "$out" engine/testdata/oracle
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 .bin/torch-oracle.py examples/*.cgt.jsonl examples/recorded/*.cgt.jsonl > engine/testdata/oracle/oracle.jsonl 2> "$out/oracle.err"
echo "oracle: $(wc -l < engine/testdata/oracle/oracle.jsonl) traces"
cp engine/testdata/oracle/oracle.jsonl "$out/"
./.bin/cgtviz-cuda version
(cd engine && CGTVIZ_DEVICE=cuda ../.bin/engine-cuda.test -test.count=1 -test.v > "$out/engine-cuda.log" 2>&1; echo "engine tests on cuda: rc=$?")
grep -E "^(--- FAIL|FAIL|ok|PASS)|TestCUDAReplayOverwrites.*memory" "$out/engine-cuda.log" | head -20
grep -c -- "--- PASS" "$out/engine-cuda.log" | sed 's/^/passed subtests+tests: /'
(cd engine && ../.bin/engine-cuda.test -test.run '^$' -test.bench GPU -test.benchmem -test.count 3 > "$out/bench.log" 2>&1)
grep Benchmark "$out/bench.log"
python3 tools/gpu/torch-bench.py | tee "$out/torch-bench.log"
./.bin/cgtviz snapshot examples/seed-a-checkpoint.cgt.jsonl --line 33 -o "$out/seed-a.pickle"
python3 - "$out/seed-a.pickle" <<'PY'
import pickle, sys
s = pickle.load(open(sys.argv[1], "rb"))
print("pickle.load: %d segments, %d trace entries, pools %s" % (len(s["segments"]), len(s["device_traces"][0]), sorted({seg["segment_pool_id"] for seg in s["segments"]})))
PY
python3 -m torch.cuda._memory_viz stats "$out/seed-a.pickle" | tail -5
python3 -m torch.cuda._memory_viz trace_plot "$out/seed-a.pickle" -o "$out/seed-a-trace.html" && echo "trace_plot: $(wc -c < "$out/seed-a-trace.html") bytes of HTML"
./.bin/cgtviz-cuda run --device cuda examples/seed-a-checkpoint.cgt.jsonl | tail -8
