package ui

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/sessions"
	"github.com/cgtviz/cgtviz/traces"
)

// TestStepAndBack steps and goes to lines with g: the demo's records
// start at line 2, so g L leaves the session at position L-1.
func TestStepAndBack(t *testing.T) {
	m := newModel(t, seedA, 120, 40, Options{})
	tests := []struct {
		keys []string
		pos  int
	}{
		{[]string{"n"}, 1},
		{[]string{"n", "n", "n"}, 4},
		{[]string{"N"}, 3},
		{[]string{"N", "N", "N"}, 0},
		{[]string{"N"}, 0}, // at the start: stays, says so
		{[]string{"g", "3", "5", "enter"}, 34},
		{[]string{"g", "4", "1", "enter", "n"}, 40}, // at the end: stays
		{[]string{"g", "9", "9", "9", "enter"}, 40}, // no such line: error, stays
		{[]string{"g", "x", "enter"}, 40},           // not a number
		{[]string{"g", "1", "backspace", "3", "esc"}, 40},
		{[]string{"g", "1", "backspace", "3", "enter"}, 2},
		{[]string{"g", "0", "enter"}, 0}, // the start
	}
	for _, tc := range tests {
		press(t, m, tc.keys...)
		if m.Pos() != tc.pos || m.sess.Pos() != tc.pos {
			t.Fatalf("after %v: UI at %d, session at %d, want %d", tc.keys, m.Pos(), m.sess.Pos(), tc.pos)
		}
		if m.Busy() {
			t.Fatalf("after %v: still busy", tc.keys)
		}
	}
	press(t, m, "g", "0", "enter", "N")
	if !strings.Contains(m.Message(), "start") {
		t.Errorf("N at 0: message %q", m.Message())
	}
	press(t, m, "g", "9", "9", "9", "enter")
	if !m.msgErr || !strings.Contains(m.Message(), "go to line: no record at line 999 (the trace has lines 2-41, 0 is the start)") {
		t.Errorf("goto 999: message %q, error %v", m.Message(), m.msgErr)
	}
}

// TestBusy checks that keys typed while a command runs wait their turn:
// the UI never touches the session then, and nothing typed is lost.
func TestBusy(t *testing.T) {
	m := newModel(t, seedA, 120, 40, Options{})
	_, cmd := m.Update(keyMsg("n"))
	if cmd == nil || !m.Busy() {
		t.Fatal("n returned no command or the UI is not busy")
	}
	// Typed ahead: another n, then "go to line 32" — whose digits must
	// reach the prompt, not focus panes.
	for _, k := range append([]string{"n", "g"}, append(typed("32"), "enter")...) {
		if _, c := m.Update(keyMsg(k)); c != nil {
			t.Fatalf("%s while busy returned a command", k)
		}
	}
	if !strings.Contains(screenText(m), "running…") {
		t.Error("the status line does not say a command runs")
	}
	var positions []int
	for cmd != nil {
		_, cmd = m.Update(cmd())
		positions = append(positions, m.Pos())
	}
	if !slices.Equal(positions, []int{1, 2, 31}) || m.Busy() || m.focus != paneTrace {
		t.Errorf("positions %v, busy %v, focus %d; want [1 2 31], idle, the trace", positions, m.Busy(), m.focus)
	}
	// A key that starts no session command (e, with no exporter here: none
	// at all) does not hold back the keys typed after it.
	_, cmd = m.Update(keyMsg("n"))
	for _, k := range []string{"e", "1", "n"} {
		m.Update(keyMsg(k))
	}
	runCmd(m, cmd)
	if m.Pos() != 33 || m.focus != paneTree || len(m.pending) != 0 {
		t.Errorf("after n e 1 n: at %d, focus %d, %d keys pending; want 33, the tree, none", m.Pos(), m.focus, len(m.pending))
	}
}

