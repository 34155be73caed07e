#!/usr/bin/env bash
# screenshot.sh: a PNG of the TUI at the demo's checkpoint, for the README,
# and the same screen as text with its colours (docs/tui-demo.ansi: `cat`
# it in a terminal). The screen is captured with tmux (colours kept),
# turned into HTML by aha, and photographed by headless Chromium (Debian
# packages: tmux aha chromium fonts-dejavu-core). `make screenshot` runs it.
set -euo pipefail
out=${1:-docs/tui.png}
ansi=${2:-docs/tui-demo.ansi}
tmp=$(mktemp -d)
trap 'tmux kill-session -t cgtviz-shot 2>/dev/null || true; rm -rf "$tmp"' EXIT
go build -o "$tmp/cgtviz" ./cmd/cgtviz
tmux new-session -d -s cgtviz-shot -x 132 -y 42 "$tmp/cgtviz"
sleep 1.5
tmux send-keys -t cgtviz-shot g && sleep 0.3 && tmux send-keys -t cgtviz-shot 32 Enter
sleep 1.5
tmux capture-pane -e -t cgtviz-shot -p > "$tmp/screen.ansi"
cp "$tmp/screen.ansi" "$ansi"
aha --black --title cgtviz < "$tmp/screen.ansi" |
	sed 's|<pre>|<pre style="font-family: DejaVu Sans Mono, monospace; font-size: 13px; line-height: 1.15; margin: 8px;">|' > "$tmp/screen.html"
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
	--disable-component-update --disable-sync --user-data-dir="$tmp/chromium" --hide-scrollbars \
	--window-size=1100,700 --screenshot="$out" "file://$tmp/screen.html" 2>/dev/null
echo "wrote $out and $ansi"
