package sim

import (
	"errors"
	"fmt"

	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/traces/ops"
)

// This file runs kernel launches: the checks of every operand, the CPU
// reference kernels, and the ordering of streams (checked in order.go).

// plan checks l (device.LaunchOperands: the launch itself) and every
// operand range it writes and reads against the live segments, and that
// matmul's output overlaps no input, without touching memory.
func (d *Device) plan(l *device.Launch, p *plan) error {
	o, err := device.LaunchOperands(l)
	if err != nil {
		return err
	}
	if p.out, err = d.span("out", l.Out, o.Out); err != nil {
		return err
	}
	if p.a, err = d.span("a", l.A, o.A); err != nil {
		return err
	}
	if p.b, err = d.span("b", l.B, o.B); err != nil {
		return err
	}
	if l.K == ops.Matmul {
		if overlap(l.Out, p.out.n, l.A, p.a.n) {
			return fmt.Errorf("out 0x%x+%s overlaps a 0x%x+%s", l.Out, bytes(p.out.n), l.A, bytes(p.a.n))
		}
		if overlap(l.Out, p.out.n, l.B, p.b.n) {
			return fmt.Errorf("out 0x%x+%s overlaps b 0x%x+%s", l.Out, bytes(p.out.n), l.B, bytes(p.b.n))
		}
	}
	return nil
}

// overlap reports whether two checked element ranges share a byte.
func overlap(p device.Ptr, n int64, q device.Ptr, m int64) bool {
	if n == 0 || m == 0 {
		return false
	}
	return p < q+device.Ptr(m*4) && q < p+device.Ptr(n*4)
}

// run executes a planned launch. A fill and a copy cost what their extents
// do at any size (content.go). Another kernel computes its output when its
// inputs are known and its work is within MaxValueElems (MaxMatmulMACs),
// reading the inputs first, in place where they are plain data: an output
// written in place over an input of the same array sees its own writes as
// the CPU reference expects. Otherwise an elementwise kernel of uniform
// inputs is folded into a fill, and any other output becomes unknown.
func (d *Device) run(l *device.Launch, p *plan) error {
	k := l.K
	switch {
	case l.Opaque:
		d.unknown(p.out)
		return nil
	case l.Geom != nil:
		return d.runStrided(l, p)
	case k == ops.Fill:
		d.fill(p.out, l.Scalar)
		return nil
	case k == ops.Copy:
		d.copySpan(p.out, p.a)
		return nil
	}
	work := p.out.n
	switch k {
	case ops.Sum:
		work = p.a.n
	case ops.Matmul:
		// m*k*n multiply-adds, compared without overflowing.
		work = 0
		if (l.Kd > 0 && p.out.n > MaxMatmulMACs/l.Kd) || p.out.n > MaxValueElems || p.a.n > MaxValueElems || p.b.n > MaxValueElems {
			work = MaxValueElems + 1
		}
	}
	// The inputs are read only when the output has room (in place, or
	// within ValueBytes): reading a rand extent computes it. The output's
	// place in memory is looked up once: reading the inputs does not move
	// it, and only target's new array (after them) would.
	if work <= MaxValueElems {
		var out []float32
		if p.out.seg >= 0 {
			out = d.inPlace(p.out)
		}
		if out != nil || d.roomFor(p.out) {
			a, okA := d.values(p.a, &d.bufA)
			b, okB := d.values(p.b, &d.bufB)
			if okA && okB {
				if out == nil {
					out = d.target(p.out, false)
				}
				if out != nil || p.out.seg < 0 {
					return d.compute(l, out, a, b)
				}
			}
		}
	}
	if k.IsBinary() || k.IsUnary() {
		if v, ok := d.fold(l, p); ok {
			d.fill(p.out, v)
			return nil
		}
	}
	d.unknown(p.out)
	return nil
}

// compute runs the CPU reference kernel of l.
func (d *Device) compute(l *device.Launch, out, a, b []float32) error {
	switch k := l.K; {
	case k.IsBinary(), k.IsUnary():
		return ops.Elementwise(k, out, a, b, l.BKind, l.Scalar)
	case k == ops.Sum:
		return ops.SumCPU(out, a)
	case k == ops.Matmul:
		return ops.MatmulCPU(out, a, b, int(l.M), int(l.Kd), int(l.Cols))
	}
	return fmt.Errorf("unknown kernel %d", uint8(l.K))
}

// fold computes an elementwise kernel whose operands are each one value
// throughout (fills, untouched memory, a scalar): its output is one value
// too, computed by the reference kernel on one element, so it is the same
// float32 the elementwise computation gives.
func (d *Device) fold(l *device.Launch, p *plan) (float32, bool) {
	var a, b, out [1]float32
	var ok bool
	if a[0], ok = d.uniform(p.a); !ok {
		return 0, false
	}
	var bs []float32
	if l.K.IsBinary() && l.BKind != ops.BScalar {
		if b[0], ok = d.uniform(p.b); !ok {
			return 0, false
		}
		bs = b[:]
	}
	if err := ops.Elementwise(l.K, out[:], a[:], bs, l.BKind, l.Scalar); err != nil {
		return 0, false
	}
	return out[0], true
}

// Launch runs l now on the CPU, or records it when s is capturing. Every
// operand range is checked first, so a failing launch changes no memory.
// The launch is recorded by value: the caller may reuse l.
func (d *Device) Launch(s device.Stream, l *device.Launch) error {
	if err := d.alive(); err != nil {
		return err
	}
	if err := d.fault(FaultLaunch); err != nil {
		return err
	}
	if l == nil {
		return errors.New("sim: launch: nil launch")
	}
	if err := checkStream(s); err != nil {
		return fmt.Errorf("sim: launch %s: %w", l.K, err)
	}
	var p plan
	if err := d.plan(l, &p); err != nil {
		return fmt.Errorf("sim: launch %s: %w", l.K, err)
	}
	if c := &d.capture[s]; c.active {
		nd := node{kind: kernelNode, l: *l}
		if l.Geom != nil {
			// The geometry is the caller's: the node keeps its own.
			g := *l.Geom
			nd.l.Geom = &g
		}
		c.nodes = append(c.nodes, nd)
		return nil
	}
	if err := d.touch(s, l.K.String(), &p); err != nil {
		return fmt.Errorf("sim: launch %s: %w", l.K, err)
	}
	if err := d.run(l, &p); err != nil {
		return fmt.Errorf("sim: launch %s: %w", l.K, err)
	}
	return nil
}

// WaitStream orders the work queued on other so far before everything s
// does next. The simulated device runs every launch when it is made, so
// there is nothing to wait for, but the order is checked (order.go).
func (d *Device) WaitStream(s, other device.Stream) error {
	if err := d.alive(); err != nil {
		return err
	}
	if err := checkStream(s); err != nil {
		return fmt.Errorf("sim: wait_stream: %w", err)
	}
	if err := checkStream(other); err != nil {
		return fmt.Errorf("sim: wait_stream: %w", err)
	}
	if s != other {
		d.order.waited(other)
	}
	return nil
}
