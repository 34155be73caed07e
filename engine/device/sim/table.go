package sim

import "sync/atomic"

// table is the device's handles (graphs, executable graphs) by number,
// copy-on-write in chunks: a snapshot or a clone shares the chunks and
// copies only the chunk index, and a write copies the one chunk it touches
// the first time after a snapshot. Handles are dense, counted from 1, so a
// table of ten thousand graphs costs a snapshot 40 pointers, not a map of
// ten thousand entries.
//
// While a mark of the device is open (journal.go) the table also logs the
// entry each write replaces, so that the mark's undo writes them back: a
// mark then costs the table nothing, where sharing it for the mark made
// the first write after every mark copy a whole chunk (2 KB, the graph and
// the executable graph of each recording: 58 MB of garbage while a tree
// grew to 10,000 nodes).
type table[T any] struct {
	chunks []*chunk[T]
	epoch  uint64 // chunks of an older epoch are shared: copy before writing
	// logging is true while a mark is open; log holds, oldest first, the
	// handle and the old entry of each write since.
	logging bool
	log     []tableWrite[T]
}

// tableWrite is one logged write: handle h held old before it.
type tableWrite[T any] struct {
	h   uint64
	old *T
}

// maxTableLogKeep bounds the log a table keeps between marks (entries):
// a record that made many graphs should not pin its log.
const maxTableLogKeep = 1 << 12

const chunkBits = 8

type chunk[T any] struct {
	epoch   uint64
	entries [1 << chunkBits]*T
}

// epochs numbers the tables' generations process-wide, so that a chunk
// made by any table is never taken for one of another's current epoch
// (devices of one process may run on several goroutines).
var epochs atomic.Uint64

func nextEpoch() uint64 { return epochs.Add(1) }

func newTable[T any]() table[T] { return table[T]{epoch: nextEpoch()} }

// get returns the entry for handle h, nil when there is none.
func (t *table[T]) get(h uint64) *T {
	c := h >> chunkBits
	if c >= uint64(len(t.chunks)) || t.chunks[c] == nil {
		return nil
	}
	return t.chunks[c].entries[h&(1<<chunkBits-1)]
}

// set puts v (nil: removes) at handle h, logging the old entry while a
// mark is open.
func (t *table[T]) set(h uint64, v *T) {
	if t.logging {
		t.log = append(t.log, tableWrite[T]{h: h, old: t.get(h)})
	}
	t.put(h, v)
}

// put is set without the log.
func (t *table[T]) put(h uint64, v *T) {
	c := h >> chunkBits
	for uint64(len(t.chunks)) <= c {
		t.chunks = append(t.chunks, nil)
	}
	ch := t.chunks[c]
	switch {
	case ch == nil:
		ch = &chunk[T]{epoch: t.epoch}
		t.chunks[c] = ch
	case ch.epoch != t.epoch:
		cp := *ch
		cp.epoch = t.epoch
		ch = &cp
		t.chunks[c] = ch
	}
	ch.entries[h&(1<<chunkBits-1)] = v
}

// begin starts logging the writes (a mark opens).
func (t *table[T]) begin() {
	t.dropLog()
	t.logging = true
}

// end stops logging and forgets the log (the mark is committed or undone).
func (t *table[T]) end() {
	t.logging = false
	t.dropLog()
}

func (t *table[T]) dropLog() {
	clear(t.log) // the old entries are garbage unless the table holds them
	t.log = t.log[:0]
	if cap(t.log) > maxTableLogKeep {
		t.log = nil
	}
}

// undo writes back, newest first, what every logged write replaced, and
// ends the log: the table's entries are as they were at begin. Chunks
// appended since stay, empty: get and each read them as absent.
func (t *table[T]) undo() {
	for i := len(t.log) - 1; i >= 0; i-- {
		t.put(t.log[i].h, t.log[i].old)
	}
	t.end()
}

// share returns a copy that sees the table as it is now; from here on
// neither writes into the chunks they share.
func (t *table[T]) share() table[T] {
	t.epoch = nextEpoch()
	// The copy logs nothing: a mark's log stays with the table it was
	// opened on, which goes on logging.
	return table[T]{chunks: append([]*chunk[T](nil), t.chunks...), epoch: nextEpoch()}
}

// each calls f for every entry, in handle order.
func (t *table[T]) each(f func(h uint64, v *T)) {
	for ci, ch := range t.chunks {
		if ch == nil {
			continue
		}
		for i, v := range ch.entries {
			if v != nil {
				f(uint64(ci)<<chunkBits|uint64(i), v)
			}
		}
	}
}
