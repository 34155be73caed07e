package sessions

import (
	"fmt"

	"github.com/cgtviz/cgtviz/traces"
)

// Records is what a session steps through: the records of a trace held in
// memory (a *traces.Trace) or read on demand from its file (a
// *traces.Index, for traces too long to hold). Implementations are safe
// for concurrent use, so that a UI's View may read them.
type Records interface {
	// File names the trace in problems.
	File() string
	Header() traces.Header
	// Len is how many records may run: all of an in-memory trace; those
	// of an index checked so far, before its first problem. It only grows.
	Len() int
	// Shown is how many records there are to show: Len, and those of an
	// index past its first problem.
	Shown() int
	// Record returns record i (0 ≤ i < Shown), read-only; a record with a
	// problem returns it (*traces.Problem) with what could be decoded.
	Record(i int) (*traces.Record, error)
	// Line is the line number of record i, without reading it.
	Line(i int) int
	// RecordAtLine is the first record at or after line (Shown when none).
	RecordAtLine(line int) int
	// Defs names the functions defined so far, in order.
	Defs() []string
	// Progress is where the background pass of an index stands; ok is
	// false for a trace in memory, which has none.
	Progress() (p traces.IndexProgress, ok bool)
}

// InMemory returns the Records of a trace held in memory.
func InMemory(tr *traces.Trace) Records { return memRecords{tr} }

// Indexed returns the Records of a trace read on demand.
func Indexed(ix *traces.Index) Records { return indexRecords{ix} }

type memRecords struct{ tr *traces.Trace }

func (m memRecords) File() string          { return m.tr.File }
func (m memRecords) Header() traces.Header { return m.tr.Header }
func (m memRecords) Len() int              { return len(m.tr.Records) }
func (m memRecords) Shown() int            { return len(m.tr.Records) }
func (m memRecords) Line(i int) int        { return m.tr.Records[i].Line }

func (m memRecords) Record(i int) (*traces.Record, error) {
	if i < 0 || i >= len(m.tr.Records) {
		return nil, fmt.Errorf("%s: record %d out of range 0..%d", m.tr.File, i, len(m.tr.Records)-1)
	}
	return &m.tr.Records[i], nil
}

func (m memRecords) RecordAtLine(line int) int {
	lo, hi := 0, len(m.tr.Records)
	for lo < hi {
		mid := (lo + hi) / 2
		if m.tr.Records[mid].Line < line {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

func (m memRecords) Defs() []string {
	var out []string
	seen := map[string]bool{}
	for i := range m.tr.Records {
		if r := &m.tr.Records[i]; r.Op == traces.OpDef && !seen[r.Fn] {
			seen[r.Fn] = true
			out = append(out, r.Fn)
		}
	}
	return out
}

func (m memRecords) Progress() (traces.IndexProgress, bool) { return traces.IndexProgress{}, false }

type indexRecords struct{ ix *traces.Index }

func (x indexRecords) File() string                         { return x.ix.File() }
func (x indexRecords) Header() traces.Header                { return x.ix.Header() }
func (x indexRecords) Len() int                             { return x.ix.Checked() }
func (x indexRecords) Shown() int                           { return x.ix.Len() }
func (x indexRecords) Record(i int) (*traces.Record, error) { return x.ix.Record(i) }
func (x indexRecords) Line(i int) int                       { return x.ix.Line(i) }
func (x indexRecords) RecordAtLine(line int) int            { return x.ix.RecordAtLine(line) }
func (x indexRecords) Defs() []string                       { return x.ix.Defs() }
func (x indexRecords) Progress() (traces.IndexProgress, bool) {
	return x.ix.Progress(), true
}

// Horizon says what holds the session at Len when that is not the end of
// the trace: a record that could not be read, the first problem of a
// trace read on demand, the check still going on, or a followed trace
// waiting for more. "" at the end of a trace wholly checked.
func (s *Session) Horizon() string {
	if s.readErr != nil {
		return traces.Printable(s.readErr.Error())
	}
	p, ok := s.src.Progress()
	switch {
	case !ok:
		return ""
	case len(p.Problems) > 0 && s.Len() < p.Records:
		pr := p.Problems[0]
		return fmt.Sprintf("stopped before line %d, which does not check: %s", pr.Line, traces.Printable(pr.Msg))
	case p.Err != nil:
		return fmt.Sprintf("stopped where the trace could not be read: %v", p.Err)
	case !p.Done && p.Size < 0:
		return "waiting for more records (following the trace)"
	case !p.Done:
		return "no more records checked yet (the trace is still being indexed)"
	}
	return ""
}
