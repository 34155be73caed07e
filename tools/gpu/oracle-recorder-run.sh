#!/usr/bin/env bash
# A GPU call for PyTorch's side only (no cgtviz binary needed but
# .bin/cgtviz-cuda for the replays): the oracle probe of the open random
# traces (check_invariants statuses), torch-oracle2.py over every example
# (each def its own code object), the training oracle with warnings, the
# recorder's training programs recorded and replayed, and its overhead.
# Output: $OUT/oracle-recorder.tgz and $OUT/oracle-recorder.txt.
set -u
out=${OUT:-/tmp/or-out}
work=$(mktemp -d)
mkdir -p "$out" "$work/recorded"
export PYTHONUNBUFFERED=1
sum=$out/oracle-recorder.txt
say() { echo "$*" | tee -a "$sum"; }
say "oracle-recorder-run $(date -u +%Y-%m-%dT%H:%M:%SZ)"
timeout 150 python3 tools/gpu/oracle-probe.py .bin/torch-oracle.py engine/testdata/oracle/random3/*.cgt.jsonl >"$work/probe-random3.jsonl" 2>"$work/probe3.err"
say "probe random3: exit $? $(wc -l <"$work/probe-random3.jsonl") lines"
timeout 120 python3 tools/gpu/oracle-probe.py .bin/torch-oracle.py engine/testdata/oracle/random/r1195.cgt.jsonl engine/testdata/oracle/random/r1256.cgt.jsonl >"$work/probe-random1.jsonl" 2>"$work/probe1.err"
say "probe random1: exit $? $(wc -l <"$work/probe-random1.jsonl") lines"
timeout 200 python3 .bin/torch-oracle2.py --jobs 8 examples/*.cgt.jsonl >"$work/oracle2-examples.jsonl" 2>"$work/oracle2.err"
say "oracle2 examples: exit $? $(wc -l <"$work/oracle2-examples.jsonl") traces"
timeout 120 python3 tools/gpu/train-oracle.py examples/s24-pending-backward.cgt.jsonl examples/recorded/train_mlp.cgt.jsonl >"$work/train-oracle.jsonl" 2>"$work/train-oracle.err"
say "train-oracle: exit $? $(wc -l <"$work/train-oracle.jsonl") traces"
for n in train_mlp train_compiled_opt; do
	timeout 120 bash traces/pytorch/programs/record_all.sh "$work/recorded" $n >"$work/record-$n.log" 2>&1
	say "record $n: exit $? $(grep -o '"calls": [0-9]*' "$work/record-$n.log" | head -n 1) $(grep -o 'recording stopped.*' "$work/record-$n.log" | head -n 1)"
	for d in sim cuda; do
		[ -f "$work/recorded/$n.cgt.jsonl" ] || continue
		say "  replay $n on $d: $(timeout 60 .bin/cgtviz-cuda run --device $d "$work/recorded/$n.cgt.jsonl" 2>&1 | tail -n 1)"
	done
done
timeout 150 python3 tools/gpu/recorder-overhead.py --rounds 5 >"$work/overhead.log" 2>&1
tail -n 2 "$work/overhead.log" | head -n 1 | tee -a "$sum"
tar -czf "$out/oracle-recorder.tgz" -C "$work" .
say "done $(date -u +%T)"
