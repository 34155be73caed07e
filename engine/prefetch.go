package engine

import (
	"io"

	"github.com/cgtviz/cgtviz/traces"
)

// A streamed run does two things per record: read it (decode and check
// it: traces.CheckedReader) and apply it. They are independent until the
// record is applied, so RunStream reads on a goroutine of its own while
// the engine applies what was read before: on a machine with two cores
// the reading costs no time of the engine's. The order of events does not
// change: a record reaches the engine only after it, and every record
// before it, has been read and checked, and the reader's error (a problem
// of the trace, io.EOF) comes after the records read before it, as it
// would in a plain loop.

// prefetchBatch is how many records the reader gets ahead at most before
// it waits for the engine. A reader that is ahead waits on its send, and
// the engine's receive of each batch wakes it: a futex call of 30 us on
// this machine's VM, which at 512 records a batch was 0.08 s of the
// engine's 1.6 s on the 1M-record scale trace (2,400 wakes). 4,096
// records are 1.7 MB a batch, six batches at most (free, the reader's,
// the engine's): about 10 MB.
const prefetchBatch = 4096

// batch is what the reader hands over: records, and after the last of
// them the reader's error, if it stopped (io.EOF at the end).
type batch struct {
	recs []traces.Record
	err  error
}

// prefetcher reads src on its own goroutine. A batch is handed over when
// it is full, or at once when the engine waits for it (an unbuffered
// channel's send succeeds only then): records are never held back while
// the engine idles, which a followed trace, read as it is written, needs.
type prefetcher struct {
	batches chan batch
	free    chan []traces.Record
	done    chan struct{}
	cur     batch
	i       int
}

func newPrefetcher(src Records) *prefetcher {
	p := &prefetcher{batches: make(chan batch), free: make(chan []traces.Record, 4), done: make(chan struct{})}
	go p.read(src)
	return p
}

// read is the reading goroutine: it ends after handing over src's error,
// or when the engine stops (stop).
func (p *prefetcher) read(src Records) {
	defer close(p.batches)
	buf := make([]traces.Record, 0, prefetchBatch)
	for {
		rec, err := src.Next()
		if err != nil {
			select {
			case p.batches <- batch{buf, err}:
			case <-p.done:
			}
			return
		}
		buf = append(buf, rec)
		if len(buf) < prefetchBatch {
			select {
			case p.batches <- batch{recs: buf}: // the engine was waiting
				buf = p.buffer()
			default:
			}
			continue
		}
		select {
		case p.batches <- batch{recs: buf}:
			buf = p.buffer()
		case <-p.done:
			return
		}
	}
}

// buffer returns an empty batch buffer, one the engine is done with if
// there is one.
func (p *prefetcher) buffer() []traces.Record {
	select {
	case b := <-p.free:
		return b[:0]
	default:
		return make([]traces.Record, 0, prefetchBatch)
	}
}

// next returns the next record, valid until the following call, or the
// reader's error once every record read before it was returned.
func (p *prefetcher) next() (*traces.Record, error) {
	for p.i >= len(p.cur.recs) {
		if p.cur.err != nil {
			return nil, p.cur.err
		}
		if p.cur.recs != nil {
			// The engine is done with these records: the reader may
			// reuse the buffer.
			select {
			case p.free <- p.cur.recs:
			default:
			}
		}
		b, ok := <-p.batches
		if !ok {
			return nil, io.EOF // the reader stopped without an error: stop was called
		}
		p.cur, p.i = b, 0
	}
	p.i++
	return &p.cur.recs[p.i-1], nil
}

// stop ends the reading goroutine and waits for it (it may be inside
// src.Next, and ends when that returns), so that the caller may close what
// src reads once stop returns.
func (p *prefetcher) stop() {
	close(p.done)
	for range p.batches {
	}
}
