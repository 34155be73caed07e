package ui

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/sessions"
)

// statusOf is the status line of the screen.
func statusOf(m *Model) string {
	lines := strings.Split(screenText(m), "\n")
	return lines[m.layout().bodyH+1]
}

// TestOneNumbering walks the demo speaking only trace lines: g, :line, a
// breakpoint set with b and hit with c, a bookmark, and a saved session
// reopened all say and take the line the trace pane shows.
func TestOneNumbering(t *testing.T) {
	dir := t.TempDir()
	m := newModel(t, seedA, 120, 40, Options{SavePath: filepath.Join(dir, "s.json")})
	press(t, m, "g", "3", "2", "enter")
	if m.Pos() != 31 || !strings.Contains(statusOf(m), "line 32/41") || !strings.Contains(screenText(m), "▶◆32 record #2") {
		t.Fatalf("g 32: at %d, status %q", m.Pos(), statusOf(m))
	}
	press(t, m, "g", "0", "enter")
	if m.Pos() != 0 || !strings.Contains(statusOf(m), "start/41") {
		t.Fatalf("g 0: at %d, status %q", m.Pos(), statusOf(m))
	}
	// b on the trace row of line 32, then c: the hit names the line.
	m.focusPane(paneTrace)
	m.trace.cursor = 30
	press(t, m, "b", "c")
	if m.Pos() != 31 || m.Message() != "breakpoint line 32 hit at line 32" {
		t.Errorf("c to the breakpoint: at %d, %q", m.Pos(), m.Message())
	}
	press(t, m, append(append([]string{"m"}, typed("ck")...), "enter")...)
	if !strings.Contains(m.Message(), `"ck" at line 32`) {
		t.Errorf("bookmark: %q", m.Message())
	}
	press(t, m, "s")
	s, err := sessions.Load(filepath.Join(dir, "s.json"), sessions.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	back := New(s, Options{})
	back.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	if !strings.Contains(statusOf(back), "line 32/41") {
		t.Errorf("the reopened session's status line %q, want line 32/41", statusOf(back))
	}
	command(t, back, "line 15")
	if back.Pos() != 14 || !strings.Contains(statusOf(back), "line 15/41") {
		t.Errorf(":line 15: at %d, %q", back.Pos(), statusOf(back))
	}
}

// TestSearchShown searches what the panes show: the trace's action
// column, the tree's node ids, the tensors' owners; ctrl+n and ctrl+p move
// between matches, and matches are highlighted.
func TestSearchShown(t *testing.T) {
	m := newModel(t, seedA, 120, 40, Options{})
	command(t, m, "line 41")
	search := func(q string) { press(t, m, append(append([]string{"/"}, typed(q)...), "enter")...) }
	search("record #2")
	if got := m.recs.line(m.trace.cursor); got != 32 || m.msgErr {
		t.Fatalf("/record #2: cursor on line %d (%q), want 32", got, m.Message())
	}
	search("replay #0")
	var lines []int
	for range 4 {
		lines = append(lines, m.recs.line(m.trace.cursor))
		press(t, m, "ctrl+n")
	}
	// Lines 23, 30 and 38 replayed #0 (38 replays as the walk goes on).
	if fmt.Sprint(lines) != "[38 23 30 38]" {
		t.Errorf("replay #0 matches %v, want [38 23 30 38]", lines)
	}
	press(t, m, "ctrl+p", "ctrl+p")
	if got := m.recs.line(m.trace.cursor); got != 30 {
		t.Errorf("ctrl+p twice: line %d, want 30", got)
	}
	// The checkpoint is found by its ◆ row.
	search("◆ checkpoint")
	if got := m.recs.line(m.trace.cursor); got != 32 {
		t.Errorf("/◆ checkpoint: line %d, want 32", got)
	}
	// In the tree: its node ids.
	press(t, m, "1")
	search("#1 fee")
	if l, ok := m.tree.selected(); !ok || l.id != 1 || m.focus != paneTree {
		t.Errorf("/#1 fee in the tree selected %+v", l)
	}
	// In the tensors: what the table shows.
	press(t, m, "6")
	search("replay output")
	if m.msgErr || !strings.Contains(m.Message(), "in Tensors") {
		t.Errorf("/replay output in the tensors: %q", m.Message())
	}
	search("no such thing")
	if !m.msgErr || !strings.Contains(m.Message(), `"no such thing" not found in Tensors`) {
		t.Errorf("a search without a match: %q", m.Message())
	}
	hi := m.styles.Match.Render("record")
	if got := highlight("a record b record", "record", m.styles.Match); strings.Count(got, hi) != 2 {
		t.Errorf("highlight marks %q", got)
	}
	c := newModel(t, seedA, 120, 40, Options{Color: true})
	command(t, c, "line 41")
	press(t, c, append(append([]string{"1", "/"}, typed("fee")...), "enter")...)
	if !strings.Contains(c.View().Content, c.styles.Match.Render("fee")) {
		t.Error("the screen does not highlight the matches")
	}
}

// TestBreakpointList lists, deletes and refuses breakpoints, and runs to
// the cursor.
func TestBreakpointList(t *testing.T) {
	m := newModel(t, seedA, 120, 40, Options{})
	command(t, m, "b line 20")
	command(t, m, "b fn fee")
	command(t, m, "b")
	if m.mode != modeOverlay || len(m.over.bps) != 2 || !strings.Contains(screenText(m), "2: fn fee") {
		t.Fatalf(":b alone: mode %d, %v\n%s", m.mode, m.over.bps, screenText(m))
	}
	press(t, m, "j", "d")
	if got := m.sess.Breakpoints(); len(got) != 1 || got[0].Line != 20 || !strings.Contains(m.Message(), "deleted: fn fee") {
		t.Errorf("d on fn fee: %v, %q", got, m.Message())
	}
	press(t, m, "esc")
	// Run to the cursor: enter on line 32's row stops first at line 20.
	m.focusPane(paneTrace)
	m.trace.cursor = 30
	press(t, m, "enter")
	if m.Pos() != 19 || !strings.Contains(m.Message(), "breakpoint line 20 hit at line 20 (before line 32)") {
		t.Errorf("enter on line 32 with a breakpoint at 20: at %d, %q", m.Pos(), m.Message())
	}
	command(t, m, "delete 1")
	if len(m.sess.Breakpoints()) != 0 {
		t.Errorf(":delete 1 left %v", m.sess.Breakpoints())
	}
	command(t, m, "delete 1")
	if !m.msgErr || !strings.Contains(m.Message(), "no breakpoint 1 (there are 0") {
		t.Errorf(":delete 1 of none: %q", m.Message())
	}
	m.trace.cursor = 30
	press(t, m, "enter")
	if m.Pos() != 31 || m.Message() != "ran to line 32" {
		t.Errorf("enter on line 32: at %d, %q", m.Pos(), m.Message())
	}
	command(t, m, "until 36")
	if m.Pos() != 35 || m.Message() != "ran to line 36" {
		t.Errorf(":until 36: at %d, %q", m.Pos(), m.Message())
	}
	command(t, m, "until 15")
	if m.Pos() != 14 || m.Message() != "back at line 15" {
		t.Errorf(":until 15 from 36: at %d, %q", m.Pos(), m.Message())
	}
	for line, want := range map[string]string{
		"until 99":   "no record at line 99",
		"b fn fe":    `no function "fe" in this trace (foo, fee)`,
		"b line 999": "no record at line 999",
	} {
		command(t, m, line)
		if !m.msgErr || !strings.Contains(m.Message(), want) {
			t.Errorf(":%s: %q, want %q", line, m.Message(), want)
		}
	}
	if len(m.sess.Breakpoints()) != 0 {
		t.Errorf("refused breakpoints were set: %v", m.sess.Breakpoints())
	}
}

// TestDiffFlow marks a position, moves, and reads the diff.
func TestDiffFlow(t *testing.T) {
	m := newModel(t, seedA, 120, 40, Options{})
	press(t, m, "V")
	if !m.msgErr || !strings.Contains(m.Message(), "mark a position first (v)") {
		t.Errorf("V without a mark: %q", m.Message())
	}
	command(t, m, "line 31")
	press(t, m, "v", "n", "V")
	text := strings.Join(m.over.lines, "\n")
	for _, w := range []string{
		"counters: recordings +1 · replays +0 · warmups +0 · checkpoints +1",
		"nodes added (1)\n    dev 0 #2 fee (parent #0), recorded at line 32",
		"blocks changed (1)\n    dev 0 graph 0x7f0000200000: ▒ live-invisible 2.0 MiB → █ allocated 512 B · holders a,b → out",
		"blocks new (a split or a new segment) (3)",
		"tensors born (1)\n    out [4] graph pool",
		"tensors died (0)",
	} {
		if !strings.Contains(text, w) {
			t.Errorf("the diff lacks %q:\n%s", w, text)
		}
	}
	if !strings.Contains(screenText(m), "diff line 31 → line 32") {
		t.Errorf("the popup's title:\n%s", screenText(m))
	}
	press(t, m, "esc")
	// del a at line 17: a's storage died.
	command(t, m, "line 16")
	press(t, m, "v", "n", "V")
	if text := strings.Join(m.over.lines, "\n"); !strings.Contains(text, "tensors died (1)\n    a gone") {
		t.Errorf("the diff over del a:\n%s", text)
	}
}

// TestCopy copies the trace row under the cursor, the selected node and
// the message through OSC 52.
func TestCopy(t *testing.T) {
	m := newModel(t, seedA, 120, 40, Options{})
	command(t, m, "line 32")
	clip := func(keys ...string) string {
		t.Helper()
		var cmd tea.Cmd
		for _, k := range keys {
			_, cmd = m.Update(keyMsg(k))
		}
		if cmd == nil {
			t.Fatalf("%v gave no command (%q)", keys, m.Message())
		}
		return fmt.Sprint(cmd())
	}
	if got := clip("4", "y"); got != "32 record #2 ◆ checkpoint call fee(b) -> out" {
		t.Errorf("y on the trace: %q", got)
	}
	if got := clip("1", "y"); !strings.HasPrefix(got, "node #2 fee (function 1, inference) · dev 0") || !strings.Contains(got, "CUDA graph (1 nodes):") {
		t.Errorf("y on the tree: %q", got)
	}
	if !strings.Contains(m.Message(), "to the clipboard (OSC 52)") {
		t.Errorf("y says %q", m.Message())
	}
	msg := m.Message()
	if got := clip("Y"); got != msg {
		t.Errorf("Y copied %q, want the message %q", got, msg)
	}
}

// TestTensorColumns: state and owner read whole at 80, 120 and 200
// columns, a stale row says so without color, and l scrolls to the
// columns cut off.
func TestTensorColumns(t *testing.T) {
	const s08 = "../examples/s08-overwritten-errors.cgt.jsonl"
	stale := regexp.MustCompile(`out2 +× stale +none \(freed\)`)
	live := regexp.MustCompile(`out4,out5 +● live +none \(replay output\)`)
	for _, sz := range [][2]int{{80, 24}, {120, 40}, {200, 60}} {
		m := newModel(t, s08, sz[0], sz[1], Options{})
		command(t, m, "line 16")
		press(t, m, "6")
		scr := screenText(m)
		if !stale.MatchString(scr) || !live.MatchString(scr) {
			t.Errorf("%dx%d: the tensors' state and owner are not whole:\n%s", sz[0], sz[1], scr)
		}
		if sz[0] == 80 {
			if strings.Contains(scr, "0x7f0000200400") {
				t.Fatalf("80x24: the address shows before scrolling")
			}
			press(t, m, "l", "l", "l", "l")
			if scr := screenText(m); !strings.Contains(scr, "0x7f0000200400") || !strings.Contains(scr, "«") {
				t.Errorf("80x24: l does not scroll to the addresses:\n%s", scr)
			}
			press(t, m, "h", "h", "h", "h")
			if !stale.MatchString(screenText(m)) {
				t.Error("80x24: h does not scroll back")
			}
		}
	}
}

// TestCallNamesAndCachedObject: a node's inputs carry this call's names,
// with the recorded ones labelled; :tensor says when a name was bound
// again to the same cached replay object.
func TestCallNamesAndCachedObject(t *testing.T) {
	// (a recording of train_mlp kept as it was: examples/recorded is re-recorded)
	m := newModel(t, "testdata/train_mlp_session3.cgt.jsonl", 200, 60, Options{})
	command(t, m, "line 48")
	scr := strings.Join(m.detailsLines(1000), "\n")
	for _, w := range []string{"inputs (6), as line 48 passes them:", "0 grad_3 copied", "(recorded with grad_1)"} {
		if !strings.Contains(scr, w) {
			t.Errorf("train_mlp line 48 lacks %q:\n%s", w, scr)
		}
	}
	command(t, m, "line 49")
	press(t, m, "1")
	if scr := screenText(m); !strings.Contains(scr, "names as bound when recorded at line") {
		t.Errorf("a node off its call does not say its names are the recorded ones:\n%s", scr)
	}
	d := newModel(t, seedA, 200, 60, Options{})
	command(t, d, "line 32")
	command(t, d, "tensor a")
	if !strings.Contains(d.Message(), "line 30 bound a again, to the same cached replay object line 23 made") {
		t.Errorf(":tensor a after line 30 rebound it: %q", d.Message())
	}
}

// TestWords: the words the issue found puzzling.
func TestWords(t *testing.T) {
	const s08 = "../examples/s08-overwritten-errors.cgt.jsonl"
	m := newModel(t, s08, 200, 60, Options{})
	command(t, m, "line 14")
	if scr := strings.Join(strings.Fields(screenText(m)), " "); !strings.Contains(scr, "⚠ out5 is the same cached object as out4") {
		t.Errorf("s08 line 14 does not flag the silent overwrite:\n%s", screenText(m))
	}
	d := newModel(t, seedA, 200, 60, Options{Color: true})
	command(t, d, "line 32")
	scr := screenText(d)
	for _, w := range []string{"peak reserved 2.0 MiB", "freed for dead tensors (0):"} {
		if !strings.Contains(scr, w) {
			t.Errorf("the demo at line 32 lacks %q", w)
		}
	}
	if strings.Contains(d.View().Content, d.styles.Block[engine.BlockStale].Render("freed for dead tensors (0):")) {
		t.Error("a checkpoint that freed nothing says so in red")
	}
	d.tree.cursor = 0 // the device line
	if scr := strings.Join(strings.Fields(screenText(d)), " "); !strings.Contains(scr, "gen -4 is negative as PyTorch counts it") {
		t.Errorf("the device's details do not explain gen -4:\n%s", screenText(d))
	}
	command(t, d, "line 17")
	if scr := strings.Join(d.detailsLines(1000), "\n"); !strings.Contains(scr, "a storage died, its last tensor gone: the one made by foo (record #0) at 0x") {
		t.Errorf("del a at line 17:\n%s", scr)
	}
}

// TestMemoryTimeline opens the chart: it samples the run so far without
// moving the session, marks the position and switches pools.
func TestMemoryTimeline(t *testing.T) {
	m := newModel(t, seedA, 120, 40, Options{})
	command(t, m, "line 32")
	press(t, m, "M")
	if m.Pos() != 31 || m.sess.Pos() != 31 {
		t.Fatalf("sampling moved the session: UI %d, session %d", m.Pos(), m.sess.Pos())
	}
	scr := screenText(m)
	for _, w := range []string{"memory of the graph pool, dev 0", "reserved", "allocated", "invisible", "▲ here",
		"here: reserved 2.0 MiB · allocated 1.5 KiB · live but believed free 0 B", "records not run yet are blank"} {
		if !strings.Contains(scr, w) {
			t.Errorf("the chart lacks %q:\n%s", w, scr)
		}
	}
	for k := range m.mem.samples {
		if k.pos > m.sess.Executed() {
			t.Errorf("a sample at %d, past the %d records run", k.pos, m.sess.Executed())
		}
	}
	// At line 23 the replay outputs a and b are live but believed free.
	command(t, m, "line 23")
	if scr := screenText(m); !strings.Contains(scr, "live but believed free 32 B") {
		t.Errorf("line 23: the chart does not show a and b live but believed free:\n%s", scr)
	}
	press(t, m, "p")
	if scr := screenText(m); !strings.Contains(scr, "memory of the default pool") {
		t.Errorf("p does not switch to the default pool:\n%s", scr)
	}
	press(t, m, "M")
	if strings.Contains(screenText(m), "memory of the") {
		t.Error("M does not hide the chart")
	}
}
