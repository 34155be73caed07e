# tmux-work.sh is sourced by the scripts that drive the TUI in tmux
# (tools/e2e/tui.sh, tools/tui-rss.sh). It makes their temporary folder
# ($work) with the socket of their own tmux server ($sock), tm to talk to
# that server, the cleanup that kills it and removes the folder on exit,
# and $bin: CGTVIZ_BIN, or ./cmd/cgtviz built from $root, as an absolute
# path (the sessions run in $work). The caller sets root first, and starts
# the server itself (its flags differ), setting $server to its pid.

work=$(mktemp -d)
sock=$work/tmux.sock
server=
tm() { tmux -S "$sock" -f /dev/null "$@"; }
cleanup() {
	if [[ -n $server ]]; then
		tm kill-server 2>/dev/null || kill "$server" 2>/dev/null || true
		wait "$server" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

bin=${CGTVIZ_BIN:-}
if [[ -z $bin ]]; then
	(cd "$root" && go build -o "$work/cgtviz" ./cmd/cgtviz)
	bin=$work/cgtviz
fi
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
