#!/usr/bin/env bash
# device-run.sh: the GPU-machine run of the device work of issue 16 (the
# upload race, time travel on the GPU, the launch paths). Run it from the
# repository root on the GPU machine after `make gpu-build` on the
# development machine, with .bin carried:
#
#   bash tools/gpu/device-run.sh
#
# It runs, each into its own log:
#   1. engine/device/cuda's tests 3 times over, plain and race binaries
#      (devicetest's suite as TestDevice, the GPU's own tests);
#   2. the race proof 30 times: TestDevice/Ordering (large uploads followed
#      at once by launches on either stream, downloads right after
#      launches, every element checked) and TestDevice/Fill, the test that
#      failed 4 times in 30 before the fix;
#   3. the engine's tests on the GPU (CGTVIZ_DEVICE=cuda), TestHandoffRaise
#      (engine.Clone on cuda) among them, and the sessions' GPU test
#      (TestCUDASession: going back restores a keyframe on the GPU);
#   4. the GPU benchmarks of the device (BenchmarkGPU...: the launch paths,
#      host copies, snapshot costs) and of the engine, 3 times each.
# Logs and summary.txt go to $OUT when it is set, else to
# .bin/device-run-DATE. The exit status is 1 when any step failed.
set -uo pipefail
root=$(pwd)
bin=$root/.bin
out=${OUT:-$bin/device-run-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$out"
summary=$out/summary.txt
: >"$summary"
status=0

say() { echo "$*" | tee -a "$summary"; }

say "device-run $(date -u +%Y-%m-%dT%H:%M:%SZ) commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
say "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -n 4 | paste -sd';')"

for b in cudadev.test cudadev-race.test engine-cuda.test; do
	if [[ ! -x $bin/$b ]]; then
		say "missing $bin/$b: run make gpu-build first"
		status=1
	fi
done

# step NAME DIR CMD...: run CMD in DIR into NAME.log and summarize it.
step() {
	local name=$1 dir=$2
	shift 2
	local log=$out/$name.log
	echo "== $name: (cd $dir && $*)"
	(cd "$dir" && "$@") >"$log" 2>&1
	local rc=$?
	local pass fail skip
	pass=$(grep -cE '^\s*--- PASS' "$log")
	fail=$(grep -cE '^\s*--- FAIL' "$log")
	skip=$(grep -cE '^\s*--- SKIP' "$log")
	if [[ $rc -ne 0 ]]; then
		status=1
		say "FAIL $name (rc=$rc): $pass passed, $fail failed, $skip skipped; log $log"
		grep -E '^\s*--- FAIL|^panic|^fatal error|DATA RACE' "$log" | sort | uniq -c | sort -rn | head -n 30 | tee -a "$summary"
	else
		say "ok   $name: $pass passed, $fail failed, $skip skipped"
	fi
}

dev=engine/device/cuda
if [[ -x $bin/cudadev.test ]]; then
	step device-tests "$dev" "$bin/cudadev.test" -test.v -test.count=3 -test.timeout=540s
	step race-proof "$dev" "$bin/cudadev.test" -test.v -test.run '^TestDevice$/^(Ordering|Fill)$' -test.count=30 -test.timeout=540s
fi
if [[ -x $bin/cudadev-race.test ]]; then
	step device-tests-race "$dev" "$bin/cudadev-race.test" -test.v -test.count=3 -test.timeout=540s
fi
if [[ -x $bin/engine-cuda.test ]]; then
	step engine-cuda engine env CGTVIZ_DEVICE=cuda "$bin/engine-cuda.test" -test.v -test.count=1 -test.timeout=540s
fi
if [[ -x $bin/sessions-cuda.test ]]; then
	# The sessions on the GPU go back through keyframes now (engine.Clone).
	step sessions-cuda sessions "$bin/sessions-cuda.test" -test.v -test.run CUDA -test.count=1 -test.timeout=540s
fi
if [[ -x $bin/cudadev.test ]]; then
	step device-bench "$dev" "$bin/cudadev.test" -test.run '^$' -test.bench GPU -test.benchmem -test.count=3 -test.timeout=540s
	grep -E '^Benchmark' "$out/device-bench.log" | tee -a "$summary"
fi
if [[ -x $bin/engine-cuda.test ]]; then
	step engine-bench engine "$bin/engine-cuda.test" -test.run '^$' -test.bench GPU -test.benchmem -test.count=3 -test.timeout=540s
	grep -E '^Benchmark' "$out/engine-bench.log" | tee -a "$summary"
fi
say "logs in $out"
exit $status
