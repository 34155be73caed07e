#!/usr/bin/env bash
# One GPU call for the recorder, the engine and PyTorch's own suite (run
# from the repository root on the GPU machine; carry .bin from
# `make gpu-build` plus .bin/peer-suite, peer/test_cudagraph_trees.py and,
# to compare with, another recorder as .bin/cgtrace_head, its package
# folder, or .bin/cgtrace_head.py, a recorder of one file from before the
# package):
#   1. the recorder's overhead, alone on the machine, against
#      .bin/cgtrace_head(.py) when there is one, with the recorder's own time
#      in place (tools/gpu/recorder-overhead.py; OVERHEAD_ARGS replaces
#      the default arguments), then the same loop with a new input tensor
#      at each call (--fresh);
#   2. at once: PyTorch's own test_cudagraph_trees.py recorded test by test
#      (peer suite, 12 workers), every program of traces/pytorch/programs
#      recorded (record_all.sh), and the engine's cuda tests three times and
#      the sessions' GPU test;
#   3. every trace of 2 replayed on the GPU (--device cuda), the programs on
#      sim as well; beside it, every program run unrecorded and recorded
#      to compare their graphs (tools/gpu/graphs-unchanged.py, 6 at once),
#      and recorded with the deferred path and without it to compare their
#      traces (tools/gpu/deferred-same.py, 4 at once).
# Writes $OUT/run.txt (the summary), $OUT/peer.tgz and $OUT/recorded.tgz.
set -u
out=${OUT:-/tmp/run-out}
work=$(mktemp -d)
mkdir -p "$out"
sum=$out/run.txt
: >"$sum"
say() { echo "$*" | tee -a "$sum"; }
say "run $(date -u +%Y-%m-%dT%H:%M:%SZ) $(git log -1 --format=%h 2>/dev/null)"
base=""
if [ -f .bin/cgtrace_head/__init__.py ]; then
	base="--baseline .bin/cgtrace_head"
elif [ -f .bin/cgtrace_head.py ]; then
	base="--baseline .bin/cgtrace_head.py"
fi
# shellcheck disable=SC2086
timeout 150 python3 tools/gpu/recorder-overhead.py $base \
	${OVERHEAD_ARGS:---iters 3000 --rounds 11 --inside} >"$work/overhead.log" 2>&1
say "overhead (exit $?):"
grep -v -i warn "$work/overhead.log" | grep -v " round [0-9]*: " | sed "s/^/    /" | tee -a "$sum"
# shellcheck disable=SC2086
timeout 100 python3 tools/gpu/recorder-overhead.py --fresh $base --iters 1000 --rounds 7 >"$work/overhead-fresh.log" 2>&1
say "overhead with a new input each call (exit $?):"
grep -v -i warn "$work/overhead-fresh.log" | grep -v " round [0-9]*: " | sed "s/^/    /" | tee -a "$sum"
root=$PWD
peer=$work/peer
rec=$work/recorded
mkdir -p "$peer" "$rec"
python3 .bin/peer-suite/guard_imports.py peer/test_cudagraph_trees.py "$peer/test_cudagraph_trees_guarded.py" >/dev/null
(cd "$peer" && PEER_OUT="$peer/traces" PEER_RECORD=1 \
	PYTHONPATH="$root/traces/pytorch:$root/.bin/peer-suite:$root/.bin/peer-suite/shim" \
	timeout 300 python3 -m pytest test_cudagraph_trees_guarded.py -p conftest -q -n 12 --timeout 120 \
	-p no:cacheprovider -rfE >"$peer/pytest.log" 2>&1) &
