#!/usr/bin/env bash
# One GPU call for issues 13, 14 and 18 (run from the repository root on the
# GPU machine; carry .bin from `make gpu-build`-style stripped builds and
# peer/ with PyTorch's test file):
#   1. the recorder's overhead, alone on the machine (tools/gpu/recorder-overhead.py);
#   2. PyTorch's own test_cudagraph_trees.py recorded test by test (peer
#      suite, 15 workers) while the engine's cuda tests run three times
#      (scenarios incl. engine/testdata, stream vs run, clones sharing nodes,
#      the peer suite's saved traces)
#      and the sessions' GPU test;
#   3. every peer trace replayed on the GPU (--device cuda, 8 at a time),
#      summarised like replay.sh.
# Writes $OUT/run.txt (the summary) and $OUT/peer.tgz (the traces and logs).
set -u
out=${OUT:-/tmp/run-out}
work=$(mktemp -d)
mkdir -p "$out"
sum=$out/run.txt
: >"$sum"
say() { echo "$*" | tee -a "$sum"; }
say "run $(date -u +%Y-%m-%dT%H:%M:%SZ) $(git log -1 --format=%h 2>/dev/null)"
say "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n 1)"
timeout 150 python3 tools/gpu/recorder-overhead.py ${OVERHEAD_ARGS:-} >"$work/overhead.log" 2>&1
say "overhead (exit $?):"
tail -n 12 "$work/overhead.log" | sed 's/^/    /' | tee -a "$sum"
# 2. the peer suite in the background, the engine's cuda tests meanwhile
peer=$work/peer
mkdir -p "$peer"
python3 .bin/peer-suite/guard_imports.py peer/test_cudagraph_trees.py "$peer/test_cudagraph_trees_guarded.py" >/dev/null
root=$PWD
(cd "$peer" && PEER_OUT="$peer/traces" PEER_RECORD=1 \
	PYTHONPATH="$root/traces/pytorch:$root/.bin/peer-suite:$root/.bin/peer-suite/shim" \
	timeout 280 python3 -m pytest test_cudagraph_trees_guarded.py -p conftest -q -n 15 --timeout 120 \
	-p no:cacheprovider -rfE >"$peer/pytest.log" 2>&1) &
ppid=$!
(cd engine && CGTVIZ_DEVICE=cuda timeout 240 ../.bin/engine-cuda.test -test.count=3 \
	-test.run 'TestScenarios|TestRunStreamMatchesRun|TestCloneSharesNodes|TestStateReusesNodeViews|TestCUDAMatchesSim|TestPeerSuite' -test.v) >"$work/engine-cuda.log" 2>&1
say "engine-cuda x3 (exit $?): $(grep -c '^--- PASS' "$work/engine-cuda.log") PASS, $(grep -c '^--- FAIL' "$work/engine-cuda.log") FAIL, $(grep -c -- '--- SKIP' "$work/engine-cuda.log") SKIP lines"
grep -- '--- FAIL' "$work/engine-cuda.log" | head | tee -a "$sum"
grep -E -- '--- (PASS|FAIL): TestScenarios/(reset-trees|skipped-backward|static-input-moved)' "$work/engine-cuda.log" | sort | uniq -c | tee -a "$sum"
(cd sessions && timeout 120 ../.bin/sessions-cuda.test -test.run CUDA -test.count=1 -test.v) >"$work/sessions-cuda.log" 2>&1
say "sessions-cuda (exit $?): $(grep -c '^--- PASS' "$work/sessions-cuda.log") PASS, $(grep -c '^--- FAIL' "$work/sessions-cuda.log") FAIL"
wait $ppid
say "peer suite recorded: $(tail -n 1 "$peer/pytest.log")"
# 3. every trace on the GPU
ls "$peer"/traces/*.cgt.jsonl >"$work/list" 2>/dev/null
: >"$work/cuda-replay.txt"
xargs -P 8 -I{} sh -c 'r=$(timeout 60 .bin/cgtviz-cuda run --device cuda "{}" 2>&1 | grep "^expectations" | head -n 1); echo "$(basename "{}") ${r:-no expectations line}"' <"$work/list" >"$work/cuda-replay.txt"
say "peer traces replayed on cuda: $(wc -l <"$work/cuda-replay.txt") traces, $(grep -c ', 0 failed' "$work/cuda-replay.txt") with no failed expectation, $(grep -c 'passed, [1-9]' "$work/cuda-replay.txt") with failures"
grep 'passed, [1-9]' "$work/cuda-replay.txt" | cut -c1-160 | sed 's/^/    /' | tee -a "$sum"
cp "$work"/*.log "$work/cuda-replay.txt" "$peer/" 2>/dev/null
tar czf "$out/peer.tgz" -C "$work" peer
ls -la "$out"
