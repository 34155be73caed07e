package ui

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/sessions"
)

// command types ":line⏎" and returns the last message its commands gave.
func command(t *testing.T, m *Model, line string) tea.Msg {
	t.Helper()
	return press(t, m, append(append([]string{":"}, typed(line)...), "enter")...)
}

// TestCommandMoves covers the jumps of the command line on the demo, whose
// records start at line 2 (so line L leaves the session at position L-1):
// every number a user types is a trace line.
func TestCommandMoves(t *testing.T) {
	tests := []struct {
		from    int // position to start at
		line    string
		pos     int
		msg     string // in the message line
		isError bool
	}{
		{0, "32", 31, "at line 32", false},
		{0, "step 5", 4, "at line 5", false}, // step is line's alias
		{0, "li 6", 5, "", false},            // a unique prefix
		{0, "line 32", 31, "at line 32", false},
		{0, "l 15", 14, "at line 15", false},
		{5, "line 0", 0, "at the start", false},
		{3, "line 1", 3, "no record at line 1 (the trace has lines 2-41, 0 is the start)", true},
		{3, "line x", 3, `"x" is not a line number`, true},
		{3, "line", 3, "want one line number", true},
		{3, "line 99", 3, "no record at line 99", true},
		{3, "s 4", 3, ":s: which one? line, save", true},
		{3, "frobnicate", 3, ":frobnicate: unknown command (:help lists them)", true},
		{3, "", 3, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.line, func(t *testing.T) {
			m := newModel(t, seedA, 120, 40, Options{})
			gotoStep(t, m, strconv.Itoa(tc.from))
			m.setMsg("", nil)
			command(t, m, tc.line)
			if m.Pos() != tc.pos || m.sess.Pos() != tc.pos {
				t.Errorf("UI at %d, session at %d, want %d", m.Pos(), m.sess.Pos(), tc.pos)
			}
			if !strings.Contains(m.Message(), tc.msg) || m.msgErr != tc.isError {
				t.Errorf("message %q (error %v), want %q (error %v)", m.Message(), m.msgErr, tc.msg, tc.isError)
			}
			if m.mode != modeNormal {
				t.Errorf("still in mode %d", m.mode)
			}
		})
	}
}

// TestCommandNodeAndWhy selects nodes by id and goes to where they were
// recorded, by :why and by w.
func TestCommandNodeAndWhy(t *testing.T) {
	m := newModel(t, seedA, 120, 40, Options{})
	gotoStep(t, m, "40")

	command(t, m, "node 2")
	if l, ok := m.tree.selected(); !ok || l.kind != treeNode || l.id != 2 || m.focus != paneTree {
		t.Fatalf(":node 2 selected %+v (ok %v), focus %d", l, ok, m.focus)
	}
	if !strings.Contains(m.Message(), "#2 fee on dev 0") {
		t.Errorf(":node 2 says %q", m.Message())
	}
	command(t, m, "why")
	if m.Pos() != 31 {
		t.Errorf(":why on #2 went to step %d, want 31 (line 32 recorded it)", m.Pos())
	}
	for _, want := range []string{"line 32 recorded #2 fee", "no existing recording passed its invariants", "expected dead indices before graph are live"} {
		if !strings.Contains(m.Message(), want) {
			t.Errorf(":why says %q, want %q in it", m.Message(), want)
		}
	}
	// The step of the recording selects the node it recorded.
	if l, _ := m.tree.selected(); l.id != 2 {
		t.Errorf("after :why the tree selects %d, want #2", l.id)
	}

	gotoStep(t, m, "40")
	command(t, m, "graph #0")
	press(t, m, "w")
	if m.Pos() != 14 || !strings.Contains(m.Message(), "line 15 recorded #0 foo: new root") {
		t.Errorf("w on #0: step %d, message %q; want 14, line 15 recorded #0 foo: new root", m.Pos(), m.Message())
	}

	// Errors: no such node, a folded node, nothing selected.
	command(t, m, "node 7")
	if !m.msgErr || !strings.Contains(m.Message(), "no node #7 at line 15") {
		t.Errorf(":node 7: %q", m.Message())
	}
	gotoStep(t, m, "40")
	command(t, m, "node 0")
	press(t, m, "enter") // fold #0
	command(t, m, "node 2")
	if !m.msgErr || !strings.Contains(m.Message(), "folded") {
		t.Errorf(":node 2 under folded #0: %q", m.Message())
	}
	gotoStep(t, m, "0")
	press(t, m, "w")
	if !m.msgErr || !strings.Contains(m.Message(), "why: select a node in the tree first") || m.Pos() != 0 {
		t.Errorf("w with nothing selected: %q at step %d", m.Message(), m.Pos())
	}
	command(t, m, "why 3")
	if !m.msgErr || !strings.Contains(m.Message(), "takes no arguments") {
		t.Errorf(":why 3: %q", m.Message())
	}
}

