package ui

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/sessions"
	"github.com/cgtviz/cgtviz/traces"
)

// tracePane lists the trace's records with the position, breakpoints and,
// for executed records, what each did.
type tracePane struct {
	scroll
	// sums caches the summaries of the visible records, from lo on; it is
	// filled in Update (never in View, which must not touch the session).
	lo   int
	sums []sessions.Summary
	have []bool
	// problems are the background check's problems by line (a trace read
	// on demand), shown on their rows.
	problems map[int]string
}

// refresh clamps the window and caches the summaries it shows.
func (p *tracePane) refresh(s *sessions.Session, h int) {
	n := s.Len()
	p.clamp(n, h)
	p.lo = p.offset
	p.sums = p.sums[:0]
	p.have = p.have[:0]
	for i := p.offset; i < min(p.offset+h, n); i++ {
		sum, ok := s.Summary(i)
		p.sums = append(p.sums, sum)
		p.have = append(p.have, ok)
	}
}

// summary returns the cached summary of record i.
func (p *tracePane) summary(i int) (sessions.Summary, bool) {
	j := i - p.lo
	if j < 0 || j >= len(p.sums) || !p.have[j] {
		return sessions.Summary{}, false
	}
	return p.sums[j], true
}

// result is the label of what an executed record did.
func result(rec *traces.Record, sum sessions.Summary) (string, int) {
	switch {
	case sum.Err != "":
		return "ERROR", resErr
	case rec.Op == traces.OpExpect && len(sum.ExpectFailures) > 0:
		return "✗ FAILED", resErr
	case rec.Op == traces.OpExpect:
		return "✓", resOK
	}
	switch sum.Action {
	case engine.ActionRecord, engine.ActionReplay:
		return fmt.Sprintf("%s #%d", sum.Action, sum.Node), resAction
	case engine.ActionWarmup, engine.ActionEager:
		return string(sum.Action), resAction
	}
	return "", resNone
}

const (
	resNone = iota
	resErr
	resOK
	resAction
)

// draw renders the visible records.
func (p *tracePane) draw(recs records, snap *snapshot, s Styles, w, h int, focused bool) []string {
	n := recs.len()
	p.clamp(n, h)
	lw := len(strconv.Itoa(maxLine(recs, n)))
	out := make([]string, 0, h)
	bps := map[int]bool{}
	for _, b := range snap.bps {
		if b.Line > 0 && b.Fn == "" && b.Kind == 0 {
			bps[b.Line] = true
		}
	}
	for i := p.offset; i < n && len(out) < h; i++ {
		rec, perr := recs.get(i)
		if perr != nil {
			rec = recs.at(i)
		}
		var b strings.Builder
		sel := i == p.cursor
		mark := func(on bool, g string) {
			if on {
				b.WriteString(g)
			} else {
				b.WriteString(" ")
			}
		}
		mark(sel, "›")
		bp := " "
		if bps[rec.Line] {
			bp = s.BreakpointOn.Render("●")
		}
		b.WriteString(bp)
		mark(i == snap.pos-1, "▶")
		// Only records before the position have run: after a step back
		// the session still knows what later records did, but on screen
		// they are not run yet (the timeline draws them ·).
		sum, done := p.summary(i)
		done = done && i < snap.pos
		mark(done && sum.Checkpoint, "◆")
		fmt.Fprintf(&b, "%*d ", lw, rec.Line)
		res, kind := "", resNone
		if done {
			res, kind = result(rec, sum)
		}
		rs := s.Dim
		switch kind {
		case resErr:
			rs = s.Err
		case resOK:
			rs = s.OK
		case resAction:
			rs = s.action(sum.Action)
		}
		b.WriteString(rs.Render(fit(res, 10)))
		b.WriteString(" ")
		text := recordText(rec)
		ts := s.Normal
		msg, bad := p.problems[rec.Line]
		switch {
		case perr != nil:
			// A line that does not parse, found by the background check.
			text = "✗ " + problemMsg(perr)
		case bad:
			// A record the check refused, where it is.
			text += "  ✗ " + msg
		}
		switch {
		case perr != nil || bad:
			ts = s.Err
		case i >= snap.pos:
			ts = s.Dim
		case kind == resErr:
			ts = s.Err
		}
		b.WriteString(ts.Render(text))
		line := b.String()
		if sel && focused {
			line = s.Selected.Render(fit(stripped(line), w))
		}
		out = append(out, line)
	}
	return out
}

