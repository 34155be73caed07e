package engine

import (
	"fmt"
	"slices"
	"weak"

	"github.com/cgtviz/cgtviz/engine/alloc"
	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/engine/dynamo"
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
//     keepNode), and so do the defs. Nothing is copied whole: a record
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
	// kept are the nodes whose copy Engine.undo holds already.
	kept map[*Node]bool
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
	l.genTracker, l.lastInvocation, l.hasInvocation = e.genTracker, e.lastInvocation, e.hasInvocation
	l.markStep, l.counters, l.cfg = e.markStep, e.counters, e.cfg
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
}

// dropSaved ends the record's snapshot: the device snapshots in it that
// hold what the collector cannot weigh (a GPU's copies of the pool) are
// released at once (device.Releaser), used for a rollback or not.
func (e *Engine) dropSaved() {
	s := e.saved
	if s == nil {
		return
	}
	e.saved = nil
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
	if len(s.kept) > 64 {
		s.kept = nil
	} else {
		clear(s.kept)
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

// onUndo logs how to put back a change the record makes to a manager.
func (e *Engine) onUndo(f func()) { e.undo = append(e.undo, f) }

// setAt sets (*s)[i] = v under the record's undo, growing *s to hold i
// (the tables kept by dense id: roots, hints, dispatch entries). Undone,
// the slot has its old value again, or *s is the slice it was, with what
// it grew by cleared so that a later growth over the same array finds
// zeros.
func setAt[T any](e *Engine, s *[]T, i int, v T) {
	prev := *s
	if i >= len(prev) {
		*s = slices.Grow(prev, i+1-len(prev))[:i+1]
	}
	old := (*s)[i]
	e.onUndo(func() {
		if i >= len(prev) {
			clear((*s)[len(prev):])
			*s = prev
			return
		}
		(*s)[i] = old
	})
	(*s)[i] = v
}

// setKey sets m[k] = v under the record's undo: undone, k has its old
// value again, or is absent again.
func setKey[K comparable, V any](e *Engine, m map[K]V, k K, v V) {
	old, had := m[k]
	e.onUndo(func() {
		if had {
			m[k] = old
		} else {
			delete(m, k)
		}
	})
	m[k] = v
}

// keepNode saves n as it is, once per record, before the record changes
// it. Without a snapshot (the replay fast path) it saves nothing: what
// execute_node changes there comes after the last point where the record
// can fail.
func (m *manager) keepNode(n *Node) {
	m.unshare(n)
	s := m.eng.saved
	if s == nil || s.kept[n] {
		return
	}
	if s.kept == nil {
		s.kept = map[*Node]bool{}
	}
	s.kept[n] = true
	old := n.clone()
	m.eng.onUndo(func() {
		owners := n.owners // who shares n now, not then
		*n = *old
		n.owners = owners
	})
}

// unshare gives every other manager that shares n (clones: a session's
// keyframes) a copy of n as it is now, before m changes it: a Clone shares
// the nodes rather than copying them (nodes are most of a big tree), and
// every change to a node is preceded by keepNode. A node that only m holds
// costs one length check.
func (m *manager) unshare(n *Node) {
	if len(n.owners) < 2 {
		return
	}
	me := weak.Make(m)
	var cp *Node
	for _, w := range n.owners {
		if w == me {
			continue
		}
		o := w.Value()
		if o == nil || n.ID >= len(o.nodes) || o.nodes[n.ID] != n {
			continue
		}
		if cp == nil {
			cp = n.clone()
			cp.owners = nil
		}
		o.nodes[n.ID] = cp
		cp.owners = append(cp.owners, w)
	}
	n.owners = append(n.owners[:0], me)
}

// share registers c, a clone of m, as an owner of m's nodes, which it
// shares, and drops owners that the collector has buried.
func (m *manager) share(c *manager) {
	me, cw := weak.Make(m), weak.Make(c)
	for _, n := range m.nodes {
		if len(n.owners) == 0 {
			n.owners = append(n.owners, me)
		} else if len(n.owners) >= 8 {
			live := n.owners[:0]
			for _, w := range n.owners {
				if w.Value() != nil {
					live = append(live, w)
				}
			}
			clear(n.owners[len(live):])
			n.owners = live
		}
		n.owners = append(n.owners, cw)
	}
}

// clone deep-copies a manager. Nodes are copied (their mutable parts);
// functions are shared except for their warmup counts.
func (m *manager) clone() *manager {
	c := *m
	// The nodes are shared, copied by the first of the two managers to
	// change one (unshare); Clone registers the copy (share).
	c.nodes = slices.Clone(m.nodes)
	// The copy's roots are one allocation, each function's slice a part
	// of it (its capacity its length); the slab is the original's.
	c.roots = make([][]int, len(m.roots))
	total := 0
	for _, v := range m.roots {
		total += len(v)
	}
	all := make([]int, 0, total)
	for k, v := range m.roots {
		if v != nil {
			off := len(all)
			all = append(all, v...)
			c.roots[k] = all[off:len(all):len(all)]
		}
	}
	c.rootSlab = nil
	c.rootOrder = append([]int(nil), m.rootOrder...)
	c.warmups = make(map[int]*WarmupNode, len(m.warmups))
	for k, w := range m.warmups {
		nw := *w
		nw.OutWeak = append([]int(nil), w.OutWeak...)
		c.warmups[k] = &nw
	}
	// The function tables and the Functions are shared (shareFuncs).
	m.shareFuncs(&c)
	// The dispatch entries name the FunctionIDs, which the clone shares,
	// and nothing of the Dynamo caches, which it copies: they hold for it.
	c.dispatch = slices.Clone(m.dispatch)
	c.compiles = make(map[string]*dynamo.Cache, len(m.compiles))
	for k, v := range m.compiles {
		c.compiles[k] = v.Clone()
	}
	c.warnedFns = copySet(m.warnedFns)
	c.warnedMutation = copySet(m.warnedMutation)
	c.warmupHints = make(map[int]map[int]bool, len(m.warmupHints))
	for k, v := range m.warmupHints {
		c.warmupHints[k] = copySet(v)
	}
	c.rootHints = slices.Clone(m.rootHints)
	c.nodeHints = make([]map[int]bool, len(m.nodeHints))
	for k, v := range m.nodeHints {
		if v != nil {
			c.nodeHints[k] = copySet(v)
		}
	}
	c.numRerecord = make(map[int]map[int]int, len(m.numRerecord))
	for k, v := range m.numRerecord {
		nv := make(map[int]int, len(v))
		for a, b := range v {
			nv[a] = b
		}
		c.numRerecord[k] = nv
	}
	return &c
}

func copySet(s map[int]bool) map[int]bool {
	c := make(map[int]bool, len(s))
	for k, v := range s {
		c[k] = v
	}
	return c
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
		nds.m.ds, nds.m.eng = nds, &c
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
	c.transient = nil      // its buffers are the original's (RunStream)
	c.arena = eventArena{} // so are the arena's chunks, which both would append to
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