// TestCommandWhyWarmup goes to the call that warmed up a warmup node.
func TestCommandWhyWarmup(t *testing.T) {
	m := newModel(t, seedA, 120, 40, Options{})
	gotoStep(t, m, "9") // fee(b) at line 10 warmed up; both warmups are on the path
	st := m.snap.state.Devices[0]
	if len(st.Warmups) == 0 {
		t.Fatal("no warmup nodes at step 9")
	}
	w := st.Warmups[0]
	m.tree.selectNode(0, w.ID)
	press(t, m, "w")
	if want, _ := m.stepOfLine(w.Line); m.Pos() != want || !strings.Contains(m.Message(), "warmed up "+w.Fn) {
		t.Errorf("w on warmup %d (line %d): step %d, message %q", w.ID, w.Line, m.Pos(), m.Message())
	}
}

func TestCommandBreakpoints(t *testing.T) {
	m := newModel(t, seedA, 120, 40, Options{})
	tests := []struct {
		line string
		bps  []sessions.Breakpoint // after the command
		err  string
	}{
		{"b fn fee record", []sessions.Breakpoint{{Fn: "fee", Kind: engine.EvRecord, Node: sessions.AnyNode}}, ""},
		{"break replay #2", []sessions.Breakpoint{{Fn: "fee", Kind: engine.EvRecord, Node: sessions.AnyNode}, {Kind: engine.EvReplay, Node: 2}}, ""},
		{"b fn fee record", []sessions.Breakpoint{{Kind: engine.EvReplay, Node: 2}}, ""}, // toggled off
		{"b line 32", []sessions.Breakpoint{{Kind: engine.EvReplay, Node: 2}, {Line: 32, Node: sessions.AnyNode}}, ""},
		{"b rerecord", nil, ""},
		{"clear", nil, ""},
		{"b line", nil, "line needs a value"},
		{"b fn fe", nil, `no function "fe" in this trace (foo, fee)`},
		{"b line 999", nil, "no record at line 999 (the trace has lines 2-41)"},
		{"b line 1", nil, "no record at line 1"},
		{"b line -3", nil, `"-3" is not a line number`},
		{"b #2", nil, "a node id follows replay"},
		{"b replay #x", nil, `"#x" is not a node id`},
		{"b sometimes", nil, `"sometimes" is not line, fn or an event kind (`},
	}
	for _, tc := range tests {
		command(t, m, tc.line)
		got := m.sess.Breakpoints()
		if tc.line == "b rerecord" {
			if len(got) != 3 || got[2].Kind != sessions.KindRerecord {
				t.Fatalf(":%s: breakpoints %v", tc.line, got)
			}
			continue
		}
		if !slices.Equal(got, tc.bps) {
			t.Errorf(":%s: breakpoints %v, want %v", tc.line, got, tc.bps)
		}
		if tc.err != "" && (!m.msgErr || !strings.Contains(m.Message(), tc.err)) {
			t.Errorf(":%s: message %q, want the error %q", tc.line, m.Message(), tc.err)
		}
		if !slices.Equal(m.snap.bps, got) {
			t.Errorf(":%s: the status line's breakpoints %v, the session's %v", tc.line, m.snap.bps, got)
		}
	}
	// A breakpoint set by the command line stops c.
	command(t, m, "b replay #1")
	press(t, m, "c")
	if m.Pos() != 25 || !strings.Contains(m.Message(), "replay #1") {
		t.Errorf(":b replay #1, c: at %d, %q; want 25 (line 26 replays #1)", m.Pos(), m.Message())
	}
}

