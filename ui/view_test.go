package ui

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/sessions"
)

// TestViewGolden renders key moments of the seed thread's first example at
// a small and a large size: the start, just after the first recording, and
// just after the checkpoint (the pool shows a and b re-allocated and the
// delta pane lists them).
func TestViewGolden(t *testing.T) {
	moments := []struct {
		name string
		pos  string   // the step to go to
		keys []string // then these keys
		// want are texts the screen must show, whatever the golden says.
		want []string
	}{
		{"start", "0", nil, []string{"start/41", "no graphs yet", "press n to run the first record", "? help", "q quit"}},
		{"first-record", "14", nil, []string{"line 15/41", "#0 foo", "← recorded", "record #0", "new root", "err 0"}},
		{"checkpoint", "31", nil, []string{"line 32/41", "#2 fee", "← recorded", "• #1 cannot replay", "err 0"}},
		{"checkpoint-pool", "31", []string{"2"}, []string{"a 512 B^", "b 512 B^", "^ changed by last checkpoint", "graph pool"}},
		{"checkpoint-delta", "31", []string{"3"}, []string{"re-allocated for live tensors (2):", "(this step)"}},
		{"replay-invisible", "22", []string{"2"}, []string{"hold live replay outputs", "▒ a 16 B", "▒ b 16 B"}},
		// The trace cursor on an expect row: details show it whole.
		{"cursor-expect", "31", []string{"4", "k"}, []string{"cursor: line 31", "expect action=replay live_blocks=0"}},
		// :help lists every command, over the panes.
		{"help-popup", "0", append(append([]string{":"}, typed("help")...), "enter", "G"), []string{":until (:u) [L]", ":quit (:q)", "tab completes"}},
	}
	sizes := []struct{ w, h int }{{80, 24}, {160, 48}, {200, 60}}
	for _, sz := range sizes {
		for _, mo := range moments {
			name := fmt.Sprintf("%s-%dx%d", mo.name, sz.w, sz.h)
			t.Run(name, func(t *testing.T) {
				m := newModel(t, seedA, sz.w, sz.h, Options{})
				gotoStep(t, m, mo.pos)
				press(t, m, mo.keys...)
				got := screenText(m)
				lines := strings.Split(got, "\n")
				if len(lines) != sz.h {
					t.Errorf("%d lines, want %d", len(lines), sz.h)
				}
				for i, l := range lines {
					if w := ansi.StringWidth(l); w > sz.w {
						t.Errorf("line %d is %d cells wide, more than %d: %q", i+1, w, sz.w, l)
					}
				}
				for _, w := range mo.want {
					if !strings.Contains(got, w) {
						t.Errorf("screen lacks %q:\n%s", w, got)
					}
				}
				checkGolden(t, name, got)
			})
		}
	}
}

// TestCheckpointPoolMarks checks the pool pane at the checkpoint in
// detail: the blocks of a and b are allocated, marked as changed by the
// checkpoint, and the delta pane gives their addresses.
func TestCheckpointPoolMarks(t *testing.T) {
	m := newModel(t, seedA, 160, 48, Options{})
	gotoStep(t, m, "31")
	ev := m.snap.ckpt
	if ev == nil || ev.Delta == nil {
		t.Fatal("no checkpoint event in the snapshot at step 31")
	}
	names := map[string]bool{}
	for _, b := range ev.Delta.Reallocated {
		names[b.Tensor] = true
		if !strings.Contains(screenText(m), hex(b.Ptr)) {
			t.Errorf("delta pane lacks the address %s of %s", hex(b.Ptr), b.Tensor)
		}
	}
	if !names["a"] || !names["b"] {
		t.Errorf("re-allocated tensors %v, want a and b", names)
	}
	var marked int
	for _, l := range m.pool.allLines() {
		for _, r := range l {
			if r.style == runChanged {
				marked += strings.Count(r.text, changedGlyph)
			}
		}
	}
	if marked < 2 {
		t.Errorf("%d cells marked as changed by the checkpoint, want at least 2", marked)
	}
}

var colorSeq = regexp.MustCompile(`\x1b\[[0-9;]*(38|48);`)

