package ui

import (
	"context"
	"errors"
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

// Search looks for what a pane shows, not for the raw trace: in the trace
// the line number, what the record did ("record #2") and its text, and the
// word "checkpoint" on the rows the ◆ marks; in the other panes their
// lines as drawn (node ids, tensor names, block lists). / searches the
// pane that has the focus; ctrl+n and ctrl+p go to the next and previous
// match, and every pane highlights the matches it shows.

// Search runs as a command, as moves do: a trace read on demand may have
// millions of records, each parsed from the file to be searched, so Update
// only asks the searched pane for its text (paneText, read lazily) and
// starts the command; the match comes back in a searchMsg. The command
// holds the session as a move does (busy), since the trace's rows show
// what executed records did; a key typed meanwhile cancels it, Esc
// without doing anything else.

// search is the search's state: the query, the pane it searches (the one
// focused when it was typed), and the search running.
type search struct {
	query string
	pane  pane
	// cancel cancels the search running in a command, nil when none
	// runs; seq numbers the searches, so that a late answer of one
	// cancelled is dropped.
	cancel context.CancelFunc
	seq    int
}

// searchMsg is the answer of a search: the line of the match, or where a
// search that found nothing stopped.
type searchMsg struct {
	seq   int
	pane  pane
	query string
	// at is the match's line when found; else the last line read when
	// the search stopped short of the whole text (span < n), or -1.
	at    int
	found bool
	n     int // the text's lines
	span  int // the lines the search could read
	err   error
}

// find starts a search for the next (dir 1) or previous (dir -1) match of
// the query in the pane searched, wrapping around, in a command.
func (m *Model) find(dir int) tea.Cmd {
	if m.search.query == "" {
		m.setMsg("", errors.New("search: no query (press /)"))
		return nil
	}
	if m.busy {
		return nil
	}
	p := m.search.pane
	comp := m.component(p)
	text := comp.text(m.ctx(), m.paneWidth(p))
	from := comp.at()
	n := text.n
	// One search reads at most searchSpan records of the trace (about
	// half a second of parsing); the next goes on from where it stopped.
	span := n
	if p == paneTrace && n > searchSpan {
		span = searchSpan
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.search.seq++
	m.busy, m.search.cancel = true, cancel
	msg := searchMsg{seq: m.search.seq, pane: p, query: m.search.query, at: -1, n: n, span: span}
	q := strings.ToLower(msg.query)
	return func() tea.Msg {
		defer cancel()
		if n == 0 {
			return msg
		}
		for k := 1; k <= span; k++ {
			if k%1024 == 1 && ctx.Err() != nil {
				msg.err = ctx.Err()
				return msg
			}
			i := ((from+dir*k)%n + n) % n
			if strings.Contains(strings.ToLower(text.line(i)), q) {
				msg.at, msg.found = i, true
				return msg
			}
		}
		if span < n {
			msg.at = ((from+dir*span)%n + n) % n
		}
		return msg
	}
}

// searched shows the answer of a search: the pane searched goes to the
// match, or says where the search stopped.
func (m *Model) searched(msg searchMsg) tea.Cmd {
	if msg.seq != m.search.seq || !m.busy {
		return nil
	}
	m.busy, m.search.cancel = false, nil
	p, c := msg.pane, m.ctx()
	comp := m.component(p)
	switch {
	case errors.Is(msg.err, context.Canceled):
		m.setMsg(fmt.Sprintf("search: /%s cancelled", msg.query), nil)
	case msg.found:
		m.focusPane(p)
		comp.show(m.ctx(), msg.at)
		where := fmt.Sprintf("row %d of %d", msg.at+1, msg.n)
		switch p {
		case paneTrace:
			where = fmt.Sprintf("line %d", m.recs.line(msg.at))
		case paneTensors:
			where = fmt.Sprintf("tensor %d of %d", msg.at, msg.n-1) // row 0 is the header
		}
		m.setMsg(fmt.Sprintf("/%s in %s: %s (ctrl+n next, ctrl+p previous)", msg.query, paneTitles[p], where), nil)
	case msg.at >= 0:
		comp.show(c, msg.at)
		m.setMsg("", fmt.Errorf("search: %q not found in the %d records up to line %d (ctrl+n/ctrl+p search on)", msg.query, msg.span, m.recs.line(msg.at)))
	default:
		m.setMsg("", fmt.Errorf("search: %q not found in %s", msg.query, paneTitles[p]))
	}
	return m.drain()
}

// searchSpan is the most trace records one search reads.
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
