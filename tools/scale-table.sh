#!/usr/bin/env bash
# scale-table.sh: the scaling table of BENCHMARKS.md in one run: `cgtviz
# run` (text report to /dev/null) on traces of 10k, 100k, 1M and 10M
# records whose trees grow to 10, 100, 1,000 and 10,000 nodes
# (tools/scalegen), each cell timed with /usr/bin/time: wall seconds,
# records per second and the peak RSS. Prints a Markdown table.
#
#   bash tools/scale-table.sh                 # builds ./cgtviz's source
#   CGTVIZ_BIN=./cgtviz bash tools/scale-table.sh
#   SCALE_RECORDS="10000 100000" SCALE_NODES="10 100" SCALE_TIMEOUT=60 bash tools/scale-table.sh
#   SCALE_ARGS=--json bash tools/scale-table.sh
#
# A cell whose tree needs more records than the cell has (5 a node) is
# "—"; one that runs past SCALE_TIMEOUT seconds (default 600) is "> N s".
# The traces are written to a temporary folder, one at a time, and removed.
set -euo pipefail

cd "$(dirname "$0")/.."
records=${SCALE_RECORDS:-"10000 100000 1000000 10000000"}
nodes=${SCALE_NODES:-"10 100 1000 10000"}
limit=${SCALE_TIMEOUT:-600}
args=${SCALE_ARGS:-}

for tool in /usr/bin/time timeout; do
	if ! command -v "$tool" >/dev/null; then
		echo "scale-table: needs $tool" >&2
		exit 2
	fi
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bin=${CGTVIZ_BIN:-}
if [ -z "$bin" ]; then
	go build -o "$tmp/cgtviz" ./cmd/cgtviz
	bin=$tmp/cgtviz
fi
go build -o "$tmp/scalegen" ./tools/scalegen

# human writes a count as 10k, 1M.
human() {
	local n=$1
	if ((n >= 1000000 && n % 1000000 == 0)); then echo "$((n / 1000000))M"
	elif ((n >= 1000 && n % 1000 == 0)); then echo "$((n / 1000))k"
	else echo "$n"; fi
}

header="| records \\ nodes |"
rule="| --- |"
for k in $nodes; do
	header+=" $k |"
	rule+=" --- |"
done
echo "cgtviz run $args: wall time, records/s, peak RSS ($(nproc) cores, $(date -u '+%Y-%m-%d %H:%M UTC'), $(git rev-parse --short HEAD 2>/dev/null || echo '?'))"
echo
echo "$header"
echo "$rule"
for r in $records; do
	row="| $(human "$r") |"
	for k in $nodes; do
		if ((r < 1 + 5 * k)); then
			row+=" — |"
			continue
		fi
		trace=$tmp/t.cgt.jsonl
		"$tmp/scalegen" -records "$r" -nodes "$k" -o "$trace"
		# timeout runs under time, so that time's peak RSS covers the run
		# (a child's peak includes its children's) and a run past the
		# limit is killed itself.
		# shellcheck disable=SC2086 # args is a list of flags
		if out=$(/usr/bin/time -f '%e %M' timeout "$limit" "$bin" run $args "$trace" 2>&1 >/dev/null | tail -1); then
			read -r secs kb <<<"$out"
			row+=" $(awk -v s="$secs" -v r="$r" -v kb="$kb" 'BEGIN {
				rate = (s > 0) ? r / s : 0
				if (rate >= 1e6) rs = sprintf("%.2fM", rate / 1e6); else rs = sprintf("%.0fk", rate / 1e3)
				printf "%.2f s, %s rec/s, %.0f MB", s, rs, kb / 1024 }') |"
		else
			code=$?
			if [[ $out == *"status 124"* ]] || ((code == 124)); then row+=" > $limit s |"; else row+=" failed ($code): ${out//|/} |"; fi
		fi
		rm -f "$trace"
	done
	echo "$row"
done
