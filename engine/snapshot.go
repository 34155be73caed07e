package engine

import (
	"fmt"

	"github.com/cgtviz/cgtviz/engine/alloc"
	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/traces"
)

// Exception safety. PyTorch 2.11 leaves its tree inconsistent when a call
// raises; the engine instead puts everything back as it was before the
// record. Copying the whole state before every record would make the replay
// fast path slow, so a record saves in two tiers:
//
//   - lightState, at the start of every record: the handful of scalars the
//     replay path changes before it can fail. The tensor table's journal
//     (tableJournal) begins there too: it logs the first value of each
//     object the record changes, the replay path's included.
//   - snapshot, taken by markHeavy just before the first mutation of
//     anything else (nodes, the allocator, the device). Only light fields
//     and tensors can have changed before that point, so restoring the
//     snapshot, the tensor table and then the light fields gives back the
//     state at the start of the record. Each allocator opens a mark of its
//     journal (alloc.Allocator.Mark); a device that journals (sim) saves
//     only what the record overwrites (journaler), any other Snapshotter
//     is snapshotted; the managers log the undo of each mutation (onUndo,
//     keepNode: the tree calls markHeavy through shared.snapshot), and so
//     do the defs. Nothing is copied whole: a record
//     costs what it changes, the same in a tree of ten nodes or ten
//     thousand.

type lightState struct {
	genTracker     int
	lastInvocation int64
	hasInvocation  bool
	markStep       int
	counters       Counters
	cfg            traces.Config
	mgrs           []pathScalars
	// marks are the open journal marks of the last heavy record, per
	// device (nil where none): the next record commits them.
	marks []any
}

// journaler is a device that can journal its writes for the rollback of
// one record (sim.Device): cheaper than a Snapshot, whose copy-on-write
// copies each segment's contents at its first write, where a mark saves
// only what the record overwrites. One mark is open at a time.
type journaler interface {
	Mark() any
	Undo(mark any) error
	Commit(mark any)
}

type snapshot struct {
	allocs []alloc.Mark
	// devSnaps are, per device, its journal mark where marked says so
	// (journaler.Mark), else its snapshot, or nil.
	devSnaps []any
	marked   []bool
}

func (e *Engine) saveLight() {
	l := &e.light
	// The allocators' journals of the last record are spent.
	for _, ds := range e.devs {
		ds.alloc.Commit()
	}
	// The tensor table's journal covers the whole record, the replay
	// path too: a call holds its arguments before its first heavy
	// change, and a snapshot taken there gave them back held. It costs
	// what the record changes (begin commits the last record's).
	e.tt.begin()
	for i, m := range l.marks {
		if m != nil && i < len(e.devs) {
			if j, ok := e.devs[i].dev.(journaler); ok {
				j.Commit(m)
			}
		}
	}
	clear(l.marks)
	l.marks = l.marks[:0]
	// One field a statement: a tuple assignment copies its right side
	// aside first (the counters and the config are 128 bytes).
	l.genTracker = e.genTracker
	l.lastInvocation = e.lastInvocation
	l.hasInvocation = e.hasInvocation
	l.markStep = e.markStep
	l.counters = e.counters
	l.cfg = e.cfg
	l.mgrs = l.mgrs[:0]
	for _, ds := range e.devs {
		l.mgrs = append(l.mgrs, ds.m.pathScalars)
	}
	if e.check {
		// The checker may fail a record after it succeeded: save it all.
		e.markHeavy()
	}
}

func (e *Engine) restoreLight() {
	l := &e.light
	e.genTracker, e.lastInvocation, e.hasInvocation = l.genTracker, l.lastInvocation, l.hasInvocation
	e.markStep, e.counters, e.cfg = l.markStep, l.counters, l.cfg
	for i, ds := range e.devs {
		ds.m.pathScalars = l.mgrs[i]
	}
}

// markHeavy saves the full state before a mutation beyond the light fields.
// It is cheap to call again: only the first call of a record saves.
func (e *Engine) markHeavy() {
	if e.saved != nil {
		return
	}
	// The last record's snapshot, emptied by dropSaved, is made again in
	// place: a warmup and a recording each take one, and its four
	// allocations were a tenth of a new node's.
	s := e.spareSaved
	e.spareSaved = nil
	if s == nil {
		s = &snapshot{}
	}
	for _, ds := range e.devs {
		s.allocs = append(s.allocs, ds.alloc.Mark())
		var snap, mark any
		j, marked := ds.dev.(journaler)
		if marked {
			mark = j.Mark()
			snap = mark
		} else if sn, ok := ds.dev.(device.Snapshotter); ok {
			snap = sn.Snapshot()
		}
		s.devSnaps = append(s.devSnaps, snap)
		s.marked = append(s.marked, marked)
		e.light.marks = append(e.light.marks, mark)
	}
	e.saved = s
	e.snapshotted = true
}

// dropSaved ends the record's snapshot: the device snapshots in it that
// hold what the collector cannot weigh (a GPU's copies of the pool) are
// released at once (device.Releaser), used for a rollback or not.
func (e *Engine) dropSaved() {
	s := e.saved
	if s == nil {
		return
	}
	e.saved, e.snapshotted = nil, false
	for i, snap := range s.devSnaps {
		if r, ok := snap.(device.Releaser); ok && !s.marked[i] {
			r.Release()
		}
	}
	// Nothing else holds s: the next markHeavy fills it again.
	clear(s.devSnaps)
	s.allocs, s.devSnaps, s.marked = s.allocs[:0], s.devSnaps[:0], s.marked[:0]
	// A map that grew big (a checkpoint keeps every node of the path)
	// is dropped: clearing it would cost its size at every record after.
	if len(e.kept) > 64 {
		e.kept = nil
	} else {
		clear(e.kept)
	}
	e.spareSaved = s
}

