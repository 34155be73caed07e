package main

import (
	"strconv"
	"sync"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/traces"
)

// srcNotes passes a run's records through, keeping the user's source line
// ("src") of each record that has one until its step is logged: --log
// names it (issue 33 item 3). The engine reads records ahead of the steps
// it hands out (on a goroutine of its own with RunStream), hence the lock
// and the map by trace line rather than one "last" source.
type srcNotes struct {
	recs engine.Records
	mu   sync.Mutex
	at   map[int]*traces.Source
}

func newSrcNotes(recs engine.Records) *srcNotes {
	return &srcNotes{recs: recs, at: map[int]*traces.Source{}}
}

func (n *srcNotes) Next() (traces.Record, error) {
	r, err := n.recs.Next()
	if err == nil && r.Src != nil {
		src := *r.Src // the reader may reuse the record's memory
		n.mu.Lock()
		n.at[r.Line] = &src
		n.mu.Unlock()
	}
	return r, err
}

// take returns and forgets the source of the record on line, or nil.
func (n *srcNotes) take(line int) *traces.Source {
	n.mu.Lock()
	defer n.mu.Unlock()
	s := n.at[line]
	delete(n.at, line)
	return s
}

// srcLogLine is the --log line naming a step's user code, as the events'
// lines are prefixed.
func srcLogLine(file string, line int, src *traces.Source) string {
	return file + ":" + strconv.Itoa(line) + ": [__cudagraphs] from " + traces.Printable(src.String())
}

// defSources passes a run's records through, keeping where each compiled
// function is defined (a def record's "src") for the report's table of
// functions. Records are read ahead of the steps, hence the lock.
type defSources struct {
	recs engine.Records
	mu   sync.Mutex
	at   map[string]string
}

func newDefSources(recs engine.Records) *defSources {
	return &defSources{recs: recs, at: map[string]string{}}
}

func (d *defSources) Next() (traces.Record, error) {
	r, err := d.recs.Next()
	if err == nil && r.Op == traces.OpDef && r.Src != nil {
		d.mu.Lock()
		d.at[r.Fn] = traces.Printable(r.Src.String())
		d.mu.Unlock()
	}
	return r, err
}

// of returns the source of fn's def, or "".
func (d *defSources) of(fn string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.at[fn]
}
