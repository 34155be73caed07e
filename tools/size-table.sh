#!/usr/bin/env bash
# size-table.sh: BENCHMARKS.md's table by model size in one run (issue 30
# item 6): `cgtviz run` (text report to /dev/null) on GPT-2-like training
# loops of 0.1M to 1B parameters (tools/modelgen) and on an 8B float32
# model (shared/tools/bigmodel-trace.py, when python3 and the file are
# there), each timed with /usr/bin/time: wall seconds, records per second
# and the peak RSS; then the TUI's n, N, g and M on the same training loops
# (ui's BenchmarkMovesModel and BenchmarkMemoryTimelineModel). Prints
# Markdown.
#
#   bash tools/size-table.sh                 # device sim; builds ./cgtviz's source
#   SIZE_DEVICE=cuda CGTVIZ_BIN=.bin/cgtviz-cuda bash tools/size-table.sh   # on the GPU machine
set -euo pipefail
cd "$(dirname "$0")/.."
dev=${SIZE_DEVICE:-sim}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bin=${CGTVIZ_BIN:-}
if [ -z "$bin" ]; then
	go build -o "$tmp/cgtviz" ./cmd/cgtviz
	bin=$tmp/cgtviz
fi
gen=${MODELGEN_BIN:-}
if [ -z "$gen" ]; then
	go build -o "$tmp/modelgen" ./tools/modelgen
	gen=$tmp/modelgen
fi

echo "| model | params | records | \`run\` wall | records/s | peak RSS |"
echo "| --- | --- | --- | --- | --- | --- |"
row() { # name trace
	local recs
	recs=$(($(wc -l <"$2") - 1))
	/usr/bin/time -f "%e %M" -o "$tmp/t" "$bin" run --device "$dev" "$2" >/dev/null 2>"$tmp/err" || {
		echo "| $1 | | $recs | failed: $(tail -1 "$tmp/err") | | |"
		return
	}
	read -r wall kb <"$tmp/t"
	local params
	params=$(head -1 "$2" | grep -o '[0-9.]*[MB] params' | head -1 || true)
	awk -v n="$1" -v p="${params:-—}" -v r="$recs" -v w="$wall" -v kb="$kb" 'BEGIN {
		rs = (w > 0) ? sprintf("%.0f", r / w) : "—"
		printf "| %s | %s | %d | %.2f s | %s | %.0f MB |\n", n, p, r, w, rs, kb / 1024 }'
}
for cfg in "toy 2 64" "124M 12 768" "355M 24 1024" "1B 24 1792"; do
	set -- $cfg
	"$gen" -layers "$2" -width "$3" -o "$tmp/$1.cgt.jsonl"
	row "$1 (training, $2x$3)" "$tmp/$1.cgt.jsonl"
done
if command -v python3 >/dev/null && [ -f ../shared/tools/bigmodel-trace.py ]; then
	python3 ../shared/tools/bigmodel-trace.py float32 32 "$tmp/8b.cgt.jsonl"
	row "8B (inference, float32, 32 Llama-3-8B layers, 100 calls)" "$tmp/8b.cgt.jsonl"
fi
if [ "$dev" = sim ] && command -v go >/dev/null; then
	echo
	echo "The TUI on the same training loops (ms a key, View included):"
	echo
	go test ./ui -run '^$' -bench 'BenchmarkMovesModel|BenchmarkMemoryTimelineModel' -benchtime 5x -count 1 2>/dev/null |
		awk '/^Benchmark/ {
			split($1, p, "/"); size = p[2]; what = p[3]; sub(/-[0-9]+$/, "", what); sub(/-[0-9]+$/, "", size)
			for (i = 3; i < NF; i++) if ($(i+1) ~ /^ms\//) { k = $(i+1); sub(/^ms\//, "", k); v[size, k] = $i; sizes[size] = 1 }
			for (i = 3; i < NF; i++) if ($(i+1) == "MB-heap") heap[size] = $i
		}
		END {
			print "| model | n | N | g | M | heap |"; print "| --- | --- | --- | --- | --- | --- |"
			n = split("toy 124M 355M 1B", order, " ")
			for (j = 1; j <= n; j++) { s = order[j]; if (!(s in sizes)) continue
				printf "| %s | %s ms | %s ms | %s ms | %s ms | %s MB |\n", s, v[s,"step"], v[s,"back"], v[s,"jump"], v[s,"M"], heap[s] }
		}'
fi
