package ui

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/sessions"
	"github.com/cgtviz/cgtviz/traces"
)

// countingRecords counts the records read from the trace.
type countingRecords struct {
	sessions.Records
	reads *atomic.Int64
}

func (r countingRecords) Record(i int) (*traces.Record, error) {
	r.reads.Add(1)
	return r.Records.Record(i)
}

// TestSearchReadsInACommand: enter on the search prompt and ctrl+n read no
// record in Update; they return a command, and the model is unchanged
// (cursor, message, focus) until its message arrives.
func TestSearchReadsInACommand(t *testing.T) {
	m := newModel(t, seedA, 120, 40, Options{})
	gotoStep(t, m, "3")
	var reads atomic.Int64
	m.recs = records{countingRecords{m.recs.src, &reads}}
	press(t, m, "4", "/")
	press(t, m, typed("checkpoint")...)
	for _, k := range []string{"enter", "ctrl+n"} {
		cursor, msg, focus := m.trace.cursor, m.Message(), m.focus
		reads.Store(0)
		_, cmd := m.Update(keyMsg(k))
		if cmd == nil {
			t.Fatalf("%s: no command", k)
		}
		if n := reads.Load(); n != 0 || m.trace.cursor != cursor || m.Message() != msg || m.focus != focus || !m.Busy() {
			t.Fatalf("%s: Update read %d records, cursor %d→%d, message %q→%q, busy %v; want none read, nothing changed, busy",
				k, n, cursor, m.trace.cursor, msg, m.Message(), m.Busy())
		}
		answer := cmd()
		if _, ok := answer.(searchMsg); !ok || reads.Load() == 0 {
			t.Fatalf("%s: the command answered %T after %d reads", k, answer, reads.Load())
		}
		reads.Store(0)
		runCmd(m, func() tea.Msg { return answer })
		if m.Busy() || m.trace.cursor == cursor || !strings.Contains(m.Message(), "/checkpoint in Trace: line ") {
			t.Fatalf("%s: after the answer: busy %v, cursor %d (was %d), message %q", k, m.Busy(), m.trace.cursor, cursor, m.Message())
		}
	}
}

// TestSearchCancel: Esc cancels a running search, which then moves
// nothing; any other key cancels it too, and then does what it does.
func TestSearchCancel(t *testing.T) {
	m := newModel(t, seedA, 120, 40, Options{})
	press(t, m, "4", "/")
	press(t, m, typed("checkpoint")...)
	_, cmd := m.Update(keyMsg("enter"))
	if cmd == nil || !m.Busy() || !strings.Contains(screenText(m), "searching…") {
		t.Fatalf("the search did not start:\n%s", screenText(m))
	}
	m.Update(keyMsg("esc"))
	cursor := m.trace.cursor
	runCmd(m, cmd)
	if m.Busy() || m.trace.cursor != cursor || !strings.Contains(m.Message(), "cancelled") || m.mode != modeNormal {
		t.Fatalf("after esc: busy %v, cursor %d (was %d), message %q", m.Busy(), m.trace.cursor, cursor, m.Message())
	}

	_, cmd = m.Update(keyMsg("ctrl+n"))
	m.Update(keyMsg("n")) // typed while it runs: cancels it, then steps
	runCmd(m, cmd)
	if m.Pos() != 1 || m.trace.cursor != 0 || m.Busy() {
		t.Fatalf("n during a search: at %d, cursor %d, busy %v; want the step alone", m.Pos(), m.trace.cursor, m.Busy())
	}
}

// TestOverlayStack: the top overlay gets the keys, Esc pops one at a time.
func TestOverlayStack(t *testing.T) {
	m := newModel(t, seedA, 120, 40, Options{})
	press(t, m, ":")
	press(t, m, typed("help")...)
	press(t, m, "enter")
	if m.mode != modeOverlay || len(m.overlays) != 1 {
		t.Fatalf(":help: mode %d, %d overlays", m.mode, len(m.overlays))
	}
	help := m.over
	m.openPrompt(&prompt{what: modeGoto})
	press(t, m, "1", "n")
	if m.mode != modeGoto || m.input != "1n" || m.Pos() != 0 || m.over != nil {
		t.Fatalf("a prompt over the popup: mode %d, input %q, at %d", m.mode, m.input, m.Pos())
	}
	press(t, m, "esc")
	if m.mode != modeOverlay || m.over != help {
		t.Fatalf("esc over the popup: mode %d, want the popup back", m.mode)
	}
	press(t, m, "esc")
	if m.mode != modeNormal || len(m.overlays) != 0 {
		t.Fatalf("esc: mode %d, %d overlays", m.mode, len(m.overlays))
	}
}