ppid=$!
(timeout 330 bash traces/pytorch/programs/record_all.sh "$rec" >"$work/record_all.log" 2>&1) &
rpid=$!
(cd engine && CGTVIZ_DEVICE=cuda timeout 240 ../.bin/engine-cuda.test -test.count=3 \
	-test.run 'TestScenarios|TestRunStreamMatchesRun|TestCloneSharesNodes|TestStateReusesNodeViews|TestCUDAMatchesSim|TestPeerSuite|TestJournal|TestDispatch|TestDefCache|TestDefByLineKey|TestTableUndo' -test.v) >"$work/engine-cuda.log" 2>&1
say "engine-cuda x3 (exit $?): $(grep -c '^--- PASS' "$work/engine-cuda.log") PASS, $(grep -c '^--- FAIL' "$work/engine-cuda.log") FAIL"
# A failure with what the test said before it (which trace, which step):
# a flaky one is told by its message.
grep -B 8 -- '--- FAIL' "$work/engine-cuda.log" | grep -v -- '--- PASS\|^=== RUN' | head -40 | cut -c1-200 | tee -a "$sum"
(cd sessions && timeout 120 ../.bin/sessions-cuda.test -test.run CUDA -test.count=1 -test.v) >"$work/sessions-cuda.log" 2>&1
say "sessions-cuda (exit $?): $(grep -c '^--- PASS' "$work/sessions-cuda.log") PASS, $(grep -c '^--- FAIL' "$work/sessions-cuda.log") FAIL"
wait $ppid
say "peer suite recorded: $(tail -n 1 "$peer/pytest.log")"
wait $rpid
say "record_all: $(tail -n 1 "$work/record_all.log")"
(timeout 280 python3 tools/gpu/graphs-unchanged.py --jobs 6 >"$work/graphs-unchanged.log" 2>&1; echo "exit $?" >>"$work/graphs-unchanged.log") &
gpid=$!
(timeout 280 python3 tools/gpu/deferred-same.py --jobs 4 >"$work/deferred-same.log" 2>&1; echo "exit $?" >>"$work/deferred-same.log") &
dpid=$!
ls "$peer"/traces/*.cgt.jsonl >"$work/list" 2>/dev/null
xargs -P 8 -I{} sh -c 'r=$(timeout 60 .bin/cgtviz-cuda run --device cuda "{}" 2>&1 | grep "^expectations" | head -n 1); echo "$(basename "{}") ${r:-no expectations line}"' <"$work/list" >"$work/cuda-replay.txt"
say "peer traces replayed on cuda: $(wc -l <"$work/cuda-replay.txt") traces, $(grep -c ', 0 failed' "$work/cuda-replay.txt") with no failed expectation, $(grep -c 'passed, [1-9]' "$work/cuda-replay.txt") with failures"
grep 'passed, [1-9]' "$work/cuda-replay.txt" | cut -c1-160 | sed 's/^/    /' | tee -a "$sum"
for f in "$rec"/*.cgt.jsonl; do
	[ -e "$f" ] || continue
	s=$(timeout 60 .bin/cgtviz-cuda run "$f" 2>&1 | grep '^expectations' | head -n 1)
	g=$(timeout 60 .bin/cgtviz-cuda run --device cuda "$f" 2>&1 | grep '^expectations' | head -n 1)
	say "    $(basename "$f"): sim ${s:-no expectations line}; cuda ${g:-no expectations line}"
done
wait $gpid
say "graphs unchanged by recording ($(tail -n 1 "$work/graphs-unchanged.log")):"
grep -v '^exit' "$work/graphs-unchanged.log" | cut -c1-200 | sed 's/^/    /' | tee -a "$sum"
wait $dpid
say "traces the same deferred and through the general path ($(tail -n 1 "$work/deferred-same.log")):"
grep -v '^exit' "$work/deferred-same.log" | grep -iv warn | cut -c1-240 | sed 's/^/    /' | tee -a "$sum"
cp "$work"/*.log "$work/cuda-replay.txt" "$peer/" 2>/dev/null
tar czf "$out/peer.tgz" -C "$work" peer
tar czf "$out/recorded.tgz" -C "$work" recorded
ls -la "$out"
