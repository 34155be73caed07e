#!/usr/bin/env bash
# The closing GPU call of a session (run from the repository root on the GPU
# machine, .bin/ from `make gpu-build` carried, plus .bin/torch-oracle*.py):
# the device and engine tests on cuda, the sessions' GPU test, the GPU
# benchmarks, the recorder's training programs recorded and replayed on sim
# and cuda, its overhead, the oracle probe of the open random traces, and
# the TUI on the GPU by default (-device auto) in tmux. Logs are packed into
# $OUT/final-run.tgz, the summary is $OUT/final-run.txt.
set -u
out=${OUT:-/tmp/final-out}
work=$(mktemp -d)
mkdir -p "$out" "$work/recorded"
export PYTHONUNBUFFERED=1
sum=$out/final-run.txt
: >"$sum"
say() { echo "$*" | tee -a "$sum"; }
step() { # step NAME LIMIT_S CMD...
	local name=$1 limit=$2
	shift 2
	local t0=$SECONDS
	timeout "$limit" "$@" >"$work/$name.log" 2>&1
	local rc=$?
	local pass fail
	pass=$(grep -c -- '^--- PASS\|^ok  \|^=== RUN' "$work/$name.log" 2>/dev/null)
	fail=$(grep -c -- '^--- FAIL' "$work/$name.log" 2>/dev/null)
	say "$name: exit $rc, $((SECONDS - t0)) s, --- FAIL lines: $fail"
	grep -- '^--- FAIL' "$work/$name.log" | head -n 10 | sed 's/^/    /' | tee -a "$sum"
}
say "final-run $(date -u +%Y-%m-%dT%H:%M:%SZ)"
say "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n 1)"
step device-tests 200 .bin/cudadev.test -test.count=1 -test.timeout=190s
(cd engine && CGTVIZ_DEVICE=cuda CGTVIZ_GPU_TRACES=500 CGTVIZ_GPU_ADDITIONS=1 timeout 260 ../.bin/engine-cuda.test -test.count=1 -test.v) >"$work/engine-cuda.log" 2>&1
say "engine-cuda: $(grep -c '^--- PASS' "$work/engine-cuda.log") PASS, $(grep -c '^--- FAIL' "$work/engine-cuda.log") FAIL, $(grep -c '^--- SKIP' "$work/engine-cuda.log") SKIP (top-level and subtests)"
grep '^--- FAIL' "$work/engine-cuda.log" | head | tee -a "$sum"
(cd sessions && timeout 120 ../.bin/sessions-cuda.test -test.run CUDA -test.count=1 -test.v) >"$work/sessions-cuda.log" 2>&1
say "sessions-cuda: $(grep -c '^--- PASS' "$work/sessions-cuda.log") PASS, $(grep -c '^--- FAIL' "$work/sessions-cuda.log") FAIL"
(cd cmd/cgtviz && timeout 60 ../../.bin/cmd-cuda.test -test.run 'TestTUIDevices' -test.count=1 -test.v) >"$work/cmd-cuda.log" 2>&1
say "cmd-cuda (TestTUIDevices): $(grep -c '^--- PASS' "$work/cmd-cuda.log") PASS, $(grep -c '^--- FAIL' "$work/cmd-cuda.log") FAIL"
(cd engine && timeout 150 ../.bin/engine-cuda.test -test.run '^$' -test.bench GPU -test.benchmem -test.count=3) >"$work/engine-bench.log" 2>&1
grep '^Benchmark' "$work/engine-bench.log" | tee -a "$sum"
for n in graph_break; do
	timeout 120 bash traces/pytorch/programs/record_all.sh "$work/recorded" $n >"$work/record-$n.log" 2>&1
	say "record $n: exit $? $(grep -o '"calls": [0-9]*' "$work/record-$n.log" | head -n 1) $(grep -o 'recording stopped[^;]*' "$work/record-$n.log" | head -n 1)"
	for d in sim cuda; do
		[ -f "$work/recorded/$n.cgt.jsonl" ] || continue
		r=$(timeout 60 .bin/cgtviz-cuda run --device $d "$work/recorded/$n.cgt.jsonl" 2>&1 | tail -n 1)
		say "  replay $n on $d: $r"
	done
done
timeout 150 python3 tools/gpu/recorder-overhead.py --rounds 5 >"$work/overhead.log" 2>&1
grep 'medians\|added' "$work/overhead.log" | tail -n 1 | tee -a "$sum"
# The TUI, on the GPU by default: its status line names the device.
if command -v tmux >/dev/null; then
	tmux -L cgt new-session -d -x 140 -y 40 ".bin/cgtviz-cuda examples/seed-a-checkpoint.cgt.jsonl; sleep 30"
	sleep 3
	for k in n n n n n; do tmux -L cgt send-keys "$k"; sleep 0.3; done
	sleep 1
	tmux -L cgt capture-pane -p >"$work/tui.txt"
	tmux -L cgt kill-server
	say "tui: $(grep -o 'cuda:0[^│]*' "$work/tui.txt" | head -n 1)"
fi
tar -czf "$out/final-run.tgz" -C "$work" .
say "done $(date -u +%T)"
