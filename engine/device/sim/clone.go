package sim

import (
	"slices"

	"github.com/cgtviz/cgtviz/engine/device"
)

// Clone returns an independent device in the same state: same segments and
// contents, graphs, capture state, pending faults and counters. Contents
// are shared copy-on-write, so Clone costs O(segments); engine clones (the
// keyframes of a session's history) rely on it.
func (d *Device) Clone() *Device {
	s := d.Snapshot().(*snapshot)
	c := &Device{name: d.name, total: d.total, valueBytes: d.valueBytes, last: -1}
	// Every segment's generation is below d.gen now; above it in the clone
	// too, so the clone copies a segment before its first write.
	c.gen = d.gen + 1
	c.segs = slices.Clone(s.segs)
	c.used, c.next, c.dataElems = s.used, s.next, s.dataElems
	c.graphs, c.execs = s.graphs.share(), s.execs.share()
	c.nextGraph, c.nextExec = s.nextGraph, s.nextExec
	c.capture = s.capture
	c.faults = slices.Clone(s.faults)
	c.calls = s.calls
	c.fired = slices.Clone(d.fired)
	c.closed = s.closed
	return c
}

// CloneDevice is Clone behind device.Cloner, for engine.Clone. It cannot
// fail.
func (d *Device) CloneDevice() (device.Device, error) { return d.Clone(), nil }
