#!/usr/bin/env bash
# tui-rss.sh measures the memory of the real terminal debugger on a big
# tree (issue 14: "the TUI at 10,000 nodes ... under 500 MB"), the way a
# person would use it: it writes the 10,000-node trace of ui's
# BenchmarkMovesTree10k (one def called with 10,000 input shapes, each
# warmed up and recorded, then 20,000 replays round robin: 120,001
# records), opens it with `cgtviz tui -device sim` in a 160x48 tmux
# terminal, runs it to its end (c), steps back 30 times (N), forward 30
# times (n), and jumps to 10 lines spread over the trace (g LINE enter),
# waiting after each key until the status line shows where it landed.
# After each phase it prints the process's RSS and its high-water mark
# (VmRSS, VmHWM from /proc/PID/status), its CPU time (utime+stime from
# /proc/PID/stat) and the wall time of the phase.
#
#   tools/tui-rss.sh                   build ./cmd/cgtviz and measure
#   CGTVIZ_BIN=path tools/tui-rss.sh   measure a binary built elsewhere
#   NODES=1000 REPLAYS=2000 tools/tui-rss.sh   another tree
#   GCTRACE=1 tools/tui-rss.sh         also print the Go collector's last
#                                      lines (GODEBUG=gctrace=1): the live
#                                      heap and the goal behind the RSS
#   TUI_FLAGS='-keyframe-mb 64' tools/tui-rss.sh   flags for the TUI
#
# The figures vary with the machine's load (CPU and wall times most, RSS
# with the collector's timing); compare runs made one after the other.
# Like tools/e2e/tui.sh it runs its own tmux server in the foreground, on a
# socket in its own temporary folder, so it never touches a user's
# sessions.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
nodes=${NODES:-10000}
replays=${REPLAYS:-20000}
# $work, $sock, tm, the cleanup and $bin (an absolute path).
. "$root/tools/lib/tmux-work.sh"

die() {
	echo "tui-rss.sh: $1" >&2
	if [[ -n ${2:-} ]]; then
		echo "---- the screen:" >&2
		tm capture-pane -p -t main >&2 || true
	fi
	exit 1
}

# The trace of ui's bigTree (scale_test.go), record for record: the header,
# the def, then for call i a tensor of shape [2+j%100, 2+j/100], a step and
# a call, with j = i/2 while the tree grows (a warmup, then a recording of
# each shape) and j = (i-2*nodes)%nodes after (the replays).
trace=$work/tree-$nodes.cgt.jsonl
records=$((1 + 3 * (2 * nodes + replays)))
awk -v nodes="$nodes" -v n="$records" 'BEGIN {
	print "{\"cgtviz\": 1}"
	print "{\"op\": \"def\", \"fn\": \"f\", \"params\": [\"x\"], \"body\": [{\"out\": \"y\", \"k\": \"add\", \"a\": \"x\", \"b\": 1}], \"returns\": [\"y\"]}"
	k = 1
	for (i = 0; k < n; i++) {
		j = i < 2 * nodes ? int(i / 2) : (i - 2 * nodes) % nodes
		l[0] = sprintf("{\"op\": \"tensor\", \"name\": \"x\", \"shape\": [%d, %d], \"init\": \"zeros\"}", 2 + j % 100, 2 + int(j / 100))
		l[1] = "{\"op\": \"step\"}"
		l[2] = "{\"op\": \"call\", \"fn\": \"f\", \"args\": [\"x\"], \"out\": [\"y\"]}"
		for (m = 0; m < 3 && k < n; m++) { print l[m]; k++ }
	}
}' >"$trace"
# The header is line 1, so the last record is on line records+1.
last=$((records + 1))

(cd "$work" && exec tmux -S "$sock" -f /dev/null -D </dev/null >"$work/server.out" 2>&1) &
server=$!
for _ in $(seq 1 100); do
	[[ -S $sock ]] && break
	sleep 0.05
done
[[ -S $sock ]] || die "the tmux server never made its socket"

env=()
[[ -n ${GCTRACE:-} ]] && env=(GODEBUG=gctrace=1)
# exec, so that the pane's process is cgtviz itself; the collector's trace
# goes to a file, not over the screen.
# shellcheck disable=SC2086 # TUI_FLAGS is split into flags on purpose
tm new-session -d -s main -x 160 -y 48 \
	"exec env ${env[*]:-} '$bin' tui -device sim ${TUI_FLAGS:-} '$trace' 2>'$work/stderr'" ||
	die "tmux could not open a session"
pid=$(tm display-message -p -t main '#{pane_pid}')

ticks=$(getconf CLK_TCK)
# cpu prints the process's CPU time in ms (user + system).
cpu() { awk -v t="$ticks" '{ sub(/^.*\) /, ""); print int(($12 + $13) * 1000 / t) }' "/proc/$pid/stat"; }
kb() { awk -v k="$1:" '$1 == k { print int($2 / 1024) }' "/proc/$pid/status"; }
now() { date +%s%N; }

# status prints the screen's status line: the one with "line L/last" or
# "start/last".
status() { tm capture-pane -p -t main | grep -E "(line [0-9]+|start)/$last" | tail -n 1 || true; }

# await waits until the status line shows line L (or the start) and no
# work in progress, for at most limit seconds.
await() {
	local want=$1 limit=${2:-60} s deadline
	deadline=$(($(date +%s) + limit))
	while :; do
		kill -0 "$pid" 2>/dev/null || die "cgtviz exited"
		s=$(status)
		if [[ $s == *"$want/$last"* && $s != *"running…"* ]]; then
			return 0
		fi
		(($(date +%s) < deadline)) || die "waited $limit s for $want" screen
		sleep 0.02
	done
}

printf '%-28s %8s %8s %9s %9s\n' phase "RSS MB" "HWM MB" "CPU ms" "wall ms"
t0=$(now)
c0=0
phase() {
	local t c
	t=$(now)
	c=$(cpu)
	printf '%-28s %8s %8s %9s %9s\n' "$1" "$(kb VmRSS)" "$(kb VmHWM)" "$((c - c0))" "$(((t - t0) / 1000000))"
	t0=$t c0=$c
}

await start 30
phase "first screen"

tm send-keys -t main c
await "line $last" 600
phase "c to the end (line $last)"

line=$last
for _ in $(seq 1 30); do
	line=$((line - 1))
	tm send-keys -t main N
	await "line $line"
done
phase "30 N"

for _ in $(seq 1 30); do
	line=$((line + 1))
	tm send-keys -t main n
	await "line $line"
done
phase "30 n"

# Ten lines spread over the trace, in an order that makes each jump cross
# keyframe intervals (a fixed list, so that runs compare).
for frac in 13 87 41 3 66 29 95 52 8 74; do
	line=$((2 + (records - 1) * frac / 100))
	tm send-keys -t main g
	for ((k = 0; k < ${#line}; k++)); do
		tm send-keys -t main "${line:k:1}"
	done
	tm send-keys -t main Enter
	await "line $line"
done
phase "10 jumps"

sleep 5
phase "5 s idle after"

if [[ -n ${GCTRACE:-} ]]; then
	echo "---- the collector's last cycles (GODEBUG=gctrace=1):"
	grep '^gc ' "$work/stderr" | tail -n 8
fi
tm send-keys -t main q