// TestNoColor checks that without color no color sequence is emitted while
// the screen text stays the same, and that with color there are some.
func TestNoColor(t *testing.T) {
	plain := newModel(t, seedA, 160, 48, Options{Color: false})
	color := newModel(t, seedA, 160, 48, Options{Color: true})
	for _, m := range []*Model{plain, color} {
		gotoStep(t, m, "31")
	}
	p, c := plain.View().Content, color.View().Content
	if colorSeq.MatchString(p) {
		t.Error("NO_COLOR view has color sequences")
	}
	if !colorSeq.MatchString(c) {
		t.Error("color view has no color sequence")
	}
	if ansi.Strip(p) != ansi.Strip(c) {
		t.Error("the text of the color and the no-color views differ")
	}
}

// TestSizes renders at sizes from tiny to huge: every frame has exactly the
// terminal's height and no line wider than it.
func TestSizes(t *testing.T) {
	m := newModel(t, seedA, 80, 24, Options{})
	gotoStep(t, m, "31")
	for _, sz := range [][2]int{{20, 8}, {40, 10}, {80, 24}, {119, 40}, {120, 32}, {200, 60}, {300, 100}} {
		m.Update(tea.WindowSizeMsg{Width: sz[0], Height: sz[1]})
		for p := range numPanes {
			m.focusPane(p)
			lines := strings.Split(screenText(m), "\n")
			if len(lines) != sz[1] {
				t.Errorf("%dx%d pane %d: %d lines", sz[0], sz[1], p+1, len(lines))
			}
			for i, l := range lines {
				if w := ansi.StringWidth(l); w > sz[0] {
					t.Errorf("%dx%d pane %d: line %d is %d wide", sz[0], sz[1], p+1, i+1, w)
				}
			}
		}
	}
}

// TestFullHelpFits opens the full help at several sizes: the screen keeps
// exactly the terminal's height, whatever the help's columns.
func TestFullHelpFits(t *testing.T) {
	for _, sz := range [][2]int{{80, 24}, {120, 40}, {160, 48}} {
		m := newModel(t, seedA, sz[0], sz[1], Options{})
		press(t, m, "?")
		scr := screenText(m)
		if n := len(strings.Split(scr, "\n")); n != sz[1] {
			t.Errorf("%dx%d: %d lines with the full help", sz[0], sz[1], n)
		}
		if !strings.Contains(scr, ": commands") || !strings.Contains(scr, "why") {
			t.Errorf("%dx%d: the full help lacks the new keys:\n%s", sz[0], sz[1], scr)
		}
	}
}

// TestHandoffRaiseOnScreen runs the chained-call example under PyTorch
// 2.11's rule: the status line says so, and the tree marks fee's failed
// warmup, which stays on the path.
func TestHandoffRaiseOnScreen(t *testing.T) {
	const s07 = "../examples/s07-chain-handoff.cgt.jsonl"
	tr, err := sessions.OpenTrace(s07)
	if err != nil {
		t.Fatal(err)
	}
	s, err := sessions.New(tr, sessions.Options{Source: s07, Handoff: engine.HandoffRaise})
	if err != nil {
		t.Fatal(err)
	}
	m := New(s, Options{})
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
	gotoStep(t, m, "5") // line 6: fee(b) raises
	scr := screenText(m)
	for _, want := range []string{"2.11 handoff", "warmup of fee ✗ raised", "has been overwritten by a"} {
		if !strings.Contains(scr, want) {
			t.Errorf("the screen lacks %q:\n%s", want, scr)
		}
	}
	if strings.Contains(screenText(newModel(t, s07, 160, 48, Options{})), "2.11 handoff") {
		t.Error("the default rule's status line says 2.11 handoff")
	}
}

// TestCheckpointStory reads the details of the demo's checkpoint step
// (line 32) in order: why #1 could not replay, the checkpoint with the
// reason one is needed, then the recording.
func TestCheckpointStory(t *testing.T) {
	m := newModel(t, seedA, 120, 40, Options{})
	gotoStep(t, m, "31")
	text := strings.Join(stepLines(&m.snap, m.recs, m.styles, 1000), "\n")
	order := []string{
		"#1 cannot replay: it expected a dead before its replay, but a is alive",
		"checkpoint: the graph pool holds live replay outputs that the allocator believes free, so it is restored to #0's state with a and b re-allocated",
		"Why a checkpoint is needed: replays do not tell the allocator what they allocate",
		"then record #2 fee: no existing recording passed its invariants",
	}
	at := -1
	for _, w := range order {
		i := strings.Index(text, w)
		if i < 0 {
			t.Fatalf("the checkpoint step lacks %q:\n%s", w, text)
		}
		if i < at {
			t.Errorf("%q comes before what causes it:\n%s", w, text)
		}
		at = i
	}
}

