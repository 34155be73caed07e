package sim

import (
	"fmt"

	"github.com/cgtviz/cgtviz/engine/device"
)

// This file sets tensors' initial values on the device (device.Initializer)
// and says which values are known (device.ValueKnower). An init is one
// extent whatever its size: the values of a rand init are computed when a
// kernel or a host copy reads them (traces.Rand is counter-based).

// InitFill sets the n values at dst to v. It is a host copy for the
// faults and the stream order, as the CopyHtoD it replaces.
func (d *Device) InitFill(dst device.Ptr, n int64, v float32) error {
	return d.init("fill", dst, n, extent{kind: kindFill, v: v})
}

// InitRand sets value i of the n at dst to traces.Rand(seed, i).
func (d *Device) InitRand(dst device.Ptr, n int64, seed int64) error {
	return d.init("rand", dst, n, extent{kind: kindRand, seed: seed})
}

// InitArange sets value i of the n at dst to float32(i).
func (d *Device) InitArange(dst device.Ptr, n int64) error {
	return d.init("arange", dst, n, extent{kind: kindArange})
}

func (d *Device) init(what string, dst device.Ptr, n int64, x extent) error {
	if err := d.alive(); err != nil {
		return err
	}
	if err := d.fault(FaultCopy); err != nil {
		return err
	}
	sp, err := d.span("dst", dst, n)
	if err != nil {
		return fmt.Errorf("sim: init %s: %w", what, err)
	}
	d.order.fence() // as CopyHtoD
	if x.kind == kindFill {
		d.fill(sp, x.v)
		return nil
	}
	// A small init is computed now, once, as the host did: the kernels of
	// every replay that read it then read data in place rather than
	// computing traces.Rand again.
	if sp.n <= InitValueElems {
		if out := d.target(sp, false); out != nil {
			x.off, x.end = sp.off, sp.off+sp.n
			d.materialise(&segment{ext: []extent{x}}, sp.off, out)
			return nil
		}
	}
	d.set(sp, x)
	return nil
}

// ValuesKnown reports whether the n values at p were computed (content.go).
func (d *Device) ValuesKnown(p device.Ptr, n int64) (bool, error) {
	if err := d.alive(); err != nil {
		return false, err
	}
	sp, err := d.span("src", p, n)
	if err != nil {
		return false, fmt.Errorf("sim: values known: %w", err)
	}
	return d.known(sp), nil
}
