#!/usr/bin/env bash
# One GPU call (run from the repository root on the GPU machine; carry .bin
# from `make gpu-build`-style builds):
#   1. every program of traces/pytorch/programs recorded with the recorder
#      as it is into $OUT/recorded (record_all.sh), each then replayed on
#      sim and on the GPU (.bin/cgtviz-cuda), as examples/recorded needs;
#   2. the engine's RunStream against Run on the GPU twelve times (a race
#      there read zeros once in three runs before the engine goroutine was
#      locked to its OS thread: docs/gpu-runs/2026-12-01-h200.md, run 12).
# Writes $OUT/run.txt and $OUT/recorded/*.cgt.jsonl.
set -u
out=${OUT:-/tmp/run-out}
mkdir -p "$out/recorded"
sum=$out/run.txt
: >"$sum"
say() { echo "$*" | tee -a "$sum"; }
say "run $(date -u +%Y-%m-%dT%H:%M:%SZ)"
timeout 330 bash traces/pytorch/programs/record_all.sh "$out/recorded" >"$out/record_all.log" 2>&1
say "record_all (exit $?):"
for f in "$out"/recorded/*.cgt.jsonl; do
	[ -e "$f" ] || continue
	s=$(timeout 60 .bin/cgtviz-cuda run "$f" 2>&1 | grep '^expectations' | head -n 1)
	g=$(timeout 60 .bin/cgtviz-cuda run --device cuda "$f" 2>&1 | grep '^expectations' | head -n 1)
	say "    $(basename "$f"): sim ${s:-no expectations line}; cuda ${g:-no expectations line}"
done
(cd engine && CGTVIZ_DEVICE=cuda timeout 200 ../.bin/engine-cuda.test -test.count=12 -test.run 'TestRunStreamMatchesRun' -test.v) >"$out/runstream.log" 2>&1
say "RunStream vs Run x12 on cuda (exit $?): $(grep -c '^--- PASS' "$out/runstream.log") PASS, $(grep -c '^--- FAIL' "$out/runstream.log") FAIL"
grep -A3 -- '--- FAIL' "$out/runstream.log" | head -20 | tee -a "$sum"
