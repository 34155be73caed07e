#!/usr/bin/env bash
# One call on the GPU machine for the issues of December 2026: Dynamo's
# recompile limit probed under both oracles, the recorder's programs
# recorded, the recorder's overhead, the training oracle, and every
# recorded trace replayed on sim and on the GPU. Needs .bin/ from
# `make gpu-build` plus .bin/torch-oracle.py and .bin/torch-oracle2.py
# (copies of ../shared/tools). Everything lands in $OUT/issues-run.tgz and
# $OUT/issues-run.log (the device tool returns at most 8 files).
set -u
out=${OUT:-/tmp/issues-out}
work=$(mktemp -d)
mkdir -p "$out" "$work/recorded"
export PYTHONUNBUFFERED=1
log() { echo "== $(date +%T) $*"; }
step() { # step NAME LIMIT_S CMD...
	local name=$1 limit=$2
	shift 2
	log "$name"
	timeout "$limit" "$@" >"$work/$name.out" 2>"$work/$name.err"
	echo "   exit $? ($(wc -l <"$work/$name.out") lines out)"
	tail -n 3 "$work/$name.err" | sed 's/^/   err: /'
}
nvidia-smi -L
probes="examples/s37-recompile-limit.cgt.jsonl tools/gpu/probes/*.cgt.jsonl"
TORCH_LOGS=recompiles step oracle1-probes 150 python3 .bin/torch-oracle.py $probes
TORCH_LOGS=recompiles step oracle2-probes 150 python3 .bin/torch-oracle2.py $probes
step record 300 bash traces/pytorch/programs/record_all.sh "$work/recorded"
step overhead 120 python3 tools/gpu/recorder-overhead.py --json
step train-oracle 120 python3 tools/gpu/train-oracle.py examples/s24-pending-backward.cgt.jsonl examples/recorded/train_mlp.cgt.jsonl
for t in "$work"/recorded/*.cgt.jsonl examples/recorded/*.cgt.jsonl; do
	n=$(basename "$t" .cgt.jsonl)
	for d in sim cuda; do
		timeout 60 .bin/cgtviz-cuda run --device $d "$t" >"$work/replay-$n-$d.out" 2>&1
		echo "replay $n $d: exit $? $(tail -n 1 "$work/replay-$n-$d.out")"
	done
done | tee "$work/replays.txt"
tar -czf "$out/issues-run.tgz" -C "$work" .
log done
