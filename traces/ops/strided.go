package ops

import (
	"fmt"
	"math"
)

// This file is the CPU reference of kernels over strided operands (views
// made by as_strided, slicing, transpose, expand): the semantics the
// simulated device runs and the GPU's strided kernels are checked against.
// A launch whose operands are all contiguous uses the functions of cpu.go;
// these are for the rest, and give the same values on contiguous
// geometries (the tests check it kernel by kernel).

// MaxRank is the most dims a Geometry describes. The engine merges the
// dims that need no stride of their own (coalescing) before it builds one,
// so a view of more dims still fits when its strides allow; one that does
// not is launched as not modelled (docs/trace-format.md, Strided views).
const MaxRank = 6

// Geometry places the elements of a launch's operands: element i, in
// row-major order over Shape, of operand X is X's element
// sum(idx[d] * X[d]) counted from X's first element (its data pointer,
// which already holds the view's storage offset). Dims are right-aligned:
// a geometry of rank r uses the last r entries, and the leading entries
// have size 1 and stride 0, so that code may walk all MaxRank dims.
// Strides are in elements and never negative.
//
// What each kernel reads of it:
//
//   - elementwise (binary and unary), copy and fill: Shape is out's shape
//     (a's and, for a tensor b, b's); Out, A and B are their strides. A
//     broadcast b is b's first element, and B is unused.
//   - sum: Shape is a's shape and A its strides; out is one element.
//   - matmul: the last two entries of A are the strides of a [m, k], of B
//     those of b [k, n], of Out those of out [m, n]; Shape is unused (the
//     launch's m, k and n are).
//
// The output's elements must be distinct (no zero stride over a dim of
// more than one element, no two index tuples at one place): a kernel
// writing one place twice has no single answer on a GPU, and PyTorch
// refuses it. In place means out and a (or b) are the same elements at
// the same strides; each element is read before it is written, as in
// cpu.go. Partial overlap gives whatever a sequential loop in row-major
// order gives (the GPU gives something else), as in cpu.go.
type Geometry struct {
	Shape     [MaxRank]int64
	Out, A, B [MaxRank]int64
}

// Dims returns the geometry's rank: the dims after the leading ones of
// size 1 whose strides are all 0.
func (g *Geometry) Dims() int {
	for d := 0; d < MaxRank; d++ {
		if g.Shape[d] != 1 || g.Out[d] != 0 || g.A[d] != 0 || g.B[d] != 0 {
			return MaxRank - d
		}
	}
	return 0
}

// Elems returns the element count of Shape.
func (g *Geometry) Elems() int64 {
	n := int64(1)
	for _, s := range g.Shape {
		n *= s
	}
	return n
}

// Check reports a size or stride that is negative, or an element count
// that overflows.
func (g *Geometry) Check() error {
	n := int64(1)
	for d := 0; d < MaxRank; d++ {
		if g.Shape[d] < 0 || g.Out[d] < 0 || g.A[d] < 0 || g.B[d] < 0 {
			return fmt.Errorf("kernels: strided: dim %d has size %d, strides out %d a %d b %d: none may be negative",
				d, g.Shape[d], g.Out[d], g.A[d], g.B[d])
		}
		if g.Shape[d] > 0 && n > math.MaxInt64/g.Shape[d] {
			return fmt.Errorf("kernels: strided: element count overflows")
		}
		n *= g.Shape[d]
	}
	return nil
}

// Extent returns how many elements from the first one an operand with
// strides st spans over Shape: 1 + sum((size-1)*stride), or 0 when Shape
// holds no element. ok is false when it overflows.
func (g *Geometry) Extent(st *[MaxRank]int64) (int64, bool) {
	return extent(g.Shape[:], st[:])
}

// MatmulExtent is Extent of a matmul operand of rows x cols whose strides
// are the last two entries of st.
func MatmulExtent(st *[MaxRank]int64, rows, cols int64) (int64, bool) {
	return extent([]int64{rows, cols}, st[MaxRank-2:])
}

func extent(shape, st []int64) (int64, bool) {
	n := int64(1)
	for d, s := range shape {
		if s == 0 {
			return 0, true
		}
		if s < 0 || st[d] < 0 {
			return 0, false
		}
		if st[d] > 0 && s-1 > (math.MaxInt64-n)/st[d] {
			return 0, false
		}
		n += (s - 1) * st[d]
	}
	return n, true
}

// Distinct reports whether strides st place every element of Shape at a
// place of its own. It decides by the sufficient rule PyTorch's
// non-overlapping check uses: sorted by stride, each dim of more than one
// element strides past everything the smaller strides span. (Strides that
// interleave without meeting are refused too: no view the format makes
// has them.)
func (g *Geometry) Distinct(st *[MaxRank]int64) bool {
	return distinct(g.Shape[:], st[:])
}

