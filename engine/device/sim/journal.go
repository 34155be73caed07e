package sim

import (
	"fmt"
	"slices"
)

// This file holds the journal: the engine's way to put the device back
// when a record fails, cheaper than Snapshot for that one use. A snapshot
// shares every segment's contents, so the first write to each segment
// after it copies the whole part of the segment touched so far (tens or
// hundreds of kilobytes in a big pool), and the engine snapshots before
// every warmup and recording. A mark instead keeps the segments owned by
// the device and saves, in the journal, the old contents of each span as
// it is written: a record pays for what it writes, not for what the
// segments hold. Everything else (segments, graphs, capture state, faults)
// but the graph tables, which log their writes as the segments do (table),
// is saved as Snapshot saves it, which is cheap.

// mark is what Mark returns: the device's state but for the contents of
// the segments, which the journal puts back.
type mark struct {
	snap *snapshot
	// gen is Device.gen at Mark: when it changed since (a Snapshot, a
	// Clone or a Restore meanwhile), the arrays written before that may be
	// shared with the snapshot, and Undo writes into copies of them.
	gen uint64
}

// undoEntry is the old contents of one written span: data is the array
// the write went to, old the journal's range holding what it held.
type undoEntry struct {
	data     []float32
	off      int64
	from, to int
}

// maxJournalKeep bounds the journal buffer a device keeps between marks
// (elements): a record that wrote a big tensor should not pin its copy.
const maxJournalKeep = 1 << 20

// Mark starts journaling the device's writes and returns the state to
// which Undo puts it back. One mark is open at a time: a new Mark commits
// the last one. It costs what Snapshot costs without the copy-on-write of
// contents.
func (d *Device) Mark() any {
	d.commit()
	// The last mark's snapshot is made again in place (commit left it in
	// spare): the engine marks before every warmup and recording.
	s := d.spare
	d.spare = nil
	if s == nil {
		s = &snapshot{}
	}
	d.metaSnapshotInto(s, false)
	m := &mark{snap: s, gen: d.gen}
	d.txn = m
	d.graphs.begin()
	d.execs.begin()
	return m
}

// Commit ends the journaling of mark m: the state since is kept. A mark
// that is no longer open (committed, undone, or overtaken by a Restore)
// is ignored.
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
	clear(d.journal)
	d.journal = d.journal[:0]
	if cap(d.jbuf) > maxJournalKeep {
		d.jbuf = nil
	}
	d.jbuf = d.jbuf[:0]
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
	segs := slices.Clone(s.segs)
	if d.gen == mk.gen {
		// Every array written in place was the device's own since the
		// mark: put the old contents back in place, newest first.
		for i := len(d.journal) - 1; i >= 0; i-- {
			e := &d.journal[i]
			copy(e.data[e.off:], d.jbuf[e.from:e.to])
		}
	} else {
		// A snapshot may share what was written before it: undo into
		// copies, and give the restored segments the copies.
		copies := map[*float32][]float32{}
		for i := len(d.journal) - 1; i >= 0; i-- {
			e := &d.journal[i]
			k := &e.data[0]
			cp, ok := copies[k]
			if !ok {
				cp = slices.Clone(e.data)
				copies[k] = cp
			}
			copy(cp[e.off:], d.jbuf[e.from:e.to])
		}
		for i := range segs {
			if len(segs[i].data) == 0 {
				continue
			}
			if cp, ok := copies[&segs[i].data[0]]; ok {
				segs[i].data = cp[:len(segs[i].data):len(segs[i].data)]
			}
		}
		// The restored segments are older than the device now: shared,
		// copied before their next write.
		d.gen++
	}
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

// journalWrite saves the contents of span sp of segment s before a write,
// while a mark is open.
func (d *Device) journalWrite(s *segment, sp span) {
	from := len(d.jbuf)
	d.jbuf = append(d.jbuf, s.data[sp.off:sp.off+sp.n]...)
	d.journal = append(d.journal, undoEntry{data: s.data, off: sp.off, from: from, to: len(d.jbuf)})
}
