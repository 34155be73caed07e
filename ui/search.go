package ui

import (
	"errors"
	"fmt"
	"strings"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

// Search looks for what a pane shows, not for the raw trace: in the trace
// the line number, what the record did ("record #2") and its text, and the
// word "checkpoint" on the rows the ◆ marks; in the other panes their
// lines as drawn (node ids, tensor names, block lists). / searches the
// pane that has the focus; ctrl+n and ctrl+p go to the next and previous
// match, and every pane highlights the matches it shows.

// traceRowText is what the trace pane shows of record i, as search reads
// it. It runs in Update, where the session may be read.
func (m *Model) traceRowText(i int) string {
	rec := m.recs.at(i)
	var b strings.Builder
	fmt.Fprintf(&b, "%d ", rec.Line)
	if sum, ok := m.sess.Summary(i); ok {
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

// paneText is every line pane p would draw at its current width, without
// styles: the text search runs over.
func (m *Model) paneText(p pane) []string {
	r := m.layout().rects[p]
	iw := max(r.w-2, 8)
	st := m.snap.state
	var lines []string
	switch p {
	case paneTree:
		saved := m.tree.scroll
		m.tree.offset = 0
		lines = m.tree.view(st, m.styles, iw, len(m.tree.lines), false)
		m.tree.scroll = saved
	case panePool:
		m.pool.layout(st, m.dev, iw)
		for _, l := range m.pool.allLines() {
			var b strings.Builder
			for _, r := range l {
				b.WriteString(r.text)
			}
			lines = append(lines, b.String())
		}
	case paneDelta:
		lines = deltaLines(&m.snap, m.styles, iw)
	case paneDetails:
		lines = m.detailsLines(iw)
	case paneTensors:
		if st != nil {
			off, left := 0, 0
			lines = tensorLines(st, m.styles, &off, &left, 1<<20, len(st.Tensors)+1)
		}
	}
	for i, l := range lines {
		lines[i] = ansi.Strip(l)
	}
	return lines
}

// at is the line of pane p a search starts after: the cursor of a list,
// the first visible line of a text.
func (m *Model) at(p pane) int {
	switch p {
	case paneTree:
		return m.tree.cursor
	case paneTrace:
		return m.trace.cursor
	case panePool:
		return m.pool.offset
	case paneDelta:
		return m.delta.offset
	case paneDetails:
		return m.details.offset
	case paneTensors:
		return m.tensors.offset // row 0 of the table is its header
	}
	return 0
}

// show moves pane p to line i: the cursor of a list, the top of a text.
func (m *Model) show(p pane, i int) {
	switch p {
	case paneTree:
		m.tree.cursor = i
	case paneTrace:
		m.trace.cursor = i
		m.refresh()
	case panePool:
		m.pool.offset, m.pool.cursor = i, i
	case paneDelta:
		m.delta.offset = i
	case paneDetails:
		m.details.offset = i
	case paneTensors:
		m.tensors.offset = max(i-1, 0)
	}
}

// find goes to the next (dir 1) or previous (dir -1) match of the query
// in the pane searched, wrapping around.
func (m *Model) find(dir int) {
	if m.query == "" {
		m.setMsg("", errors.New("search: no query (press /)"))
		return
	}
	p := m.searchPane
	q := strings.ToLower(m.query)
	var n int
	var text func(i int) string
	if p == paneTrace {
		n, text = m.recs.len(), m.traceRowText
	} else {
		lines := m.paneText(p)
		n, text = len(lines), func(i int) string { return lines[i] }
	}
	from := m.at(p)
	if p == paneTensors {
		from++ // the header
	}
	// A trace read on demand may have millions of records, each parsed
	// from the file to be searched: one press searches at most searchSpan
	// of them (about half a second), and the next goes on from there.
	span := n
	if p == paneTrace && n > searchSpan {
		span = searchSpan
	}
	for k := 1; k <= span; k++ {
		i := ((from+dir*k)%n + n) % n
		if !strings.Contains(strings.ToLower(text(i)), q) {
			continue
		}
		m.focusPane(p)
		m.show(p, i)
		where := fmt.Sprintf("row %d of %d", i+1, n)
		switch p {
		case paneTrace:
			where = fmt.Sprintf("line %d", m.recs.line(i))
		case paneTensors:
			where = fmt.Sprintf("tensor %d of %d", i, n-1) // row 0 is the header
		}
		m.setMsg(fmt.Sprintf("/%s in %s: %s (ctrl+n next, ctrl+p previous)", m.query, paneTitles[p], where), nil)
		return
	}
	if span < n {
		last := ((from+dir*span)%n + n) % n
		m.show(p, last)
		m.setMsg("", fmt.Errorf("search: %q not found in the %d records up to line %d (ctrl+n/ctrl+p search on)", m.query, span, m.recs.line(last)))
		return
	}
	m.setMsg("", fmt.Errorf("search: %q not found in %s", m.query, paneTitles[p]))
}

// searchSpan is the most trace records one search press reads.
const searchSpan = 200_000

// highlight marks the matches of the query in a drawn line. A line with a
// match loses its other styles: the match must show without color too.
func highlight(line, q string, hi lipgloss.Style) string {
	if q == "" {
		return line
	}
	plain := ansi.Strip(line)
	lower := strings.ToLower(plain)
	lq := strings.ToLower(q)
	if !strings.Contains(lower, lq) || len(lower) != len(plain) {
		return line
	}
	var b strings.Builder
	for {
		i := strings.Index(lower, lq)
		if i < 0 {
			b.WriteString(plain)
			return b.String()
		}
		b.WriteString(plain[:i])
		b.WriteString(hi.Render(plain[i : i+len(lq)]))
		plain, lower = plain[i+len(lq):], lower[i+len(lq):]
	}
}