// MatmulDistinct is Distinct for a matmul output of rows x cols.
func MatmulDistinct(st *[MaxRank]int64, rows, cols int64) bool {
	return distinct([]int64{rows, cols}, st[MaxRank-2:])
}

func distinct(shape, st []int64) bool {
	var dims [MaxRank]int
	k := 0
	for d, s := range shape {
		if s == 0 {
			return true
		}
		if s > 1 {
			dims[k] = d
			k++
		}
	}
	// Insertion sort by stride: at most MaxRank dims, and no allocation.
	for i := 1; i < k; i++ {
		for j := i; j > 0 && st[dims[j]] < st[dims[j-1]]; j-- {
			dims[j], dims[j-1] = dims[j-1], dims[j]
		}
	}
	span := int64(1) // elements the smaller strides reach, from the first
	for _, d := range dims[:k] {
		if st[d] < span {
			return false
		}
		span += (shape[d] - 1) * st[d]
	}
	return true
}

// walker visits the index tuples of a geometry in row-major order and
// keeps each operand's element offset.
type walker struct {
	g       *Geometry
	idx     [MaxRank]int64
	o, a, b int64
}

// next moves to the next index tuple.
func (w *walker) next() {
	g := w.g
	for d := MaxRank - 1; d >= 0; d-- {
		w.idx[d]++
		w.o += g.Out[d]
		w.a += g.A[d]
		w.b += g.B[d]
		if w.idx[d] < g.Shape[d] {
			return
		}
		w.o -= g.Out[d] * w.idx[d]
		w.a -= g.A[d] * w.idx[d]
		w.b -= g.B[d] * w.idx[d]
		w.idx[d] = 0
	}
}

// checkLen reports an operand slice shorter than the extent its strides
// reach.
func checkLen(k Kernel, name string, x []float32, n int64, ok bool) error {
	if !ok {
		return fmt.Errorf("kernels: %s: %s's extent overflows", k, name)
	}
	if int64(len(x)) < n {
		return fmt.Errorf("kernels: %s: %s has %d elements, its strides reach %d", k, name, len(x), n)
	}
	return nil
}

// ElementwiseStrided runs an elementwise kernel, copy or fill over g:
// out's element at index tuple t is a's element at t combined with y (as
// Elementwise: b's element at t for BTensor, b[0] for BBroadcast, scalar
// for BScalar); copy writes a's element, fill writes scalar. Each slice
// starts at its operand's first element and holds at least the extent its
// strides reach. Each element's result is the one Elementwise, CopyCPU or
// FillCPU computes for it.
func ElementwiseStrided(k Kernel, out, a, b []float32, bk BKind, scalar float32, g *Geometry) error {
	if err := g.Check(); err != nil {
		return err
	}
	n, ok := g.Extent(&g.Out)
	if err := checkLen(k, "out", out, n, ok); err != nil {
		return err
	}
	if !g.Distinct(&g.Out) {
		return fmt.Errorf("kernels: %s: out's strides write one element twice", k)
	}
	elems := g.Elems()
	if elems == 0 {
		return nil
	}
	if k != Fill {
		if !k.IsBinary() && !k.IsUnary() && k != Copy {
			return fmt.Errorf("kernels: %s is not an elementwise kernel", k)
		}
		n, ok := g.Extent(&g.A)
		if err := checkLen(k, "a", a, n, ok); err != nil {
			return err
		}
	}
	var y float32
	if k.IsBinary() {
		switch bk {
		case BTensor:
			n, ok := g.Extent(&g.B)
			if err := checkLen(k, "b", b, n, ok); err != nil {
				return err
			}
		case BBroadcast:
			if len(b) < 1 {
				return fmt.Errorf("kernels: %s: broadcast b is empty", k)
			}
			y = b[0] // read once, before anything is written (as cpu.go)
		case BScalar:
			y = scalar
		default:
			return fmt.Errorf("kernels: %s: unknown form of b (%d)", k, bk)
		}
	}
	w := walker{g: g}
	var x, r [1]float32
	for i := int64(0); i < elems; i++ {
		switch {
		case k == Fill:
			out[w.o] = scalar
		case k == Copy:
			out[w.o] = a[w.a]
		case k.IsUnary():
			x[0] = a[w.a]
			unary(k, r[:], x[:])
			out[w.o] = r[0]
		default:
			x[0] = a[w.a]
			yi := y
			if bk == BTensor {
				yi = b[w.b]
			}
			binaryScalar(k, r[:], x[:], yi)
			out[w.o] = r[0]
		}
		w.next()
	}
	return nil
}

