package ui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/sessions"
)

func TestMarkOf(t *testing.T) {
	tests := []struct {
		sum  sessions.Summary
		want mark
	}{
		{sessions.Summary{}, markRan},
		{sessions.Summary{Action: engine.ActionReplay}, markReplay},
		{sessions.Summary{Action: engine.ActionEager}, markEager},
		{sessions.Summary{Action: engine.ActionWarmup}, markWarmup},
		{sessions.Summary{Action: engine.ActionRecord}, markRecord},
		{sessions.Summary{Action: engine.ActionRecord, Checkpoint: true}, markCheckpoint},
		{sessions.Summary{Action: engine.ActionReplay, Err: "boom"}, markError},
		{sessions.Summary{ExpectFailures: []string{"nodes: want 2, got 3"}}, markError},
	}
	for _, tc := range tests {
		if got := markOf(tc.sum); got != tc.want {
			t.Errorf("markOf(%+v) = %s, want %s", tc.sum, markGlyphs[got], markGlyphs[tc.want])
		}
	}
}

// TestTimelineCells checks how records share cells: each cell shows its
// most telling mark, the cell of the record just run is reversed, and a
// click on a cell picks that cell's most telling record.
func TestTimelineCells(t *testing.T) {
	tl := timelineOf(markRan, markWarmup, markReplay, markRecord, markReplay, markError)
	s := NewStyles(false)
	// 8 records (2 not run), 6 cells: one each, then two per cell for 4.
	tests := []struct {
		n, w int
		want string
	}{
		{8, 12, " ─wrRr!··   "},
		{8, 6, " wR!· "}, // 4 cells of 2 records: (─w) (rR) (r!) (··)
		{8, 3, " ! "},    // 1 cell of all: the error wins
		{0, 10, strings.Repeat(" ", 10)},
	}
	for _, tc := range tests {
		if got := ansi.Strip(tl.view(s, tc.n, tc.w, 5)); got != tc.want {
			t.Errorf("n %d w %d: %q, want %q", tc.n, tc.w, got, tc.want)
		}
	}
	// Back at record 2 (issue 34, item 2): the session remembers what
	// records 3-5 did, but they have not run at this position.
	if got := ansi.Strip(tl.view(s, 8, 12, 2)); got != " ─wr·····   " {
		t.Errorf("after a step back: %q, want the records after the position unrun", got)
	}
	if got := ansi.Strip(tl.view(s, 8, 12, -1)); got != " ········   " {
		t.Errorf("at the start: %q, want every record unrun", got)
	}
	got := tl.view(s, 8, 12, 3)
	if !strings.Contains(got, "\x1b[7mR") {
		t.Errorf("the cell of record 3 is not reversed: %q", got)
	}
	for _, tc := range []struct{ x, n, w, want int }{
		{1, 8, 12, 0}, {4, 8, 12, 3}, {0, 8, 12, -1}, {11, 8, 12, -1},
		{2, 8, 6, 3}, // cell (rR): the recording
		{3, 8, 6, 5}, // cell (r!): the error
		{4, 8, 6, 7}, // cell (··): not run, its last record
	} {
		if got := tl.recordAt(tc.x, tc.n, tc.w); got != tc.want {
			t.Errorf("recordAt(%d) over %d records, width %d = %d, want %d", tc.x, tc.n, tc.w, got, tc.want)
		}
	}
}

// TestTimelineOnScreen steps the demo and clicks the strip.
func TestTimelineOnScreen(t *testing.T) {
	m := newModel(t, seedA, 120, 40, Options{})
	gotoStep(t, m, "31")
	lines := strings.Split(screenText(m), "\n")
	strip := lines[m.layout().bodyH]
	// Records 0-30 ran: line 7 warmed up foo (record 5), line 32 recorded
	// after a checkpoint (record 30); 31-39 are not run.
	if !strings.HasPrefix(strip, " ─────w──w────R──R────r──r───r─C·········") || !strings.Contains(strip, "C ckpt") {
		t.Fatalf("strip %q", strip)
	}
	// A click on the cell of record 13 (the first recording) goes there.
	_, cmd := m.Update(tea.MouseClickMsg{X: 1 + 13, Y: m.layout().bodyH, Button: tea.MouseLeft})
	runCmd(m, cmd)
	if m.Pos() != 14 {
		t.Errorf("click on record 13: step %d, want 14", m.Pos())
	}
}

// TestTimelineLegendStays: a trace of more records than columns keeps the
// legend, the short one on narrow terminals, the long one on wide ones;
// the cells share the rest, and a click still finds its record.
func TestTimelineLegendStays(t *testing.T) {
	tl := timelineOf(make([]mark, 500)...)
	s := NewStyles(false)
	for _, tc := range []struct {
		w      int
		legend string
	}{{80, timelineLegendShort}, {120, timelineLegendShort}, {200, timelineLegend}, {40, ""}} {
		got := tl.view(s, 500, tc.w, 10)
		if ansi.StringWidth(got) != tc.w {
			t.Errorf("width %d: strip is %d wide", tc.w, ansi.StringWidth(got))
		}
		if tc.legend != "" && !strings.HasSuffix(got, tc.legend) {
			t.Errorf("width %d: strip %q lacks the legend %q", tc.w, got, tc.legend)
		}
		k := cellsFor(500, tc.w)
		if at := tl.recordAt(k, 500, tc.w); at != 499 {
			t.Errorf("width %d: the last cell goes to record %d, want 499", tc.w, at)
		}
		if at := tl.recordAt(k+1, 500, tc.w); at != -1 {
			t.Errorf("width %d: a click on the legend goes to record %d", tc.w, at)
		}
	}
}

// timelineOf is a timeline of the marks given.
func timelineOf(ms ...mark) timeline {
	var tl timeline
	for _, m := range ms {
		tl.marks.Push(m)
	}
	return tl
}

// TestTimelineOverwrites: a replay the session found to overwrite a
// cached output silently shows as one, in its cell and as the record a
// click picks, unless the cell holds something more telling.
func TestTimelineOverwrites(t *testing.T) {
	tl := timelineOf(markReplay, markReplay, markReplay, markCheckpoint, markReplay)
	tl.overwrites = []int{1, 4}
	for _, tc := range []struct {
		lo, hi int
		want   mark
		at     int
	}{
		{0, 1, markReplay, 0},
		{0, 2, markOverwrite, 1},
		{1, 3, markOverwrite, 1},
		{2, 3, markReplay, 2},
		{0, 5, markCheckpoint, 3},
		{4, 5, markOverwrite, 4},
		{2, 4, markCheckpoint, 3},
	} {
		if got, at := tl.top(tc.lo, tc.hi); got != tc.want || at != tc.at {
			t.Errorf("top(%d, %d) = %s at %d, want %s at %d", tc.lo, tc.hi, markGlyphs[got], at, markGlyphs[tc.want], tc.at)
		}
	}
}
