package ui

import (
	"fmt"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/cgtviz/cgtviz/sessions"
	"github.com/cgtviz/cgtviz/traces"
)

// records is the trace as the panes read it: through the session's
// Records, held in memory or parsed on demand from the file (a small cache
// keeps the recent ones), so that a trace of millions of records costs the
// UI only the rows it shows. Records are safe for concurrent use, so View
// may read them; the reads of an index are of a file the OS has cached
// after the index's own pass.
type records struct{ src sessions.Records }

// len is how many records there are to show, runnable or not; it grows
// while the trace is indexed or followed.
func (r records) len() int { return r.src.Shown() }

// get returns record i, or the problem that makes it unreadable.
func (r records) get(i int) (*traces.Record, error) { return r.src.Record(i) }

// at returns record i, or, when it cannot be read, an empty record at its
// line (get says why), so that a pane can still place it.
func (r records) at(i int) *traces.Record {
	rec, err := r.src.Record(i)
	if err != nil {
		if rec == nil {
			rec = &traces.Record{}
		}
		if rec.Line == 0 {
			rec.Line = r.src.Line(i)
		}
	}
	return rec
}

// line is record i's line number, without reading it.
func (r records) line(i int) int { return r.src.Line(i) }

// progressTick is how often the UI looks at the background pass of a
// trace read on demand (indexing, checking, following).
const progressTick = 200 * time.Millisecond

// progressMsg is the tick that shows the background pass's progress and
// the records it has added.
type progressMsg struct{}

// watchProgress ticks while the session's records have a background pass
// that has not ended; nil for a trace in memory.
func (m *Model) watchProgress() tea.Cmd {
	p, ok := m.sess.Records().Progress()
	if !ok || p.Done {
		return nil
	}
	return tea.Tick(progressTick, func(time.Time) tea.Msg { return progressMsg{} })
}

// onProgress takes in what the background pass found since the last tick:
// the runnable length, and the progress the status line shows.
func (m *Model) onProgress() tea.Cmd {
	p, _ := m.sess.Records().Progress()
	m.setProgress(p)
	m.snap.n = m.sess.Len()
	return m.watchProgress()
}

// setProgress keeps the background pass's progress for the status line and
// its problems for the rows they are on.
func (m *Model) setProgress(p traces.IndexProgress) {
	m.progress = p
	if len(p.Problems) > 0 {
		m.trace.problems = make(map[int]string, len(p.Problems))
		for _, pr := range p.Problems {
			if _, ok := m.trace.problems[pr.Line]; !ok {
				m.trace.problems[pr.Line] = pr.Msg
			}
		}
	}
}

// progressParts are the status line's words for the background pass: how
// far indexing has gone while it runs, and the problems found, with the
// line of the first (the trace pane marks each where it is).
func (m *Model) progressParts() []string {
	p := m.progress
	if _, ok := m.sess.Records().Progress(); !ok {
		return nil // a trace in memory: checked whole before it opened
	}
	var out []string
	switch {
	case p.Size < 0 && !p.Done:
		out = append(out, fmt.Sprintf("following: %d records", p.Records))
	case !p.Done && p.Size > 0:
		out = append(out, fmt.Sprintf("indexing %d%% (%d records)", int(100*p.Bytes/p.Size), p.Records))
	case !p.Done:
		out = append(out, fmt.Sprintf("indexing (%d records)", p.Records))
	}
	if n := len(p.Problems); n > 0 {
		out = append(out, fmt.Sprintf("✗ %d problem(s), first at line %d: runs stop there", n, p.Problems[0].Line))
	}
	if p.Err != nil {
		out = append(out, "✗ "+p.Err.Error())
	}
	return out
}
