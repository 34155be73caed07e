package device

import (
	"fmt"

	"github.com/cgtviz/cgtviz/traces/ops"
)

// Operands are the elements a launch writes (Out) and reads (A, B), each
// counted from its operand's pointer: for a strided launch (Geom), the
// extent its strides reach from its first element; 0 for an operand the
// kernel does not read. OutWhole says whether the output's elements fill
// its extent: a strided write may skip some (a column of a matrix), which
// keep what they held.
type Operands struct {
	Out, A, B int64
	OutWhole  bool
}

// LaunchOperands returns what l writes and reads, or why no device would
// launch it: an unknown kernel or form of b, a negative matmul size, sizes
// whose product overflows, a geometry that is malformed, does not hold n
// elements or writes one element twice. A device then checks the ranges
// against its memory (the simulated device) or notes what they hold (the
// GPU's opaque values). Element counts that are negative are the
// devices' to refuse.
func LaunchOperands(l *Launch) (Operands, error) {
	if l.Geom != nil {
		return stridedOperands(l, l.Geom)
	}
	k := l.K
	switch {
	case k.IsBinary(), k.IsUnary(), k == ops.Copy:
		o := Operands{Out: l.N, A: l.N, OutWhole: true}
		if !k.IsBinary() {
			return o, nil
		}
		var err error
		o.B, err = bElems(l, l.N)
		return o, err
	case k == ops.Fill:
		return Operands{Out: l.N, OutWhole: true}, nil
	case k == ops.Sum:
		return Operands{Out: 1, A: l.N, OutWhole: true}, nil
	case k == ops.Matmul:
		m, kd, n := l.M, l.Kd, l.Cols
		if m < 0 || kd < 0 || n < 0 {
			return Operands{}, fmt.Errorf("negative size m=%d k=%d n=%d", m, kd, n)
		}
		mn, ok1 := mul(m, n)
		mk, ok2 := mul(m, kd)
		kn, ok3 := mul(kd, n)
		if !ok1 || !ok2 || !ok3 {
			return Operands{}, fmt.Errorf("sizes m=%d k=%d n=%d overflow", m, kd, n)
		}
		return Operands{Out: mn, A: mk, B: kn, OutWhole: true}, nil
	}
	return Operands{}, fmt.Errorf("unknown kernel %d", uint8(k))
}

// stridedOperands is LaunchOperands of a launch over strided operands, as
// ops.Geometry defines each kernel's.
func stridedOperands(l *Launch, g *ops.Geometry) (Operands, error) {
	if err := g.Check(); err != nil {
		return Operands{}, err
	}
	var o Operands
	var err error
	ext := func(role string, p Ptr, n int64, ok bool) int64 {
		if !ok && err == nil {
			err = fmt.Errorf("%s 0x%x: the extent of its strides overflows", role, p)
		}
		return n
	}
	k := l.K
	switch {
	case k.IsBinary(), k.IsUnary(), k == ops.Copy, k == ops.Fill:
		if l.N != g.Elems() {
			return o, fmt.Errorf("n is %d, the geometry holds %d elements", l.N, g.Elems())
		}
		if !g.Distinct(&g.Out) {
			return o, fmt.Errorf("out's strides write one element twice")
		}
		n, ok := g.Extent(&g.Out)
		o.Out, o.OutWhole = ext("out", l.Out, n, ok), n == l.N
		if k == ops.Fill {
			return o, err
		}
		n, ok = g.Extent(&g.A)
		o.A = ext("a", l.A, n, ok)
		if k.IsBinary() && err == nil {
			n, ok = g.Extent(&g.B)
			if l.BKind == ops.BTensor {
				n = ext("b", l.B, n, ok)
			}
			o.B, err = bElems(l, n)
		}
	case k == ops.Sum:
		if l.N != g.Elems() {
			return o, fmt.Errorf("n is %d, the geometry holds %d elements", l.N, g.Elems())
		}
		n, ok := g.Extent(&g.A)
		o = Operands{Out: 1, A: ext("a", l.A, n, ok), OutWhole: true}
	case k == ops.Matmul:
		m, kd, c := l.M, l.Kd, l.Cols
		if m < 0 || kd < 0 || c < 0 {
			return o, fmt.Errorf("negative size m=%d k=%d n=%d", m, kd, c)
		}
		if !ops.MatmulDistinct(&g.Out, m, c) {
			return o, fmt.Errorf("out's strides write one element twice")
		}
		n, ok := ops.MatmulExtent(&g.Out, m, c)
		o.Out, o.OutWhole = ext("out", l.Out, n, ok), n == m*c
		n, ok = ops.MatmulExtent(&g.A, m, kd)
		o.A = ext("a", l.A, n, ok)
		n, ok = ops.MatmulExtent(&g.B, kd, c)
		o.B = ext("b", l.B, n, ok)
	default:
		return o, fmt.Errorf("unknown kernel %d", uint8(k))
	}
	if err != nil {
		return Operands{}, err
	}
	return o, nil
}

// bElems is the elements a binary kernel reads of b: n of a tensor, one of
// a broadcast b, none of a scalar.
func bElems(l *Launch, n int64) (int64, error) {
	switch l.BKind {
	case ops.BTensor:
		return n, nil
	case ops.BBroadcast:
		return 1, nil
	case ops.BScalar:
		return 0, nil
	}
	return 0, fmt.Errorf("unknown form of b (%d)", l.BKind)
}

// mul is x*y and whether it did not overflow (sizes are never negative
// here).
func mul(x, y int64) (int64, bool) {
	if x == 0 || y == 0 {
		return 0, true
	}
	p := x * y
	return p, p/y == x && p > 0
}
