package ui

import (
	"slices"
	"strings"

	"charm.land/lipgloss/v2"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/sessions"
)

// A mark is what one executed record did, as the timeline shows it; a
// higher mark wins when records share a cell.
type mark uint8

const (
	markUnrun      mark = iota // not executed yet
	markRan                    // ran, and the tree did nothing (tensor, del, step, read, a passing expect)
	markReplay                 // a replay
	markEager                  // an eager run (a skip, a mutation, the recompile limit, views only)
	markWarmup                 // a warmup
	markRecord                 // a recording
	markOverwrite              // a replay that silently overwrote a cached output an older name holds
	markCheckpoint             // a checkpoint of the pool before a warmup or recording
	markError                  // an error or a failed expectation
)

// markGlyphs are the cells' glyphs, by mark; they read without color.
var markGlyphs = [...]string{"·", "─", "r", "e", "w", "R", "O", "C", "!"}

// markOf is the mark of a record's summary.
func markOf(sum sessions.Summary) mark {
	switch {
	case sum.Err != "" || len(sum.ExpectFailures) > 0:
		return markError
	case sum.Checkpoint:
		return markCheckpoint
	}
	switch sum.Action {
	case engine.ActionRecord:
		return markRecord
	case engine.ActionWarmup:
		return markWarmup
	case engine.ActionEager:
		return markEager
	case engine.ActionReplay:
		return markReplay
	}
	return markRan
}

// timeline is the strip above the status line: the whole trace in one row,
// each cell a run of records marked by the most telling thing one of them
// did, so that where the tree was built, where it replayed and where it
// broke show at a glance; the cell of the record just run is reversed, and
// a click on a cell goes there (rr's event counter, drawn).
type timeline struct {
	// marks has one mark per executed record. Executed records never
	// change what they did, so it only grows (update). A Seq: a long
	// loop's marks take next to nothing, and a cell's top reads a period
	// of them a chunk.
	marks sessions.Seq[mark]
	// overwrites are the records the session knows overwrote a cached
	// output silently (sessions.KindOverwrite), ascending: known only
	// once checked, so they are kept apart from marks, re-read on each
	// update, and count as markOverwrite where that is more.
	overwrites []int
	// drawn memoizes the last strip: aggregating a million records takes
	// a millisecond, and frames are drawn far more often than steps run.
	drawn    string
	drawnFor stripKey
}

// stripKey is what a drawn strip depends on.
type stripKey struct {
	n, w, cur, marks, overwrites int
	color, valid                 bool
}

// update reads the marks of records executed since the last update. It
// runs in Update, where the session may be read.
func (tl *timeline) update(s *sessions.Session) {
	s.Summaries(tl.marks.Len(), s.Executed(), func(sum sessions.Summary) {
		tl.marks.Push(markOf(sum))
	})
	if hits := s.OverwriteHits(); len(hits) != len(tl.overwrites) {
		tl.overwrites = hits
	}
}

// stripCells is how many cells a strip of width w has for n records: one per
// record when they fit, else the width inside the margins.
func stripCells(n, w int) int {
	return max(min(n, w-2), 0)
}

// cellRange is the records [lo, hi) of cell i of k over n records.
func cellRange(i, k, n int) (lo, hi int) {
	return i * n / k, (i + 1) * n / k
}

// view draws the strip for n records, width w, with the record just run at
// index cur (-1 for none).
func (tl *timeline) view(s Styles, n, w, cur int) string {
	key := stripKey{n, w, cur, tl.marks.Len(), len(tl.overwrites), s.Color, true}
	if key != tl.drawnFor {
		tl.drawn, tl.drawnFor = tl.draw(s, n, w, cur), key
	}
	return tl.drawn
}

// draw aggregates the marks into the strip.
func (tl *timeline) draw(s Styles, n, w, cur int) string {
	// The legend keeps its room: the cells share what is left.
	k, legend := cellsFor(n, w), legendFor(w)
	var b strings.Builder
	b.WriteString(" ")
	for i := range k {
		lo, hi := cellRange(i, k, n)
		// Records after the position have not run, whatever the session
		// remembers of them from before a step back.
		top, _ := tl.top(lo, min(hi, cur+1))
		st := s.markStyle(top)
		if cur >= lo && cur < hi {
			st = st.Reverse(true)
		}
		b.WriteString(st.Render(markGlyphs[top]))
	}
	if legend != "" {
		b.WriteString(strings.Repeat(" ", max(w-k-1-len(legend), 0)) + s.Dim.Render(legend))
	}
	return fit(b.String(), w)
}

// The legends name the glyphs (ASCII only, so len is their width): the
// long one on wide terminals, the short one down to 60 columns.
const (
	timelineLegend      = "r replay  e eager  w warmup  R record  O overwrite  C checkpoint  ! error "
	timelineLegendShort = "r rep e eager w warm R rec O overw C ckpt ! err "
)

// legendFor is the legend a strip of width w shows.
func legendFor(w int) string {
	switch {
	case w >= 140:
		return timelineLegend
	case w >= 60:
		return timelineLegendShort
	}
	return ""
}

// cellsFor is how many cells the strip of width w has for n records.
func cellsFor(n, w int) int {
	return min(stripCells(n, w), max(w-2-len(legendFor(w)), 0))
}

// recordAt is the record of the cell under column x (0-based on the
// screen), or -1 off the cells: the last record of the cell, so that going
// there shows what the cell's mark stands for as the step just run.
func (tl *timeline) recordAt(x, n, w int) int {
	k := cellsFor(n, w)
	i := x - 1
	if i < 0 || i >= k {
		return -1
	}
	_, at := tl.top(cellRange(i, k, n))
	return at
}

// top is the most telling mark of records [lo, hi) and the first record
// that has it; markUnrun and the last record when none of them ran.
func (tl *timeline) top(lo, hi int) (mark, int) {
	best, at := markUnrun, hi-1
	tl.marks.Skim(lo, hi, func(j int, m mark) {
		if m > best {
			best, at = m, j
		}
	})
	// An overwrite is known of a replay, whose own mark is less.
	if k, _ := slices.BinarySearch(tl.overwrites, lo); k < len(tl.overwrites) {
		if j := tl.overwrites[k]; j < hi && j < tl.marks.Len() && markOverwrite > best {
			best, at = markOverwrite, j
		}
	}
	return best, at
}

// markStyle is the style of a mark's glyph.
func (s Styles) markStyle(m mark) lipgloss.Style {
	switch m {
	case markUnrun:
		return s.Dim
	case markReplay:
		return s.Replay
	case markEager:
		return s.Eager
	case markWarmup:
		return s.Warmup
	case markRecord:
		return s.Record
	case markOverwrite:
		return s.Warn
	case markCheckpoint:
		return s.Checkpoint
	case markError:
		return s.Err
	}
	return s.Normal
}
