#!/usr/bin/env bash
# tui.sh drives the cgtviz terminal debugger in tmux the way a person would:
# it opens the embedded demo in a 120x40 terminal, steps with n, opens the
# help with ?, steps back with N, searches (/), sets, lists and deletes a
# breakpoint (:b), runs to a line (:until), diffs two positions (v, V),
# opens the memory timeline (M), copies (y), goes to the checkpoint's line
# (g 32), saves with s, quits with q and resumes with `cgtviz open` under
# NO_COLOR, checking after each key what the screen shows (the tree's
# "#0 foo", the line in the status line).
#
#   tools/e2e/tui.sh                  build ./cmd/cgtviz and run the checks
#   CGTVIZ_BIN=path tools/e2e/tui.sh  use a binary built elsewhere
#   SCREENSHOT=file tools/e2e/tui.sh  also save the screen at the checkpoint,
#                                     with its colors (capture-pane -e)
#
# It runs its own tmux server, on a socket in its own temporary folder, so
# it never touches a user's sessions. The server runs in the foreground as
# this script's child (tmux -D) instead of daemonizing: a sandbox that ends
# processes which leave their parent's tree (as CI's did: the client saw
# "server exited unexpectedly") then leaves it alone.
# make e2e runs it; make test runs it (ui's TestE2E, when tmux is installed)
# and the same walk without tmux (cmd/cgtviz's TestTUIEndToEnd).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
# $work, $sock, tm, the cleanup and $bin (an absolute path).
. "$root/tools/lib/tmux-work.sh"

# The server, logging (-v) into $work so that a failure can say why.
(cd "$work" && exec tmux -v -S "$sock" -f /dev/null -D </dev/null >"$work/server.out" 2>&1) &
server=$!

# fail reports what the server left behind and exits with status 3, which
# ui's TestE2E reads as "tmux cannot run here" rather than a wrong screen.
fail() {
	echo "tui.sh: $1" >&2
	tmux -V >&2 || true
	if kill -0 "$server" 2>/dev/null; then
		echo "tui.sh: the tmux server (pid $server) is running" >&2
	else
		wait "$server" 2>/dev/null && rc=0 || rc=$?
		echo "tui.sh: the tmux server (pid $server) has exited with status $rc" >&2
	fi
	cat "$work/server.out" >&2 || true
	for f in "$work"/tmux-server-*.log; do
		[[ -f $f ]] && { echo "---- tail of $f"; tail -n 30 "$f"; } >&2
	done
	exit 3
}

for _ in $(seq 1 100); do
	[[ -S $sock ]] && break
	kill -0 "$server" 2>/dev/null || fail "the tmux server exited before it listened"
	sleep 0.05
done
[[ -S $sock ]] || fail "the tmux server never made its socket $sock"

# start opens a 120x40 session running a command.
start() {
	tm new-session -d -s main -x 120 -y 40 "$1" || fail "tmux could not open a session"
}

# The shell prints the exit status once the TUI ends, so the script can see
# that q quits cleanly.
start "cd '$work' && TERM=xterm-256color '$bin'; echo \"cgtviz exited with status \$?\"; sleep 60"

screen() { tm capture-pane -p -t main 2>/dev/null; }

# expect waits (up to 20 s: a loaded CI machine) until the screen shows a
# fixed string.
expect() {
	local i
	for i in $(seq 1 200); do
		if screen | grep -qF -- "$1"; then
			return 0
		fi
		tm has-session -t main 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$server" 2>/dev/null || fail "the tmux server died while the screen was awaited"
	# The pane ends in `sleep 60`, so a crash of cgtviz leaves the session
	# up, its screen showing why; a session gone means tmux could not run
	# the pane at all.
	tm has-session -t main 2>/dev/null || fail "the tmux session ended: tmux could not run its pane"
	echo "tui.sh: the screen never showed: $1" >&2
	echo "---- screen ----" >&2
	screen >&2
	exit 1
}

# refuse fails when the screen shows a string it must not.
refuse() {
	if screen | grep -qF -- "$1"; then
		echo "tui.sh: the screen shows: $1" >&2
		screen >&2
		exit 1
	fi
}

key() { tm send-keys -t main -l -- "$1"; }

enter() { tm send-keys -t main Enter; }

expect "start/41"
expect "1 Tree"
expect "no graphs yet"
refuse "#0 foo"

for _ in $(seq 1 14); do key n; done
expect "line 15/41"
expect "#0 foo"          # the first recording made a root
expect "← recorded"
expect "record #0"       # the trace pane's action column

key n
expect "line 16/41"

key '?'
expect "reverse-continue" # the full help
expect "memory timeline"
key '?'

key N
expect "line 15/41"

# Breakpoints: a typo is refused; one is set, listed by :b alone, deleted.
key ':b fn fe'; enter
expect 'no function "fe" in this trace'
key ':b line 20'; enter
expect "breakpoint set: line 20"
key ':b'; enter
expect "1: line 20"
key d
expect "breakpoint deleted: line 20"
enter

# Run to a line, then a diff of two positions: line 32 recorded #2.
key ':until 31'; enter
expect "ran to line 31"
key v
expect "diff: marked line 31"
key n
expect "line 32/41"
key V
expect "diff line 31 → line 32"
expect "nodes added (1)"
enter

# Search what the trace pane shows (its action column), not the raw trace.
key 4; key '/record #2'; enter
expect "/record #2 in Trace: line 32"


# The memory timeline of the graph pool; the tensors' states in words.
key M
expect "memory of the graph pool"
key M
key 6
expect "● live"
key y
expect "to the clipboard (OSC 52)"

# The checkpoint's line: a and b were re-allocated, the story cause first.
key g; key 32; enter
expect "line 32/41"
expect "re-allocated for live tensors (2)"
expect "#2 fee"
expect "#1 cannot replay"
if [[ -n ${SCREENSHOT:-} ]]; then
	tm capture-pane -e -p -t main >"$SCREENSHOT"
fi

# Save the session, quit, and resume it with `cgtviz open`.
key s
expect "saved session to cgtviz-session.json"
key q
expect "cgtviz exited with status 0"

# Resume without color (NO_COLOR): the same screen, and no color sequence
# in what the terminal shows.
tm kill-session -t main
start "cd '$work' && NO_COLOR=1 TERM=xterm-256color '$bin' open cgtviz-session.json; echo \"cgtviz exited with status \$?\"; sleep 60"
expect "line 32/41"
expect "#2 fee"
expect "a 512 B^"
expect "● live"
# A color is an SGR parameter 30-37, 40-47, 90-97, 100-107, 38 or 48.
color=$'\e''\[([0-9;]*;)?(3[0-8]|4[0-8]|9[0-7]|10[0-7])[;m]'
if tm capture-pane -e -p -t main | grep -qE "$color"; then
	echo "tui.sh: colors on screen with NO_COLOR set" >&2
	exit 1
fi
key q
expect "cgtviz exited with status 0"
echo "tui.sh: ok"
