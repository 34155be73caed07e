package sessions

import "github.com/cgtviz/cgtviz/traces"

// A long move forward over a trace read on demand reads its records ahead,
// on a goroutine, in large sequential reads (traces.Index.Scan), as `run`
// reads its input: one read per record (Index.Record) made a first long
// move several times slower than run (issue 34, item 15).

// aheadMin is the shortest move that reads ahead: below it, the records
// shown are in Index.Record's cache or few enough not to matter.
const aheadMin = 8192

// aheadBuf is how many records the reader may parse ahead of the engine.
const aheadBuf = 4096

// scanner is what Records read ahead with (indexRecords).
type scanner interface {
	Scan(from, to int, each func(i int, rec *traces.Record, err error) bool) error
}

func (x indexRecords) Scan(from, to int, each func(int, *traces.Record, error) bool) error {
	return x.ix.Scan(from, to, each)
}

// aheadBatch is how many records the reader hands over at once: one
// channel operation per batch, not per record.
const aheadBatch = 256

type aheadItem struct {
	i   int
	err error
}

// batch is records [first, first+len(recs)) and their problems.
type batch struct {
	recs  []traces.Record
	items []aheadItem
}

// readAhead is the reader of a long move.
type readAhead struct {
	next int // the record fromAhead gives next
	cur  batch
	at   int // the next of cur's records
	ch   chan batch
	// free takes the batches fromAhead is done with back to the reader,
	// which fills them again: a batch a 256 records (records are a few
	// hundred bytes) was most of what a move allocated, and the
	// collector's work for it slowed the engine beside it.
	free chan batch
	stop chan struct{}
}

// startAhead reads records [from, to) ahead when the move is long and the
// records can be scanned; the returned func ends it (always call it).
func (s *Session) startAhead(from, to int) func() {
	sc, ok := s.src.(scanner)
	if !ok || to-from < aheadMin || s.ahead != nil {
		return func() {}
	}
	n := aheadBuf / aheadBatch
	a := &readAhead{next: from, ch: make(chan batch, n), free: make(chan batch, n+2), stop: make(chan struct{})}
	go func() {
		defer close(a.ch)
		// A fresh batch until the first ones come back: n in the
		// channel, one with fromAhead, one filling.
		empty := func() batch {
			select {
			case b := <-a.free:
				clear(b.recs) // what the records' slices held goes
				return batch{recs: b.recs[:0], items: b.items[:0]}
			default:
				return batch{recs: make([]traces.Record, 0, aheadBatch), items: make([]aheadItem, 0, aheadBatch)}
			}
		}
		b := empty()
		send := func() bool {
			select {
			case a.ch <- b:
			case <-a.stop:
				return false
			}
			b = empty()
			return true
		}
		// A read error ends the batches: fromAhead then falls back to
		// Record, which reports it where it is.
		_ = sc.Scan(from, to, func(i int, rec *traces.Record, err error) bool {
			b.recs = append(b.recs, *rec)
			b.items = append(b.items, aheadItem{i, err})
			return len(b.recs) < aheadBatch || send()
		})
		if len(b.recs) > 0 {
			send()
		}
	}()
	s.ahead = a
	return func() {
		close(a.stop)
		for range a.ch {
			// Let the reader see stop and end.
		}
		s.ahead = nil
	}
}

// fromAhead returns record i when the move's reader has it next; ok is
// false when it has not (a read error, the end, or another record asked
// for), and the caller reads it as usual.
func (s *Session) fromAhead(i int) (*traces.Record, error, bool) {
	a := s.ahead
	if a == nil || i != a.next {
		return nil, nil, false
	}
	if a.at == len(a.cur.recs) {
		b, open := <-a.ch
		if !open {
			return nil, nil, false
		}
		// The last record given out is done with: Apply keeps no
		// pointer into it past its call.
		if a.cur.recs != nil {
			select {
			case a.free <- a.cur:
			default:
			}
		}
		a.cur, a.at = b, 0
	}
	if a.cur.items[a.at].i != i {
		return nil, nil, false
	}
	rec, err := &a.cur.recs[a.at], a.cur.items[a.at].err
	a.at++
	a.next++
	return rec, err, true
}
