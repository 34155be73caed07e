package alloc

import (
	"sync/atomic"

	"github.com/cgtviz/cgtviz/engine/device"
)

// Action is what a trace entry records; the values are PyTorch's trace
// actions as memory_viz spells them, plus Checkpoint markers.
type Action string

// The actions of the event log.
const (
	ActionSegmentAlloc  Action = "segment_alloc"
	ActionAlloc         Action = "alloc"
	ActionFreeRequested Action = "free_requested"
	ActionFreeCompleted Action = "free_completed"
	ActionSegmentFree   Action = "segment_free"
	ActionOOM           Action = "oom"
	// ActionCheckpoint marks a checkpoint taken or a restore's begin and
	// end (see Marker). It is ours, not PyTorch's, and is left out of
	// memory snapshots.
	ActionCheckpoint Action = "checkpoint"
)

// The markers of ActionCheckpoint entries.
const (
	MarkerCheckpointState = "checkpoint_state"
	MarkerRestoreBegin    = "checkpoint_restore_begin"
	MarkerRestoreEnd      = "checkpoint_restore_end"
)

// TraceEntry is one event of the allocator, as PyTorch's TraceEntry. Sizes
// are PyTorch's: alloc carries the requested bytes (the block size for the
// allocs of a checkpoint restore), free_requested and free_completed the
// block's requested size, segment_alloc and segment_free the segment size,
// oom the rounded request.
type TraceEntry struct {
	Action Action
	Addr   device.Ptr
	Size   int64
	Stream device.Stream
	// Pool is the pool of the block or segment.
	Pool PoolID
	// DeviceFree is the device's free memory, for oom entries.
	DeviceFree int64
	// Marker says which checkpoint event an ActionCheckpoint entry is.
	Marker string
	// Line and What are the context set by SetContext when the entry was
	// made: the trace line and what the engine was doing.
	Line int
	What string
	// Seq numbers the entries of one allocator from 0, counting dropped
	// ones too.
	Seq int64
}

// DefaultTraceMax is the number of trace entries kept by default.
const DefaultTraceMax = 100_000

// chunkLen is the number of entries per chunk of the log.
const chunkLen = 256

// traceLog is the bounded event log: a list of fixed chunks. A clone
// shares every chunk and the list itself, so it costs O(1), and so does
// the next append of either log: a chunk's entries are written once each,
// in order, by whichever log claims the next index first (traceChunk.hi);
// a log that finds its next index claimed by another copies the entries it
// sees into a chunk of its own. The allocator's journal saves the log so
// (Allocator.Mark) before every record that may fail and drops the copy
// when the record succeeds, so the live log goes on writing in place. A dropped chunk that no clone
// shares is reused, so a long run allocates nothing for its log once it is
// full.
type traceLog struct {
	chunks []*traceChunk
	// lastLen is how many entries of the last chunk this log holds: the
	// chunk may hold more, written by a clone.
	lastLen int
	n       int // entries held in chunks
	max     int
	seq     int64
	spare   *traceChunk
	gen     uint64
	// listOwned is false while chunks may be shared with a clone.
	listOwned bool
	// off: no entry is kept (Options.TraceMax < 0); next fills scratch.
	off     bool
	scratch TraceEntry
}

// traceGen hands out log generations; atomic because clones may be made
// and used in other goroutines.
var traceGen atomic.Uint64

type traceChunk struct {
	entries [chunkLen]TraceEntry
	// hi is how many entries have been written: entries[hi] is free for
	// the first log that claims it, every one below is immutable.
	hi atomic.Int32
	// gen is the generation of the log that made the chunk: a dropped
	// chunk of the log's own generation is shared with no clone and can
	// be reused. Set before the chunk is shared, never changed after.
	gen uint64
}

// chunkLenOf returns how many entries of chunk i the log holds.
func (t *traceLog) chunkLenOf(i int) int {
	if i == len(t.chunks)-1 {
		return t.lastLen
	}
	return chunkLen
}

func (t *traceLog) add(e TraceEntry) {
	p := t.next()
	e.Seq = p.Seq
	*p = e
}

// next appends a zero entry, numbered, and returns it to be filled in
// place (entries are big; this saves copying them twice).
func (t *traceLog) next() *TraceEntry {
	if t.off {
		t.scratch = TraceEntry{Seq: t.seq}
		t.seq++
		return &t.scratch
	}
	if t.gen == 0 {
		t.gen = traceGen.Add(1)
	}
	if len(t.chunks) == 0 || t.lastLen == chunkLen {
		c := t.spare
		if c != nil {
			t.spare = nil
			c.hi.Store(0)
		} else {
			c = &traceChunk{gen: t.gen}
		}
		t.appendChunk(c)
		t.lastLen = 0
	}
	last := t.chunks[len(t.chunks)-1]
	if !last.hi.CompareAndSwap(int32(t.lastLen), int32(t.lastLen+1)) {
		// A clone wrote past what this log holds: go on in a copy.
		cp := &traceChunk{gen: t.gen}
		copy(cp.entries[:t.lastLen], last.entries[:t.lastLen])
		cp.hi.Store(int32(t.lastLen + 1))
		t.chunks = t.chunks[:len(t.chunks)-1]
		t.appendChunk(cp)
		last = cp
	}
	e := &last.entries[t.lastLen]
	t.lastLen++
	*e = TraceEntry{Seq: t.seq}
	t.seq++
	t.n++
	for len(t.chunks) > 1 && t.n-chunkLen >= t.max {
		old := t.chunks[0]
		t.n -= chunkLen
		if old.gen == t.gen {
			t.spare = old
		}
		if t.listOwned {
			// Slide rather than reslice so the array does not creep forward.
			copy(t.chunks, t.chunks[1:])
			t.chunks[len(t.chunks)-1] = nil
			t.chunks = t.chunks[:len(t.chunks)-1]
		} else {
			// The list may be shared with a clone, which must not see it
			// change: take a copy of our own once.
			t.chunks = append(make([]*traceChunk, 0, len(t.chunks)+1), t.chunks[1:]...)
			t.listOwned = true
		}
	}
	return e
}

// appendChunk appends c to the list, copying a list shared with a clone
// first.
func (t *traceLog) appendChunk(c *traceChunk) {
	if !t.listOwned {
		t.chunks = append(make([]*traceChunk, 0, len(t.chunks)+16), t.chunks...)
		t.listOwned = true
	}
	t.chunks = append(t.chunks, c)
}

// clone shares the log: both logs take new generations, so that neither
// reuses a chunk the other can see, and both copy the list before they
// change it.
func (t *traceLog) clone() traceLog {
	t.gen = traceGen.Add(1)
	c := *t
	c.gen = traceGen.Add(1)
	c.spare = nil
	c.listOwned = false
	t.listOwned = false
	t.spare = nil
	return c
}

// entries returns the last max entries, oldest first.
func (t *traceLog) entries() []TraceEntry {
	skip := max(0, t.n-t.max)
	out := make([]TraceEntry, 0, t.n-skip)
	for i, c := range t.chunks {
		l := t.chunkLenOf(i)
		if skip >= l {
			skip -= l
			continue
		}
		out = append(out, c.entries[skip:l]...)
		skip = 0
	}
	return out
}

// dropped is the number of entries no longer kept.
func (t *traceLog) dropped() int64 {
	return t.seq - int64(min(t.n, t.max))
}
