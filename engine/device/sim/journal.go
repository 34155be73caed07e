package sim

import (
	"fmt"
	"slices"
)

// This file holds marks: the engine's way to put the device back when a
// record fails, cheaper than Snapshot for that one use. A mark saves the
// segment list as Snapshot does (the contents are extents, content.go,
// which the device never changes once they are shared: a write after the
// mark makes new ones, so a record pays for what it writes, not for what
// the segments hold) and has the graph tables log their writes instead of
// sharing them (table). Everything else (segments, capture state, faults)
// is saved as Snapshot saves it, which is cheap.

// mark is what Mark returns: the device's state but for the graph tables,
// whose logs put them back.
type mark struct {
	snap *snapshot
}

// Mark starts a mark and returns the state to which Undo puts the device
// back. One mark is open at a time: a new Mark commits the last one. It
// costs what Snapshot costs without sharing the graph tables.
func (d *Device) Mark() any {
	d.commit()
	// The last mark's snapshot is made again in place (commit left it in
	// spare): the engine marks before every warmup and recording.
	s := d.spare
	d.spare = nil
	if s == nil {
		s = &snapshot{}
	}
	// Every extent is now shared with the mark: written anew, not in place.
	d.gen++
	d.metaSnapshotInto(s, false)
	m := &mark{snap: s}
	d.txn = m
	d.graphs.begin()
	d.execs.begin()
	return m
}

// Commit ends mark m: the state since is kept. A mark that is no longer
// open (committed, undone, or overtaken by a Restore) is ignored.
func (d *Device) Commit(m any) {
	if mk, ok := m.(*mark); ok && mk == d.txn {
		d.commit()
	}
}

func (d *Device) commit() {
	if m := d.txn; m != nil {
		// Nothing reads a mark's snapshot once it is not the open one
		// (Undo refuses it first): the next Mark fills it again.
		d.spare, m.snap = m.snap, nil
	}
	d.txn = nil
	d.graphs.end()
	d.execs.end()
}

// Undo puts the device back in the state of mark m, which must be the open
// mark: contents, segments, graphs, capture state, pending faults and call
// counters, as Restore does for a snapshot. Given anything else it returns
// the reason and, as Restore, fails every later call until a Restore of a
// valid snapshot.
func (d *Device) Undo(m any) error {
	mk, ok := m.(*mark)
	if !ok || mk == nil {
		d.broken = fmt.Errorf("sim: undo: %T is not a mark of a sim device", m)
		return d.broken
	}
	if mk != d.txn {
		d.broken = fmt.Errorf("sim: undo: the mark is not this device's open one")
		return d.broken
	}
	s := mk.snap
	// The restored extents are older than the device now: shared with
	// the mark's snapshot, which the next Mark reuses, so never written
	// in place.
	d.gen++
	segs := slices.Clone(s.segs)
	// The tables' logs hold every write since the mark (a Snapshot or a
	// Clone meanwhile shared the tables, which moves no entry of them).
	d.graphs.undo()
	d.execs.undo()
	d.restoreMeta(s, false)
	d.segs = segs
	d.commit()
	d.broken = nil
	return nil
}