// SumStrided sets out[0] to the sum of a's elements over g, taken in
// row-major order as SumCPU takes them (in float64, rounded once).
func SumStrided(out, a []float32, g *Geometry) error {
	if err := g.Check(); err != nil {
		return err
	}
	if len(out) < 1 {
		return fmt.Errorf("kernels: sum: out is empty")
	}
	n, ok := g.Extent(&g.A)
	if err := checkLen(Sum, "a", a, n, ok); err != nil {
		return err
	}
	elems := g.Elems()
	w := walker{g: g}
	var acc float64
	for i := int64(0); i < elems; i++ {
		acc += float64(a[w.a])
		w.next()
	}
	out[0] = float32(acc)
	return nil
}

// MatmulStrided computes out = a·b as MatmulCPU does (each element a
// float32 sum in k order of rounded products), with a [m, k], b [k, n]
// and out [m, n] placed by the last two entries of g.A, g.B and g.Out.
// out must not share an element with a or b.
func MatmulStrided(out, a, b []float32, m, k, n int64, g *Geometry) error {
	if m < 0 || k < 0 || n < 0 {
		return fmt.Errorf("kernels: matmul: negative size m=%d k=%d n=%d", m, k, n)
	}
	if err := g.Check(); err != nil {
		return err
	}
	const r = MaxRank - 2
	no, okO := MatmulExtent(&g.Out, m, n)
	na, okA := MatmulExtent(&g.A, m, k)
	nb, okB := MatmulExtent(&g.B, k, n)
	if err := checkLen(Matmul, "out", out, no, okO); err != nil {
		return err
	}
	if err := checkLen(Matmul, "a", a, na, okA); err != nil {
		return err
	}
	if err := checkLen(Matmul, "b", b, nb, okB); err != nil {
		return err
	}
	if !MatmulDistinct(&g.Out, m, n) {
		return fmt.Errorf("kernels: matmul: out's strides write one element twice")
	}
	if overlaps(out[:no], a[:na]) || overlaps(out[:no], b[:nb]) {
		return fmt.Errorf("kernels: matmul: out overlaps an operand")
	}
	for i := int64(0); i < m; i++ {
		for j := int64(0); j < n; j++ {
			var acc float32
			for p := int64(0); p < k; p++ {
				acc += float32(a[i*g.A[r]+p*g.A[r+1]] * b[p*g.B[r]+j*g.B[r+1]])
			}
			out[i*g.Out[r]+j*g.Out[r+1]] = acc
		}
	}
	return nil
}

// NewGeometry returns the geometry of operands of shape whose strides are
// out, a and b (one per dim; ContiguousStrides for a contiguous operand,
// nil for one the kernel does not read), merged to as few dims as the
// strides allow: dims of size 1 go, and a dim goes into the next inner one
// when every operand strides over the pair as over one dim. ok is false
// when more than MaxRank dims remain, or a list of strides is not one per
// dim.
func NewGeometry(shape []int, out, a, b []int64) (g Geometry, ok bool) {
	for _, st := range [][]int64{out, a, b} {
		if st != nil && len(st) != len(shape) {
			return g, false
		}
	}
	at := func(st []int64, d int) int64 {
		if st == nil {
			return 0 // not read: merges anywhere
		}
		return st[d]
	}
	// Merged dims from the innermost out, written right to left.
	r := MaxRank
	for d := len(shape) - 1; d >= 0; d-- {
		s := int64(shape[d])
		if s == 0 {
			// No element: any geometry of one empty dim will do.
			g = Geometry{}
			for i := range g.Shape {
				g.Shape[i] = 1
			}
			g.Shape[MaxRank-1] = 0
			return g, true
		}
		if s == 1 {
			continue
		}
		o, x, y := at(out, d), at(a, d), at(b, d)
		if r < MaxRank && g.Out[r]*g.Shape[r] == o && g.A[r]*g.Shape[r] == x && g.B[r]*g.Shape[r] == y {
			// d strides as one more row of dim r: one dim of s*size.
			g.Shape[r] *= s
			continue
		}
		if r == 0 {
			return Geometry{}, false
		}
		r--
		g.Shape[r], g.Out[r], g.A[r], g.B[r] = s, o, x, y
	}
	for i := 0; i < r; i++ {
		g.Shape[i] = 1
	}
	return g, true
}

// Contiguous reports whether strides st of g lay its elements out
// row-major without gaps, so that a kernel of cpu.go reads them as they
// are.
func (g *Geometry) Contiguous(st *[MaxRank]int64) bool {
	acc := int64(1)
	for d := MaxRank - 1; d >= 0; d-- {
		if g.Shape[d] == 1 {
			continue
		}
		if g.Shape[d] == 0 {
			return true
		}
		if st[d] != acc {
			return false
		}
		acc *= g.Shape[d]
	}
	return true
}