// TestTextKept: at 80x24 the help line keeps "? help" and "q quit", the
// status line keeps the error count, at any position of a long trace.
func TestTextKept(t *testing.T) {
	for _, sz := range [][2]int{{80, 24}, {120, 40}, {140, 45}, {200, 60}} {
		// (a recording of train_mlp kept as it was: examples/recorded is re-recorded)
		m := newModel(t, "testdata/train_mlp_session3.cgt.jsonl", sz[0], sz[1], Options{})
		command(t, m, "line 80")
		lines := strings.Split(screenText(m), "\n")
		help, status := lines[len(lines)-1], lines[len(lines)-3]
		for _, w := range []string{"? help", "q quit", ": commands"} {
			if !strings.Contains(help, w) {
				t.Errorf("%dx%d: the help line %q lacks %q", sz[0], sz[1], help, w)
			}
		}
		for _, w := range []string{"line 80/90", "err 0", "EXECUTION"} {
			if !strings.Contains(status, w) {
				t.Errorf("%dx%d: the status line %q lacks %q", sz[0], sz[1], status, w)
			}
		}
		if !strings.Contains(lines[len(lines)-4], "R rec") {
			t.Errorf("%dx%d: the timeline %q lost its legend", sz[0], sz[1], lines[len(lines)-4])
		}
	}
}

// TestWideLayoutGivesTheTrace: from 180x48 on, the trace runs the height
// of the body and is the widest column.
func TestWideLayoutGivesTheTrace(t *testing.T) {
	m := newModel(t, seedA, 200, 60, Options{})
	sc := m.layout()
	tr := sc.rects[paneTrace]
	if tr.h != sc.bodyH || tr.y != 0 {
		t.Errorf("the trace is %+v, want the whole body height %d", tr, sc.bodyH)
	}
	for p := range numPanes {
		if p != paneTrace && sc.rects[p].w >= tr.w {
			t.Errorf("pane %s (%+v) is as wide as the trace (%+v)", paneTitles[p], sc.rects[p], tr)
		}
	}
}

// TestFullHelpWhole: where the screen is too short for every key under
// the panes (80x24), ? shows them all in a popup; none is cut.
func TestFullHelpWhole(t *testing.T) {
	m := newModel(t, seedA, 80, 24, Options{})
	press(t, m, "?")
	if m.mode != modeOverlay {
		t.Fatalf("? at 80x24: mode %d, want the popup", m.mode)
	}
	all := strings.Join(m.over.lines, "\n")
	for _, col := range m.keys.FullHelp() {
		for _, b := range col {
			if !b.Enabled() {
				continue // e without an exporter
			}
			if !strings.Contains(all, b.Help().Key) || !strings.Contains(all, b.Help().Desc) {
				t.Errorf("the keys popup lacks %q %q", b.Help().Key, b.Help().Desc)
			}
		}
	}
	press(t, m, "?")
	if m.mode != modeNormal {
		t.Errorf("? again leaves mode %d", m.mode)
	}
}

// TestMessageAfterQuietRecord checks the message line after a record that
// decided nothing (a def): it names that record, not the start's hint.
func TestMessageAfterQuietRecord(t *testing.T) {
	m := newModel(t, "../examples/seed-a-checkpoint.cgt.jsonl", 120, 40, Options{})
	if got := screenText(m); !strings.Contains(got, "the start: n runs the first record") {
		t.Fatalf("at the start the hint is missing:\n%s", got)
	}
	press(t, m, "n")
	got := screenText(m)
	if strings.Contains(got, "the start:") || !strings.Contains(got, "line 2: def foo ran") {
		t.Errorf("after the first def the message line is not about it:\n%s", got)
	}
	gotoStep(t, m, "7") // line 8, an expect that holds
	if got := screenText(m); !strings.Contains(got, "line 8: every expectation held") {
		t.Errorf("after a passing expect:\n%s", got)
	}
}