// TestLineBreakpointContinue sets a breakpoint on the line of fee's third
// recording with b, found by search, then continues to it from the start.
func TestLineBreakpointContinue(t *testing.T) {
	m := newModel(t, seedA, 120, 40, Options{})
	press(t, m, append(append([]string{"/"}, typed("fee(b) -> out")...), "enter")...)
	if got := m.recs.line(m.trace.cursor); got != 32 {
		t.Fatalf("search found line %d, want 32", got)
	}
	press(t, m, "b")
	if !m.sess.HasBreakpoint(sessions.Breakpoint{Line: 32}) {
		t.Fatal("b did not set a breakpoint on line 32")
	}
	if !strings.Contains(screenText(m), "●") {
		t.Error("the trace pane does not mark the breakpoint")
	}
	press(t, m, "c")
	if m.Pos() != 31 || !strings.Contains(m.Message(), "line 32") {
		t.Fatalf("continue stopped at %d (%q), want 31 after line 32", m.Pos(), m.Message())
	}
	press(t, m, "c") // no later record is on line 32: to the end

	if m.Pos() != 40 || !strings.Contains(m.Message(), "end of trace") {
		t.Fatalf("second continue: at %d (%q), want the end", m.Pos(), m.Message())
	}
	press(t, m, "C")
	if m.Pos() != 31 {
		t.Fatalf("reverse-continue: at %d, want 31", m.Pos())
	}
	press(t, m, "C")
	if m.Pos() != 0 {
		t.Fatalf("second reverse-continue: at %d, want 0", m.Pos())
	}
	// b again on the same line removes it.
	m.trace.cursor = 30
	press(t, m, "b")
	if len(m.sess.Breakpoints()) != 0 {
		t.Errorf("b twice left %v", m.sess.Breakpoints())
	}
	press(t, m, "ctrl+n")
	if got := m.recs.line(m.trace.cursor); got != 39 {
		t.Errorf("ctrl+n found line %d, want the next match at 39", got)
	}
}

// TestKindBreakpointPicker picks "checkpoint" in the B picker and continues
// to the checkpoint.
func TestKindBreakpointPicker(t *testing.T) {
	m := newModel(t, seedA, 120, 40, Options{})
	press(t, m, "B")
	if m.mode != modePicker || !strings.Contains(screenText(m), "break on event") {
		t.Fatal("B did not open the picker")
	}
	items := m.pickerItems()
	idx := slices.IndexFunc(items, func(b sessions.Breakpoint) bool { return b.Kind == engine.EvCheckpoint })
	if idx < 0 {
		t.Fatal("the picker offers no checkpoint breakpoint")
	}
	for range idx {
		press(t, m, "j")
	}
	press(t, m, "enter")
	if m.mode != modeNormal || !m.sess.HasBreakpoint(sessions.Breakpoint{Kind: engine.EvCheckpoint}) {
		t.Fatalf("picker: mode %d, breakpoints %v", m.mode, m.sess.Breakpoints())
	}
	press(t, m, "c")
	if m.Pos() != 31 || m.snap.ckpt == nil {
		t.Fatalf("continue to the checkpoint stopped at %d", m.Pos())
	}
	if !strings.Contains(screenText(m), "re-allocated for live tensors (2)") {
		t.Error("the delta pane does not list the checkpoint's blocks")
	}
	// A replay breakpoint on the node selected in the tree: #2 after the
	// checkpoint's recording.
	press(t, m, "B")
	items = m.pickerItems()
	idx = slices.IndexFunc(items, func(b sessions.Breakpoint) bool { return b.Kind == engine.EvReplay && b.Node == 2 })
	if idx < 0 {
		t.Fatalf("the picker offers no replay of the selected node #2: %v", items)
	}
	for range idx {
		press(t, m, "down")
	}
	press(t, m, "space", "c")
	if m.Pos() != 38 || m.snap.step == nil || m.snap.step.Node != 2 || m.snap.step.Action != engine.ActionReplay {
		t.Fatalf("continue to replay #2 stopped at %d", m.Pos())
	}
	press(t, m, "B", "esc")
	if m.mode != modeNormal {
		t.Error("esc did not close the picker")
	}
}

func TestPanesAndFold(t *testing.T) {
	m := newModel(t, seedA, 80, 24, Options{})
	gotoStep(t, m, "31")
	for i, want := range []string{"1 Tree", "2 Pool", "3 Checkpoint delta", "4 Trace", "5 Details", "6 Tensors"} {
		press(t, m, string(rune('1'+i)))
		if m.focus != pane(i) || !strings.Contains(screenText(m), want) {
			t.Errorf("key %d: focus %d, screen lacks %q", i+1, m.focus, want)
		}
	}
	press(t, m, "tab")
	if m.focus != paneTree {
		t.Errorf("tab from 6 went to %d", m.focus)
	}
	press(t, m, "shift+tab")
	if m.focus != paneTensors {
		t.Errorf("shift+tab from 1 went to %d", m.focus)
	}
	press(t, m, "1", "k", "k", "k", "j")
	l, ok := m.tree.selected()
	if !ok || l.kind != treeNode || l.id != 0 {
		t.Fatalf("selected %+v, want node #0", l)
	}
	before := len(m.tree.lines)
	press(t, m, "enter")
	if len(m.tree.lines) != before-2 || !strings.Contains(screenText(m), "#0 foo ×2 [+2]") {
		t.Errorf("folding #0: %d lines (was %d):\n%s", len(m.tree.lines), before, screenText(m))
	}
	press(t, m, "space")
	if len(m.tree.lines) != before {
		t.Error("unfolding did not restore the lines")
	}
	press(t, m, "4", "end")
	if m.trace.cursor != m.recs.len()-1 {
		t.Errorf("end: trace cursor %d", m.trace.cursor)
	}
	press(t, m, "home", "pgdown")
	if m.trace.cursor == 0 {
		t.Error("pgdown did not move the trace cursor")
	}
	// The full help: under the panes where it fits, in a popup where it
	// does not (here, at 80x24).
	press(t, m, "?")
	if (!m.help.ShowAll && m.mode != modeOverlay) || !strings.Contains(screenText(m), "reverse-continue") {
		t.Error("? did not show the full help")
	}
	press(t, m, "?")
	if m.help.ShowAll || m.mode != modeNormal {
		t.Error("? did not hide the full help")
	}
}

