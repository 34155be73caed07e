#!/usr/bin/env bash
# replay-cuda.sh: replays traces already recorded (a peer-suite run's
# traces/, say, copied into .bin and carried) with the cuda binary on the
# GPU and on sim, JOBS (8) at a time, from the repository root on the GPU machine:
#
#     bash tools/gpu/replay-cuda.sh DIR...      (default: .bin/peer-traces examples/recorded)
#
# Writes $OUT/replay.txt: a line a trace (its expectations line on sim and
# on cuda) and a summary line a folder.
set -u
out=${OUT:-/tmp/replay-out}
mkdir -p "$out"
sum=$out/replay.txt
: >"$sum"
cg=${CGTVIZ:-.bin/cgtviz-cuda}
[ $# -gt 0 ] || set -- .bin/peer-traces examples/recorded
echo "replay $(date -u +%Y-%m-%dT%H:%M:%SZ) $(git log -1 --format=%h 2>/dev/null)" | tee -a "$sum"
for dir in "$@"; do
	ls "$dir"/*.cgt.jsonl 2>/dev/null |
		CG=$cg xargs -P ${JOBS:-8} -I{} sh -c 's=$(timeout 60 "$CG" run "{}" 2>&1 | grep "^expectations" | head -n 1); g=$(timeout 60 "$CG" run --device cuda "{}" 2>&1 | grep "^expectations\|^cgtviz" | head -n 1); echo "$(basename "{}") | sim ${s:-no expectations line} | cuda ${g:-no expectations line}"' >"$out/lines.txt"
	n=$(wc -l <"$out/lines.txt")
	simok=$(grep -c '| sim expectations: [0-9]* passed, 0 failed' "$out/lines.txt")
	cudaok=$(grep -c '| cuda expectations: [0-9]* passed, 0 failed' "$out/lines.txt")
	echo "$dir: $n traces; every expectation met: $simok on sim, $cudaok on cuda" | tee -a "$sum"
	grep -v '| sim expectations: [0-9]* passed, 0 failed | cuda expectations: [0-9]* passed, 0 failed' "$out/lines.txt" | cut -c1-300 | sed 's/^/    /' | tee -a "$sum"
	sort "$out/lines.txt" >>"$sum"
done
