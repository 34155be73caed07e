package sim

import "sync/atomic"

// table is the device's handles (graphs, executable graphs) by number,
// copy-on-write in chunks: a snapshot or a clone shares the chunks and
// copies only the chunk index, and a write copies the one chunk it touches
// the first time after a snapshot. Handles are dense, counted from 1, so a
// table of ten thousand graphs costs a snapshot 40 pointers, not a map of
// ten thousand entries.
type table[T any] struct {
	chunks []*chunk[T]
	epoch  uint64 // chunks of an older epoch are shared: copy before writing
}

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

// set puts v (nil: removes) at handle h.
func (t *table[T]) set(h uint64, v *T) {
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

// share returns a copy that sees the table as it is now; from here on
// neither writes into the chunks they share.
func (t *table[T]) share() table[T] {
	t.epoch = nextEpoch()
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