// rollback puts the engine back as it was at the start of the record.
func (e *Engine) rollback() {
	for i := len(e.undo) - 1; i >= 0; i-- {
		e.undo[i]()
	}
	clear(e.undo)
	e.undo = e.undo[:0]
	e.tt.undo()
	if s := e.saved; s != nil {
		for i, ds := range e.devs {
			forgotten := ds.alloc.Undo(s.allocs[i])
			// A device that fails to restore fails every later call with
			// the reason (device.Snapshotter), so the next record that
			// touches it reports it; rollback itself has no one to return
			// it to.
			if s.marked[i] {
				_ = ds.dev.(journaler).Undo(s.devSnaps[i])
				continue
			}
			switch snap := s.devSnaps[i].(type) {
			case nil:
				// A device that keeps what it did gets back the segments
				// the allocator no longer knows.
				for _, p := range forgotten {
					_ = ds.dev.FreeSegment(p) // as above: nothing to report it to
				}
			default:
				_ = ds.dev.(device.Snapshotter).Restore(snap)
			}
		}
		e.dropSaved()
	}
	e.restoreLight()
	// A device that cannot be snapshotted keeps what it did; the copy
	// sources the nodes remember may no longer be the graphs' own: make
	// the next replay of each node set them again.
	for _, ds := range e.devs {
		if _, ok := ds.dev.(device.Snapshotter); ok {
			continue
		}
		for _, n := range ds.m.nodes {
			ds.m.unshare(n)
			for i := range n.CopySrc {
				n.CopySrc[i] = 0
			}
		}
	}
}

// Clone returns an independent engine in the same state, on independent
// copies of its devices. The two share the tree's nodes until either
// changes one (unshare), so an engine and its clones must be used from one
// goroutine at a time, as a session does with its keyframes. It needs devices that implement device.Cloner
// (the simulated device, the GPU device); for any other it returns an
// error, as it does when a device fails to clone.
func (e *Engine) Clone() (*Engine, error) {
	c := *e
	c.spareSaved = nil // the engine's own to fill again
	// The managers' hook takes the clone's snapshot, and no record of the
	// clone is under way.
	c.snapshot = c.markHeavy
	c.snapshotted, c.kept = false, nil
	c.tt = e.tt.clone()
	c.tt.onStorageDeath = c.storageDied
	// The clone makes its own cache as its calls go: a shared one would
	// be written by both.
	c.defCache = defCache{}
	c.defs = make(map[string]*defn, len(e.defs))
	for k, v := range e.defs {
		c.defs[k] = v
	}
	c.devs = make([]*devState, len(e.devs))
	for i, ds := range e.devs {
		dc, ok := ds.dev.(device.Cloner)
		if !ok {
			closeClones(c.devs[:i])
			return nil, fmt.Errorf("engine: device %d (%s) cannot be cloned", i, ds.dev.Name())
		}
		nd, err := dc.CloneDevice()
		if err != nil {
			closeClones(c.devs[:i])
			return nil, fmt.Errorf("engine: clone device %d (%s): %w", i, ds.dev.Name(), err)
		}
		nds := &devState{index: i, dev: nd, alloc: ds.alloc.Clone(nd)}
		nds.m = ds.m.clone()
		nds.m.ds, nds.m.sh = nds, &c.shared
		ds.m.share(nds.m)
		c.devs[i] = nds
	}
	c.events = nil
	c.saved = nil
	c.undo = nil
	c.scratch, c.cur = callScratch{}, call{}
	c.light = lightState{}
	// The chunks belong to the original's steps; a clone (a keyframe of a
	// session's history) must not pin them.
	c.stepChunk, c.eventChunk = nil, nil
	c.transient, c.parked = nil, nil // their buffers are the original's (RunStream, ReuseSteps)
	c.arena = eventArena{}           // so are the arena's chunks, which both would append to
	if e.last != nil {
		l := *e.last
		l.Events = append([]Event(nil), e.last.Events...)
		c.last = &l
	}
	return &c, nil
}

// closeClones closes the devices a failed Clone made before it failed: on
// the GPU a clone holds device memory until it is closed.
func closeClones(devs []*devState) {
	for _, ds := range devs {
		_ = ds.dev.Close() // nothing else holds them; a failure frees what it can
	}
}

// SnapshotBytes is the device memory one more Clone costs: the sum of what
// each device says a snapshot of it costs (device.SnapshotSizer), 0 for
// devices that do not say. A session bounds the bytes of its keyframes
// with it.
func (e *Engine) SnapshotBytes() int64 {
	var n int64
	for _, ds := range e.devs {
		if sz, ok := ds.dev.(device.SnapshotSizer); ok {
			n += sz.SnapshotBytes()
		}
	}
	return n
}

// saveAlloc saves one device's allocator before a record that changes
// nothing else before it can fail (tensor, param, eager). The returned
// function puts the allocator back and frees device segments that the
// failed record made, so the device holds what the allocator knows.
func (e *Engine) saveAlloc(ds *devState) func() {
	// A mark of the allocator's journal (saveLight commits it): a clone
	// cost every block of the pools at every tensor record.
	m := ds.alloc.Mark()
	return func() {
		for _, p := range ds.alloc.Undo(m) {
			ds.dev.FreeSegment(p)
		}
	}
}
