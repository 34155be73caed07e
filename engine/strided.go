package engine

import (
	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/traces/ops"
)

// This file describes a statement's strided operands (views) to the
// device: a kernel over a view reads and writes the view's elements where
// its strides place them (ops.Geometry), in one launch, as PyTorch's
// TensorIterator does. Contiguous operands never come here.

// maxOverlapElems bounds the elements stridedGeom enumerates to decide
// whether an in-place output shares elements with an input it is not.
const maxOverlapElems = 1 << 16

// stridedGeom fills l.Geom (with g) for a launch whose operand a, b or
// in-place out is a view with strides: it sets l's N, M, Kd, Cols as the
// contiguous launch does, and leaves l.Geom nil when the strides merge to
// contiguous ones. It reports false when the launch cannot be described
// (more dims than ops.MaxRank after merging, an output that writes one
// element twice, or one that shares elements with an input it is not):
// the caller then launches it as not modelled.
func stridedGeom(l *device.Launch, g *ops.Geometry, k ops.Kernel, bk ops.BKind, shape []int, at, bt, ot *Tensor) bool {
	strides := func(t *Tensor) []int64 {
		if t == nil {
			return nil
		}
		if t.Strides == nil {
			return ops.ContiguousStrides(t.Shape)
		}
		return t.Strides
	}
	contiguous := func(t *Tensor) []int64 {
		if t != nil {
			return strides(t)
		}
		return ops.ContiguousStrides(shape) // a new output
	}
	var ok bool
	switch {
	case k == ops.Matmul:
		*g = ops.Geometry{}
		for i := range g.Shape {
			g.Shape[i] = 1
		}
		const r = ops.MaxRank - 2
		copy(g.A[r:], strides(at))
		copy(g.B[r:], strides(bt))
		copy(g.Out[r:], contiguous(ot))
		l.M, l.Kd, l.Cols = int64(at.Shape[0]), int64(at.Shape[1]), int64(bt.Shape[1])
		if !ops.MatmulDistinct(&g.Out, l.M, l.Cols) {
			return false
		}
		// The device refuses an output that overlaps an input.
		no, ok1 := ops.MatmulExtent(&g.Out, l.M, l.Cols)
		na, ok2 := ops.MatmulExtent(&g.A, l.M, l.Kd)
		nb, ok3 := ops.MatmulExtent(&g.B, l.Kd, l.Cols)
		if !ok1 || !ok2 || !ok3 || spansMeet(l.Out, no, l.A, na) || spansMeet(l.Out, no, l.B, nb) {
			return false
		}
		l.Geom = g
		return true
	case k == ops.Sum:
		*g, ok = ops.NewGeometry(at.Shape, nil, strides(at), nil)
		l.N = numElems(at.Shape)
		if ok && !g.Contiguous(&g.A) {
			l.Geom = g
		}
		return ok
	}
	l.N = numElems(shape)
	var sa, sb []int64
	if k != ops.Fill {
		sa = strides(at)
	}
	if k.IsBinary() && bk == ops.BTensor {
		sb = strides(bt)
	}
	*g, ok = ops.NewGeometry(shape, contiguous(ot), sa, sb)
	if !ok || !g.Distinct(&g.Out) {
		return false
	}
	if g.Contiguous(&g.Out) && (sa == nil || g.Contiguous(&g.A)) && (sb == nil || g.Contiguous(&g.B)) {
		return true
	}
	if ot != nil {
		// Written in place: an input must be out's very elements or none
		// of them, or the GPU's threads race where a loop would not.
		if sa != nil && sharesElements(l.Out, g, &g.Out, l.A, &g.A) {
			return false
		}
		if sb != nil && sharesElements(l.Out, g, &g.Out, l.B, &g.B) {
			return false
		}
		if k.IsBinary() && bk == ops.BBroadcast {
			var one ops.Geometry // b's one element
			for i := range one.Shape {
				one.Shape[i] = 1
			}
			if touches(l.Out, g, &g.Out, l.B, &one, &one.A) {
				return false
			}
		}
	}
	l.Geom = g
	return true
}

// sharesElements reports whether out's and x's elements meet other than
// one for one (the same first element and strides: in place).
func sharesElements(out device.Ptr, g *ops.Geometry, so *[ops.MaxRank]int64, x device.Ptr, sx *[ops.MaxRank]int64) bool {
	if out == x && *so == *sx {
		return false
	}
	return touches(out, g, so, x, g, sx)
}

// touches reports whether out's elements (strides so over g) and x's
// (strides sx over gx) share an address: never when their extents are
// apart, else by listing them, up to maxOverlapElems (beyond, it answers
// yes: the launch is then not modelled rather than wrong).
func touches(out device.Ptr, g *ops.Geometry, so *[ops.MaxRank]int64, x device.Ptr, gx *ops.Geometry, sx *[ops.MaxRank]int64) bool {
	no, ok1 := g.Extent(so)
	nx, ok2 := gx.Extent(sx)
	if !ok1 || !ok2 {
		return true
	}
	if !spansMeet(out, no, x, nx) {
		return false
	}
	if g.Elems() > maxOverlapElems || gx.Elems() > maxOverlapElems {
		return true
	}
	seen := make(map[device.Ptr]bool, g.Elems())
	offsets(g, so, func(o int64) { seen[out+device.Ptr(o*4)] = true })
	hit := false
	offsets(gx, sx, func(o int64) { hit = hit || seen[x+device.Ptr(o*4)] })
	return hit
}

// offsets calls f with the element offset of every index tuple of g under
// strides st.
func offsets(g *ops.Geometry, st *[ops.MaxRank]int64, f func(int64)) {
	var idx [ops.MaxRank]int64
	n := g.Elems()
	var o int64
	for i := int64(0); i < n; i++ {
		f(o)
		for d := ops.MaxRank - 1; d >= 0; d-- {
			idx[d]++
			o += st[d]
			if idx[d] < g.Shape[d] {
				break
			}
			o -= st[d] * idx[d]
			idx[d] = 0
		}
	}
}

// spansMeet reports whether n elements at p and m at q share a byte.
func spansMeet(p device.Ptr, n int64, q device.Ptr, m int64) bool {
	return n > 0 && m > 0 && p < q+device.Ptr(m*4) && q < p+device.Ptr(n*4)
}