func maxLine(recs records, n int) int {
	m := 1
	for i := n - 1; i >= 0 && i >= n-4; i-- {
		m = max(m, recs.line(i))
	}
	return m
}

// problemMsg is a problem's message without its file:line, which the row
// already shows.
func problemMsg(err error) string {
	var p *traces.Problem
	if errors.As(err, &p) {
		return p.Msg
	}
	return traces.Printable(err.Error())
}

// The trace as a component: enter runs to the record under the cursor, y
// copies its row, and search reads the rows as drawn, in its tea.Cmd.

func (p *tracePane) title(c *paneCtx) string {
	return fmt.Sprintf("%s · %d records", paneTitles[paneTrace], c.recs.len())
}

func (p *tracePane) view(c *paneCtx, w, h int, focused bool) []string {
	return p.draw(c.recs, c.snap, *c.styles, w, h, focused)
}

func (p *tracePane) keys(km *KeyMap) []key.Binding { return []key.Binding{km.Trace.RunTo} }

func (p *tracePane) onKey(c *paneCtx, k tea.KeyPressMsg) (tea.Cmd, bool) {
	if !key.Matches(k, c.keys.Trace.RunTo) {
		return nil, false
	}
	// Run to cursor: up to the record under the cursor, stopping at a
	// breakpoint on the way as gdb's until does.
	if p.cursor >= 0 && p.cursor < c.recs.len() {
		return c.runTo(p.cursor + 1), true
	}
	return nil, true
}

func (p *tracePane) scrollBy(c *paneCtx, d int) {
	p.cursor = clampAdd(p.cursor, d, c.recs.len())
	c.refresh()
}

// text reads the rows lazily: a trace read on demand may have millions of
// records, each parsed from the file, so line runs in the search's Cmd.
func (p *tracePane) text(c *paneCtx, _ int) paneText {
	recs, summary := c.recs, ranSummary(c.summary, c.snap.pos)
	return paneText{n: recs.len(), line: func(i int) string { return rowText(recs, summary, i) }}
}

func (p *tracePane) selection(c *paneCtx, _ int) string {
	if i := p.cursor; i >= 0 && i < c.recs.len() {
		return strings.TrimSpace(rowText(c.recs, ranSummary(c.summary, c.snap.pos), i))
	}
	return ""
}

func (p *tracePane) at() int { return p.cursor }

func (p *tracePane) show(c *paneCtx, i int) {
	p.cursor = i
	c.refresh()
}

// ranSummary is summary limited to the records run at position pos: what
// the trace pane shows, and so what search and copy read.
func ranSummary(summary func(int) (sessions.Summary, bool), pos int) func(int) (sessions.Summary, bool) {
	return func(i int) (sessions.Summary, bool) {
		if i >= pos {
			return sessions.Summary{}, false
		}
		return summary(i)
	}
}

// cursorRow is the cursor's row in the body, drawn reversed already.
func (p *tracePane) cursorRow() int { return p.cursor - p.offset }

// rowText is what the trace pane shows of record i, as search reads it:
// the line number, what the record did ("record #2"), the word
// "checkpoint" on the rows the ◆ marks, and its text. summary is the
// session's, read where the session may be used.
func rowText(recs records, summary func(int) (sessions.Summary, bool), i int) string {
	rec := recs.at(i)
	var b strings.Builder
	fmt.Fprintf(&b, "%d ", rec.Line)
	if sum, ok := summary(i); ok {
		res, _ := result(rec, sum)
		b.WriteString(res + " ")
		if sum.Checkpoint {
			b.WriteString("◆ checkpoint ")
		}
		if sum.Rerecord {
			b.WriteString("re-record ")
		}
		if sum.Err != "" {
			b.WriteString(sum.Err + " ")
		}
	}
	b.WriteString(recordText(rec))
	return b.String()
}