func TestCommandSaveHelpQuit(t *testing.T) {
	dir := t.TempDir()
	m := newModel(t, seedA, 120, 40, Options{SavePath: filepath.Join(dir, "default.json")})
	gotoStep(t, m, "12")
	path := filepath.Join(dir, "mine.json")
	command(t, m, "save "+path)
	if _, err := os.Stat(path); err != nil || m.Message() != "saved session to "+path {
		t.Fatalf(":save FILE: %v, message %q", err, m.Message())
	}
	if _, err := os.Stat(filepath.Join(dir, "default.json")); err == nil {
		t.Error(":save FILE also wrote the default file")
	}
	s, err := sessions.Load(path, sessions.Options{})
	if err != nil || s.Pos() != 12 {
		t.Fatalf("the saved session: %v, at %d", err, s.Pos())
	}
	s.Close()
	command(t, m, "save a b")
	if !m.msgErr || !strings.Contains(m.Message(), "one file at most") {
		t.Errorf(":save a b: %q", m.Message())
	}

	command(t, m, "help")
	if m.mode != modeOverlay {
		t.Fatalf(":help opened mode %d, want the popup", m.mode)
	}
	for _, c := range lineCommands {
		if !slices.Contains(m.over.lines, "    "+c.help) {
			t.Errorf(":help does not list %s whole: %q", c.name, m.over.lines)
		}
	}
	press(t, m, "esc")
	for _, line := range []string{"clear all", "why 3"} {
		command(t, m, line)
		if !m.msgErr || !strings.Contains(m.Message(), "takes no arguments") {
			t.Errorf(":%s: %q", line, m.Message())
		}
	}
	command(t, m, "export x.svg")
	if !m.msgErr || !strings.Contains(m.Message(), "want nothing (the tree) or graph") {
		t.Errorf(":export x.svg: %q", m.Message())
	}
	command(t, m, "export")
	if !m.msgErr || !strings.Contains(m.Message(), "cannot export") {
		t.Errorf(":export without an exporter: %q", m.Message())
	}
	if _, ok := command(t, m, "q").(tea.QuitMsg); !ok {
		t.Error(":q did not quit")
	}
}

