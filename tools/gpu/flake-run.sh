#!/usr/bin/env bash
# flake-run.sh: the cuda flake of engine's TestRunStreamMatchesRun (values
# read as zeros, docs/gpu-runs/2026-12-01-h200.md runs 51-54) looked at in
# one GPU call, from the repository root, carrying .bin/cudadev.test and
# .bin/engine-cuda.test (see peer-and-engine-run.sh's build):
#   1. TestDevicesOpenedAsTheLastGoes: devices opened and dropped with none
#      held between them, so the primary context is reset and made again
#      while the collector gives the dropped ones back (DROP1 s, 45);
#   2. TestDroppedDevicesWhileAnotherWorks, the same beside a live device
#      (DROP2 s, 30);
#   3. engine's TestRunStreamMatchesRun again and again (COUNT, 12) with
#      GODEBUG=gctrace=1, so that a failure can be put beside a collection;
#   4. with FULL=1, first: the engine's cuda tests three times (as
#      peer-and-engine-run.sh runs them), the cuda device's own tests, the
#      sessions' GPU test and the engine's GPU benchmarks.
# Writes $OUT/flake.txt (the summary) and the logs beside it.
set -u
out=${OUT:-/tmp/flake-out}
mkdir -p "$out"
sum=$out/flake.txt
: >"$sum"
say() { echo "$*" | tee -a "$sum"; }
say "flake run $(date -u +%Y-%m-%dT%H:%M:%SZ) $(git log -1 --format=%h 2>/dev/null)"
if [ "${FULL:-0}" = 1 ]; then
	(cd engine && CGTVIZ_DEVICE=cuda timeout 240 ../.bin/engine-cuda.test -test.count=3 \
		-test.run 'TestScenarios|TestRunStreamMatchesRun|TestCloneSharesNodes|TestStateReusesNodeViews|TestCUDAMatchesSim|TestPeerSuite|TestJournal|TestDispatch|TestDefCache|TestDefByLineKey|TestTableUndo' -test.v) >"$out/engine-cuda.log" 2>&1
	say "engine-cuda x3 (exit $?): $(grep -c '^--- PASS' "$out/engine-cuda.log") PASS, $(grep -c '^--- FAIL' "$out/engine-cuda.log") FAIL"
	grep -B 8 -- '--- FAIL' "$out/engine-cuda.log" | grep -v -- '--- PASS\|^=== RUN' | head -30 | cut -c1-200 | tee -a "$sum"
	(cd engine/device/cuda && timeout 150 ../../../.bin/cudadev.test -test.v) >"$out/cudadev.log" 2>&1
	say "cudadev (exit $?): $(grep -c '^--- PASS' "$out/cudadev.log") PASS, $(grep -c '^--- FAIL' "$out/cudadev.log") FAIL"
	grep -A 6 -- '--- FAIL' "$out/cudadev.log" | head -30 | cut -c1-200 | tee -a "$sum"
	(cd sessions && timeout 120 ../.bin/sessions-cuda.test -test.run CUDA -test.count=1 -test.v) >"$out/sessions-cuda.log" 2>&1
	say "sessions-cuda (exit $?): $(grep -c '^--- PASS' "$out/sessions-cuda.log") PASS, $(grep -c '^--- FAIL' "$out/sessions-cuda.log") FAIL"
	(cd engine && CGTVIZ_DEVICE=cuda timeout 120 ../.bin/engine-cuda.test -test.run '^$' -test.bench GPU -test.benchmem -test.count 3) >"$out/bench-gpu.log" 2>&1
	say "engine GPU benchmarks (exit $?):"
	grep '^Benchmark' "$out/bench-gpu.log" | sed 's/^/    /' | tee -a "$sum"
fi
for t in "TestDevicesOpenedAsTheLastGoes ${DROP1:-45}" "TestDroppedDevicesWhileAnotherWorks ${DROP2:-30}"; do
	set -- $t
	(cd engine/device/cuda && CGTVIZ_DROP_SECONDS=$2 timeout $(($2 + 60)) ../../../.bin/cudadev.test \
		-test.run "^$1\$" -test.v) >"$out/$1.log" 2>&1
	say "$1 ($2 s, exit $?): $(grep -E -- '^--- |devices (opened|dropped)|iteration' "$out/$1.log" | head -5 | cut -c1-240 | tr '\n' ' ')"
done
(cd engine && CGTVIZ_DEVICE=cuda GODEBUG=gctrace=1 timeout ${STREAM_S:-170} ../.bin/engine-cuda.test \
	-test.run '^TestRunStreamMatchesRun$' -test.count=${COUNT:-12} -test.v) >"$out/stream.log" 2>&1
say "TestRunStreamMatchesRun x${COUNT:-12} (exit $?): $(grep -c '^--- PASS' "$out/stream.log") PASS, $(grep -c '^--- FAIL' "$out/stream.log") FAIL, $(grep -c '^gc ' "$out/stream.log") collections"
grep -B 12 -A 2 -- '--- FAIL\|want \[' "$out/stream.log" | grep -v '^=== RUN' | head -60 | cut -c1-240 | tee -a "$sum"
gzip -f "$out/stream.log"
