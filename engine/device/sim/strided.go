package sim

import (
	"strconv"

	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/traces/ops"
)

// This file runs launches over strided operands (Launch.Geom): each
// operand's span is the extent its strides reach from its first element,
// and the values are the reference's (ops.ElementwiseStrided, SumStrided,
// MatmulStrided). Contiguous launches never come here.

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
