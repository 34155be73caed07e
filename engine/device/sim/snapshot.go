package sim

import (
	"fmt"
	"slices"

	"github.com/cgtviz/cgtviz/engine/device"
)

// snapshot is the whole state of a Device at one moment. It is never
// changed after Snapshot returns: the device copies a segment's data before
// its first write after a snapshot, clones the handle maps before changing
// them, and keeps capture node lists at capacity so appends reallocate.
type snapshot struct {
	dev       *Device
	segs      []segment
	used      int64
	dataElems int64
	next      device.Ptr
	graphs    table[graph]
	execs     table[exec]
	nextGraph device.GraphHandle
	nextExec  device.ExecHandle
	capture   [numStreams]capture
	faults    []pending
	calls     [numFaultOps]int
	closed    bool
}

// Snapshot returns the device's whole state: segments and contents, the
// bump pointer, graphs, executable graphs, capture state, pending faults and
// call counters. It costs O(segments + pending faults): contents are shared
// with the device, which copies a segment before writing it next
// (copy-on-write), and so are the graph maps. The result is immutable and
// may be read from other goroutines while the device runs on.
func (d *Device) Snapshot() any {
	// Every segment now has gen < d.gen: shared, copied before a write.
	d.gen++
	return d.metaSnapshot(true)
}

// metaSnapshot saves the state as Snapshot does, without making the
// segments' contents shared: Snapshot bumps the generation first, Mark
// journals the writes instead. tables says whether it saves the graph
// tables too (a Snapshot does; a Mark has them log their writes instead).
func (d *Device) metaSnapshot(tables bool) *snapshot {
	s := &snapshot{}
	d.metaSnapshotInto(s, tables)
	return s
}

// metaSnapshotInto is metaSnapshot into s, whose segment list it reuses:
// s is a mark's, held by nothing else (Mark). The faults are copied anew,
// as restoreMeta hands them to the device.
func (d *Device) metaSnapshotInto(s *snapshot, tables bool) {
	*s = snapshot{
		dev:       d,
		segs:      append(s.segs[:0], d.segs...),
		used:      d.used,
		dataElems: d.dataElems,
		next:      d.next,
		nextGraph: d.nextGraph,
		nextExec:  d.nextExec,
		faults:    slices.Clone(d.faults),
		calls:     d.calls,
		closed:    d.closed,
	}
	for i, c := range d.capture {
		s.capture[i] = capture{active: c.active, nodes: slices.Clip(c.nodes)}
	}
	if tables {
		s.graphs, s.execs = d.graphs.share(), d.execs.share()
	}
}

// Restore puts the device back in the state of a snapshot it took, pending
// faults and call counters included; a fault that fired since stays fired
// and does not fire again (see fault). snap must be a value that this
// device's Snapshot returned; given anything else Restore leaves the state
// alone, returns the reason, and makes every later call fail with it until
// the Restore of a valid snapshot.
func (d *Device) Restore(snap any) error {
	s, ok := snap.(*snapshot)
	if !ok || s == nil {
		d.broken = fmt.Errorf("sim: restore: %T is not a snapshot of a sim device", snap)
		return d.broken
	}
	if s.dev != d {
		d.broken = fmt.Errorf("sim: restore: the snapshot is of another device (%s)", s.dev.name)
		return d.broken
	}
	// The restored segments keep their generations, all below the new
	// d.gen: their data is shared with the snapshot until written. An open
	// mark is overtaken: its journal no longer describes the state.
	d.commit()
	d.gen++
	d.segs = slices.Clone(s.segs)
	d.restoreMeta(s, true)
	d.broken = nil
	return nil
}

// restoreMeta puts back what a snapshot holds but the segments, and the
// graph tables when tables is true (a mark's undo has put them back),
// and orders both streams' work before all later work.
func (d *Device) restoreMeta(s *snapshot, tables bool) {
	// (The CUDA device's restore copies between fences of both streams.)
	d.order.fence()
	d.last = -1
	d.used = s.used
	d.dataElems = s.dataElems
	d.next = s.next
	if tables {
		d.graphs, d.execs = s.graphs.share(), s.execs.share()
	}
	d.nextGraph, d.nextExec = s.nextGraph, s.nextExec
	d.capture = s.capture
	d.faults = slices.Clone(s.faults)
	d.calls = s.calls
	d.closed = s.closed
}

// SnapshotBytes is the most memory one more snapshot or clone can cost:
// the segments' extents and the data they hold (content.go), which the
// device copies at most once each, when it writes them after the
// snapshot. Untouched segments, fills and rand inits of any size cost next
// to nothing: a snapshot costs what the extents hold, not the device's
// bytes.
func (d *Device) SnapshotBytes() int64 {
	var n int64
	for i := range d.segs {
		n += d.segs[i].contentBytes()
	}
	return n
}