// TestPaneKeys: every key a pane answers is in the help, by itself or by a
// binding of the same keys, and documented in docs/tui.md.
func TestPaneKeys(t *testing.T) {
	doc, err := os.ReadFile("../docs/tui.md")
	if err != nil {
		t.Fatal(err)
	}
	m := newModel(t, seedA, 120, 40, Options{})
	var help [][]string
	for _, col := range m.keys.FullHelp() {
		for _, b := range col {
			help = append(help, b.Keys())
		}
	}
	for p := range numPanes {
		for _, b := range m.component(p).keys(&m.keys) {
			if !slices.ContainsFunc(help, func(ks []string) bool { return slices.Equal(ks, b.Keys()) }) {
				t.Errorf("%s: the help lacks %v (%s)", paneTitles[p], b.Keys(), b.Help().Desc)
			}
			if k := strings.Split(b.Help().Key, "/")[0]; !strings.Contains(string(doc), "`"+k+"`") {
				t.Errorf("%s: docs/tui.md does not document %q", paneTitles[p], k)
			}
		}
	}
	if km := m.keys; !key.Matches(keyMsg("enter"), km.Trace.RunTo) || !key.Matches(keyMsg("enter"), km.Tree.Fold) {
		t.Error("enter is not the trace's and the tree's")
	}
}

// TestDetailsFollowDrawnCursors: the details pane reads the tree's
// selection and the trace's cursor when it is drawn, after those panes
// clamped them to what they show. Stepping back shrinks the tree under
// its cursor; the selection the details show is the clamped one.
func TestDetailsFollowDrawnCursors(t *testing.T) {
	m := newModel(t, seedA, 120, 40, Options{})
	press(t, m, "g", "3", "2", "enter", "1", "j", "enter", "k", "w", "v", "N", "N")
	node, step := -1, -1
	for i, l := range strings.Split(screenText(m), "\n") {
		if node < 0 && strings.Contains(l, "node #0 foo (function 0") {
			node = i
		}
		if step < 0 && strings.Contains(l, "│line 17 ") {
			step = i
		}
	}
	if node < 0 || step >= 0 && step < node {
		t.Errorf("the focused tree's node is not first in the details (node at row %d, the step at %d):\n%s", node, step, screenText(m))
	}
}

// TestTensorsWindow holds the tensors pane's window (the rows a frame
// shows, found by a scan that stops early on an unfiltered first screen)
// and its count to the whole table that rows makes, in every order, with
// and without a filter, on a state that mixes the ranks.
func TestTensorsWindow(t *testing.T) {
	st := &engine.State{}
	owners := []string{"", "param", "allocator", "", "param"}
	pools := []string{"graph", "default", "graph", "default", "graph"}
	for i := range 23 {
		tv := engine.TensorView{ID: 100 - i, Names: []string{fmt.Sprintf("t%d", i)}, Bytes: int64(i%4) * 512,
			Owner: owners[i%5], Pool: pools[(i/2)%5], State: engine.TensorLive}
		if i%6 == 5 {
			tv.State = engine.TensorStale
		}
		st.Tensors = append(st.Tensors, tv)
	}
	for o := range numOrders {
		for _, filter := range []string{"", "t1"} {
			for _, n := range []int{1, 2, 3, 5, 30} {
				var p tensorsPane
				p.order, p.filter = o, filter
				// Asked first, before rows has made the order.
				first := p.window(st, 0, n)
				all := p.rows(st)
				if p.count(st) != len(all) {
					t.Fatalf("%s %q: count %d, rows %d", orderNames[o], filter, p.count(st), len(all))
				}
				if want := all[:min(n, len(all))]; !slices.EqualFunc(first, want, func(a, b engine.TensorView) bool { return a.ID == b.ID }) {
					t.Fatalf("%s %q n=%d: first window %v, rows %v", orderNames[o], filter, n, ids(first), ids(want))
				}
				for off := 0; off < len(all); off++ {
					got, want := p.window(st, off, n), all[off:min(off+n, len(all))]
					if !slices.EqualFunc(got, want, func(a, b engine.TensorView) bool { return a.ID == b.ID }) {
						t.Fatalf("%s %q n=%d off=%d: window %v, rows %v", orderNames[o], filter, n, off, ids(got), ids(want))
					}
				}
			}
		}
	}
}

func ids(ts []engine.TensorView) []int {
	var out []int
	for _, t := range ts {
		out = append(out, t.ID)
	}
	return out
}
