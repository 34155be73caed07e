package sim

import (
	"fmt"
	"strconv"

	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/traces/ops"
)

// This file runs launches over strided operands (Launch.Geom): each
// operand's span is the extent its strides reach from its first element,
// and the values are the reference's (ops.ElementwiseStrided, SumStrided,
// MatmulStrided). Contiguous launches never come here.

// planStrided checks a strided launch's geometry and operand extents, as
// plan does for a contiguous one.
func (d *Device) planStrided(l *device.Launch, p *plan) error {
	g := l.Geom
	if err := g.Check(); err != nil {
		return err
	}
	ext := func(role string, ptr device.Ptr, n int64, ok bool) (span, error) {
		if !ok {
			return noSpan, fmt.Errorf("%s 0x%x: the extent of its strides overflows", role, ptr)
		}
		return d.span(role, ptr, n)
	}
	var err error
	p.a, p.b = noSpan, noSpan
	k := l.K
	switch {
	case k.IsBinary(), k.IsUnary(), k == ops.Copy, k == ops.Fill:
		if l.N != g.Elems() {
			return fmt.Errorf("n is %d, the geometry holds %d elements", l.N, g.Elems())
		}
		if !g.Distinct(&g.Out) {
			return fmt.Errorf("out's strides write one element twice")
		}
		n, ok := g.Extent(&g.Out)
		if p.out, err = ext("out", l.Out, n, ok); err != nil || k == ops.Fill {
			return err
		}
		n, ok = g.Extent(&g.A)
		if p.a, err = ext("a", l.A, n, ok); err != nil || !k.IsBinary() {
			return err
		}
		switch l.BKind {
		case ops.BTensor:
			n, ok = g.Extent(&g.B)
			p.b, err = ext("b", l.B, n, ok)
		case ops.BBroadcast:
			p.b, err = d.span("b", l.B, 1)
		case ops.BScalar:
		default:
			err = fmt.Errorf("unknown form of b (%d)", l.BKind)
		}
		return err
	case k == ops.Sum:
		if l.N != g.Elems() {
			return fmt.Errorf("n is %d, the geometry holds %d elements", l.N, g.Elems())
		}
		if p.out, err = d.span("out", l.Out, 1); err != nil {
			return err
		}
		n, ok := g.Extent(&g.A)
		p.a, err = ext("a", l.A, n, ok)
		return err
	case k == ops.Matmul:
		m, kd, c := l.M, l.Kd, l.Cols
		if m < 0 || kd < 0 || c < 0 {
			return fmt.Errorf("negative size m=%d k=%d n=%d", m, kd, c)
		}
		if !ops.MatmulDistinct(&g.Out, m, c) {
			return fmt.Errorf("out's strides write one element twice")
		}
		n, ok := ops.MatmulExtent(&g.Out, m, c)
		if p.out, err = ext("out", l.Out, n, ok); err != nil {
			return err
		}
		n, ok = ops.MatmulExtent(&g.A, m, kd)
		if p.a, err = ext("a", l.A, n, ok); err != nil {
			return err
		}
		n, ok = ops.MatmulExtent(&g.B, kd, c)
		if p.b, err = ext("b", l.B, n, ok); err != nil {
			return err
		}
		if overlap(l.Out, p.out.n, l.A, p.a.n) {
			return fmt.Errorf("out 0x%x+%s overlaps a 0x%x+%s", l.Out, bytes(p.out.n), l.A, bytes(p.a.n))
		}
		if overlap(l.Out, p.out.n, l.B, p.b.n) {
			return fmt.Errorf("out 0x%x+%s overlaps b 0x%x+%s", l.Out, bytes(p.out.n), l.B, bytes(p.b.n))
		}
		return nil
	}
	return fmt.Errorf("unknown kernel %d", uint8(k))
}

// runStrided executes a planned strided launch. Its output's values are
// computed when its inputs are known and within the value limits; when
// out's strides leave elements of its extent unwritten (a column of a
// matrix), those keep their values, so they must be known too. A fill
// whose elements cover their extent stays a fill at any size, and so does
// an elementwise kernel of operands that are each one value (fold).
// Otherwise the output's extent becomes unknown.
func (d *Device) runStrided(l *device.Launch, p *plan) error {
	g := l.Geom
	elems, dense := g.Elems(), false
	if l.K == ops.Matmul {
		elems = l.M * l.Cols
		dense = elems == p.out.n
		// The multiply-adds, bounded as run bounds them.
		if l.Kd > 0 && elems > MaxMatmulMACs/l.Kd {
			elems = MaxValueElems + 1
		}
	} else if l.K != ops.Sum {
		dense = elems == p.out.n // distinct elements filling their extent
	}
	if l.K == ops.Fill && dense {
		d.fill(p.out, l.Scalar)
		return nil
	}
	work := max(elems, p.a.n, p.b.n, p.out.n)
	if work <= MaxValueElems && d.roomFor(p.out) {
		a, okA := d.values(p.a, &d.bufA)
		b, okB := d.values(p.b, &d.bufB)
		var cur []float32
		okO := true
		if !dense && l.K != ops.Sum {
			cur, okO = d.values(p.out, &d.bufO)
		}
		if okA && okB && okO {
			if out := d.target(p.out, false); out != nil || p.out.seg < 0 {
				copy(out, cur) // the elements the kernel leaves
				switch k := l.K; {
				case k == ops.Sum:
					return ops.SumStrided(out, a, g)
				case k == ops.Matmul:
					return ops.MatmulStrided(out, a, b, l.M, l.Kd, l.Cols, g)
				default:
					return ops.ElementwiseStrided(k, out, a, b, l.BKind, l.Scalar, g)
				}
			}
		}
	}
	if dense && (l.K.IsBinary() || l.K.IsUnary()) {
		// Operands each one value throughout their extents: so is the
		// output, which covers its own (as run folds a contiguous one).
		if v, ok := d.fold(l, p); ok {
			d.fill(p.out, v)
			return nil
		}
	}
	d.unknown(p.out)
	return nil
}

// appendGeom appends a strided launch's geometry to a node's detail:
// "shape=[2] strides=[1]/[3]/[0]" (out's, a's, b's strides), over the
// dims it uses.
func appendGeom(b []byte, g *ops.Geometry) []byte {
	r := g.Dims()
	list := func(name string, x *[ops.MaxRank]int64) {
		b = append(b, name...)
		b = append(b, '[')
		for i, v := range x[ops.MaxRank-r:] {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, v, 10)
		}
		b = append(b, ']')
	}
	list(" shape=", &g.Shape)
	list(" strides=", &g.Out)
	list("/", &g.A)
	list("/", &g.B)
	return b
}