func TestSaveAndExport(t *testing.T) {
	dir := t.TempDir()
	var exported *engine.State
	export := func(_ context.Context, st *engine.State, step *engine.Step) ([]byte, error) {
		exported = st
		return []byte("<svg/>"), nil
	}
	m := newModel(t, seedA, 120, 40, Options{SavePath: filepath.Join(dir, "s.json"), Export: export, ExportDir: dir})
	gotoStep(t, m, "14")
	press(t, m, "4", "b", "s")
	if !strings.Contains(m.Message(), "saved") {
		t.Fatalf("s: message %q", m.Message())
	}
	l, err := sessions.Load(filepath.Join(dir, "s.json"), sessions.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Pos() != 14 || len(l.Breakpoints()) != 1 {
		t.Errorf("loaded at %d with %v", l.Pos(), l.Breakpoints())
	}
	press(t, m, "e")
	svg, err := os.ReadFile(filepath.Join(dir, "cgtviz-tree-line15.svg"))
	if err != nil || string(svg) != "<svg/>" || exported != m.snap.state {
		t.Errorf("export: %q, %v; state exported %p, shown %p", svg, err, exported, m.snap.state)
	}
	failing := newModel(t, seedA, 120, 40, Options{
		SavePath: filepath.Join(dir, "no", "such", "dir", "s.json"),
		Export: func(context.Context, *engine.State, *engine.Step) ([]byte, error) {
			return nil, errors.New("graphviz unavailable")
		},
	})
	press(t, failing, "s")
	if !failing.msgErr {
		t.Errorf("saving into a missing directory: message %q", failing.Message())
	}
	press(t, failing, "e")
	if !failing.msgErr || !strings.Contains(failing.Message(), "graphviz unavailable") {
		t.Errorf("failing export: message %q", failing.Message())
	}
	none := newModel(t, seedA, 120, 40, Options{})
	if _, cmd := none.Update(keyMsg("e")); cmd != nil {
		t.Error("e without an exporter returned a command")
	}
}

func TestQuit(t *testing.T) {
	for _, k := range []string{"q", "ctrl+c"} {
		m := newModel(t, seedA, 80, 24, Options{})
		if _, ok := press(t, m, k).(tea.QuitMsg); !ok {
			t.Errorf("%s did not quit", k)
		}
	}
	// In a prompt, q is text; ctrl+c still quits.
	m := newModel(t, seedA, 80, 24, Options{})
	if msg := press(t, m, "/", "q"); msg != nil {
		t.Errorf("q in the search prompt returned %T", msg)
	}
	if _, ok := press(t, m, "ctrl+c").(tea.QuitMsg); !ok {
		t.Error("ctrl+c in a prompt did not quit")
	}
}

func TestBookmarks(t *testing.T) {
	m := newModel(t, seedA, 120, 40, Options{})
	gotoStep(t, m, "31")
	press(t, m, append(append([]string{"m"}, typed("ckpt")...), "enter")...)
	if !strings.Contains(m.Message(), `"ckpt" at line 32`) {
		t.Fatalf("m: message %q", m.Message())
	}
	gotoStep(t, m, "3")
	press(t, m, "'")
	if !strings.Contains(screenText(m), "ckpt@32") {
		t.Error("the jump prompt does not list the bookmark")
	}
	press(t, m, append(typed("ckpt"), "enter")...)
	if m.Pos() != 31 {
		t.Errorf("jump to the bookmark: at %d", m.Pos())
	}
	press(t, m, append(append([]string{"'"}, typed("nope")...), "enter")...)
	if !m.msgErr || m.Pos() != 31 {
		t.Errorf("jump to an unknown bookmark: %q at %d", m.Message(), m.Pos())
	}
	press(t, m, "m", "enter")
	if !m.msgErr {
		t.Errorf("an empty bookmark name was accepted: %q", m.Message())
	}
}

// TestOddTraces drives the UI over an empty trace and a two-device trace:
// nothing panics, and both devices' trees show.
func TestOddTraces(t *testing.T) {
	empty := traces.NewBuilder("empty").Trace()
	two := traces.NewBuilder("two devices").Devices(2).
		Def("f", []string{"x"}, []string{"y"}, traces.S("y", "add", "x", 1)).
		OnDevice(1).Tensor("a", []int{4}, traces.InitOnes).
		Step().Call("f", []string{"a"}, "o1").
		Step().Call("f", []string{"a"}, "o2").
		Step().Call("f", []string{"a"}, "o3").
		Trace()
	for _, tr := range []*traces.Trace{empty, two} {
		s, err := sessions.New(tr, sessions.Options{})
		if err != nil {
			t.Fatal(err)
		}
		m := New(s, Options{})
		for _, sz := range [][2]int{{80, 24}, {160, 48}} {
			m.Update(tea.WindowSizeMsg{Width: sz[0], Height: sz[1]})
			press(t, m, "n", "n", "c", "N", "C", "b", "1", "j", "enter", "2", "end", "3", "5", "6", "end", "/", "x", "enter", "B", "enter")
			_ = screenText(m)
		}
		if tr == two {
			if ps := tr.Check(); len(ps) > 0 {
				t.Fatalf("two-device trace does not check: %v", ps)
			}
			gotoStep(t, m, "8")
			got := screenText(m)
			if !strings.Contains(got, "dev 0 sim") || !strings.Contains(got, "dev 1 sim") || !strings.Contains(got, "#0 f") {
				t.Errorf("two-device screen lacks a device or the node:\n%s", got)
			}
			if m.dev != 1 {
				t.Errorf("the pool shows device %d, want 1 (the device of the last call)", m.dev)
			}
			press(t, m, "d")
			if m.dev != 0 || !strings.Contains(screenText(m), "2 Pool · dev 0") {
				t.Errorf("d: the pool shows device %d", m.dev)
			}
		} else if m.Pos() != 0 {
			t.Errorf("empty trace: at %d", m.Pos())
		}
	}
}

// TestWarmupSelected checks that a warmup step selects its warmup node, whose
// details then show.
func TestWarmupSelected(t *testing.T) {
	m := newModel(t, seedA, 120, 40, Options{})
	gotoStep(t, m, "9")
	l, ok := m.tree.selected()
	if !ok || l.kind != treeWarmup || l.id != -2 {
		t.Fatalf("selected %+v, want warmup node -2", l)
	}
	if got := screenText(m); !strings.Contains(got, "warmup of fee") || !strings.Contains(got, "← warmed up") ||
		!strings.Contains(strings.Join(plainLines(m.detailsLines(200)), "\n"), "warmup of fee (function 1; PyTorch's warmup id -2)") {
		t.Errorf("screen lacks the warmup node's details:\n%s", got)
	}
}

// TestEndOfUnendedTrace: a trace whose header says the recording did not
// end (a program that died: cgtrace's journal) says so on the first screen,
// and n and c at its end say so beside "end of trace"; the demo does not.
func TestEndOfUnendedTrace(t *testing.T) {
	data, err := os.ReadFile(seedA)
	if err != nil {
		t.Fatal(err)
	}
	head, body, _ := strings.Cut(string(data), "\n")
	if !strings.HasSuffix(head, "}") {
		t.Fatalf("the demo's header: %q", head)
	}
	var hdr map[string]any
	if err := json.Unmarshal([]byte(head), &hdr); err != nil {
		t.Fatal(err)
	}
	meta, _ := hdr["meta"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
	}
	meta["journal"] = "written as the program ran; the recording did not end (the program died)"
	hdr["meta"] = meta
	h, _ := json.Marshal(hdr)
	path := filepath.Join(t.TempDir(), "died.cgt.jsonl")
	if err := os.WriteFile(path, []byte(string(h)+"\n"+body), 0o644); err != nil {
		t.Fatal(err)
	}
	const said = "the recording did not end here: the program died after this record"
	for _, tc := range []struct {
		path string
		want bool
	}{{path, true}, {seedA, false}} {
		m := newModel(t, tc.path, 120, 40, Options{})
		if got := strings.Contains(m.Message(), "recording did not end"); got != tc.want {
			t.Errorf("%s: the first screen's message %q; want the recording's death said %v", tc.path, m.Message(), tc.want)
		}
		press(t, m, "c")
		if !strings.Contains(m.Message(), "end of trace") || strings.Contains(m.Message(), said) != tc.want {
			t.Errorf("%s: c said %q; want the end, the recording's death %v", tc.path, m.Message(), tc.want)
		}
		press(t, m, "n")
		if !strings.Contains(m.Message(), "end of trace") || strings.Contains(m.Message(), said) != tc.want {
			t.Errorf("%s: n at the end said %q; want the end, the recording's death %v", tc.path, m.Message(), tc.want)
		}
	}
}