// TestCommandPrompt checks what the prompt shows while typing, tab
// completion, and esc.
func TestCommandPrompt(t *testing.T) {
	m := newModel(t, seedA, 120, 40, Options{})
	press(t, m, ":")
	if m.mode != modeCommand || !strings.Contains(screenText(m), ":█") {
		t.Fatalf("':' opened mode %d; screen:\n%s", m.mode, screenText(m))
	}
	if !strings.Contains(screenText(m), "line L · node ID · why") {
		t.Errorf("the empty prompt does not list the commands:\n%s", screenText(m))
	}
	tests := []struct {
		keys  []string
		input string
		hint  string
	}{
		{typed("li"), "li", "line L — go to just after trace line L runs"},
		{[]string{"tab"}, "line ", "line L — go to just after"},
		{[]string{"backspace", "backspace", "backspace", "backspace", "backspace", "s"}, "s", "line L · save [FILE]"},
		{[]string{"backspace", "b", "space", "f", "n"}, "b fn", "break [SPEC] — toggle a breakpoint"},
		{[]string{"backspace", "backspace", "backspace", "backspace", "4", "2"}, "42", "line 42"},
		{[]string{"backspace", "backspace", "z", "tab"}, "z", "no such command"},
	}
	for _, tc := range tests {
		press(t, m, tc.keys...)
		if m.input != tc.input {
			t.Errorf("after %v: input %q, want %q", tc.keys, m.input, tc.input)
		}
		if scr := screenText(m); !strings.Contains(scr, tc.hint) {
			t.Errorf("after %v: the prompt does not show %q:\n%s", tc.keys, tc.hint, lastLines(scr, 3))
		}
	}
	press(t, m, "esc")
	if m.mode != modeNormal || m.Pos() != 0 {
		t.Errorf("esc: mode %d, step %d", m.mode, m.Pos())
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

// TestCommandTensorFreed asks where tensors come from and what freed them,
// on the chained-call example: line 6's new generation frees foo's output
// a (b, handed to fee, is moved out of the pool first).
func TestCommandTensorFreed(t *testing.T) {
	const s07 = "../examples/s07-chain-handoff.cgt.jsonl"
	m := newModel(t, s07, 120, 40, Options{})
	gotoStep(t, m, "8") // after line 10: read b

	command(t, m, "freed a")
	if m.Pos() != 5 || m.msgErr || !strings.Contains(m.Message(), "line 6 freed a: freed 1 output(s) of the previous generation") {
		t.Errorf(":freed a: step %d, message %q; want step 5 (line 6)", m.Pos(), m.Message())
	}
	command(t, m, "freed b")
	if m.Pos() != 5 || !m.msgErr || !strings.Contains(m.Message(), ":freed: no line before line 6 freed b") {
		t.Errorf(":freed b: step %d, message %q", m.Pos(), m.Message())
	}

	gotoStep(t, m, "8")
	command(t, m, "tensor c")
	if m.Pos() != 5 || !strings.Contains(m.Message(), "line 6 made c: ") {
		t.Errorf(":tensor c: step %d, message %q; want step 5", m.Pos(), m.Message())
	}
	for line, want := range map[string]string{
		"tensor nope": `no tensor is bound to "nope" at line 6`,
		"tensor":      "want one tensor name",
		"freed a b":   "want one tensor name",
	} {
		command(t, m, line)
		if !m.msgErr || !strings.Contains(m.Message(), want) {
			t.Errorf(":%s: %q, want %q", line, m.Message(), want)
		}
	}
}

// TestCommandExportGraph exports the selected node's CUDA graph through the
// command's renderer (a stand-in here: the UI never loads Graphviz).
func TestCommandExportGraph(t *testing.T) {
	dir := t.TempDir()
	var got [2]int
	m := newModel(t, seedA, 120, 40, Options{ExportDir: dir,
		ExportGraph: func(_ context.Context, st *engine.State, dev, id int) ([]byte, error) {
			got = [2]int{dev, id}
			return []byte("<svg/>"), nil
		}})
	gotoStep(t, m, "31")
	command(t, m, "export graph")
	path := filepath.Join(dir, "cgtviz-graph-dev0-node2-line32.svg")
	if _, err := os.Stat(path); err != nil || got != [2]int{0, 2} {
		t.Fatalf(":export graph: %v, rendered %v, message %q", err, got, m.Message())
	}
	if m.Message() != "exported the CUDA graph of #2 to "+path {
		t.Errorf("message %q", m.Message())
	}
	gotoStep(t, m, "9") // a warmup is selected: it has no graph
	command(t, m, "export graph")
	if !m.msgErr || !strings.Contains(m.Message(), "select a recorded node") {
		t.Errorf(":export graph on a warmup: %q", m.Message())
	}
}

// TestWhyKeySaysOrigin: `w` on a graph-break resume function's node says
// so after its cause, in the log's words, with the line of the call before.
func TestWhyKeySaysOrigin(t *testing.T) {
	m := newModel(t, "../examples/recorded/graph_break.cgt.jsonl", 120, 40, Options{})
	gotoStep(t, m, "70")
	command(t, m, "graph #1")
	press(t, m, "w")
	want := "recorded #1 torch_dynamo_resume_in_forward_at_26_1: path is recording; a graph after a graph break in Gate_0, in the same invocation as line 19"
	if !strings.Contains(m.Message(), want) {
		t.Errorf("w on #1: %q, want %q in it", m.Message(), want)
	}
}
