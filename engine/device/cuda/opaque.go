//go:build cuda

package cuda

import (
	"fmt"

	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/engine/device/opaque"
)

// This file keeps, beside the GPU's memory, which bytes hold values the
// engine does not model (package opaque), and answers device.ValueKnower
// with it. The GPU computes a number for every byte: the zeros an opaque
// launch writes (a dtype other than float32, a view no launch describes)
// and what kernels compute from them are numbers, but not the program's,
// and the engine must say "not modelled" of them as it does on the
// simulated device, never show them. Every launch and copy, eager or
// captured, says what it wrote from what (opaque.Op); a graph's replay
// runs its capture's ops. While no byte is opaque, as in a program of
// float32 tensors and plain views, this costs a check a call.

var _ device.ValueKnower = (*Device)(nil)

// noteOp records the effect of a launch or a copy that ran or was
// captured on s: into the capture of s while it captures, else on the
// state's set at once.
func (d *Device) noteOp(s device.Stream, op opaque.Op) {
	if g := d.g; g.capturing[s] {
		g.captured[s] = append(g.captured[s], op)
		return
	}
	d.st.unknown.Apply(&op)
}

// noting reports whether a launch or copy on s must be noted: it is
// captured, or it is opaque, or some byte is already not modelled.
func (d *Device) noting(s device.Stream, opq bool) bool {
	return d.g.capturing[s] || opq || !d.st.unknown.Empty()
}

// ValuesKnown reports whether the engine models the n values at p: false
// where an opaque launch wrote them or a kernel or copy computed them from
// such values, until the host or a modelled kernel writes them again.
func (d *Device) ValuesKnown(p device.Ptr, n int64) (bool, error) {
	if err := d.use(); err != nil {
		return false, err
	}
	if err := d.inSegment(p, n); err != nil {
		return false, fmt.Errorf("cuda: values known: %w", err)
	}
	return d.st.unknown.Known(p, n), nil
}

// inSegment checks that the n values at p lie in one segment of the
// device, as a copy from them needs.
func (d *Device) inSegment(p device.Ptr, n int64) error {
	if n < 0 {
		return fmt.Errorf("%d values at %#x", n, uint64(p))
	}
	end := p + device.Ptr(n)*4
	for base, size := range d.st.segs {
		if p >= base && end <= base+device.Ptr(size) && end >= p {
			return nil
		}
	}
	return fmt.Errorf("%#x+%d floats is not in a segment of this device", uint64(p), n)
}
