package ops

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// geom builds a right-aligned geometry of shape with the given strides
// (nil: zeros), without merging dims.
func geom(shape []int64, out, a, b []int64) *Geometry {
	var g Geometry
	off := MaxRank - len(shape)
	for i := 0; i < off; i++ {
		g.Shape[i] = 1
	}
	for d, s := range shape {
		g.Shape[off+d] = s
		if out != nil {
			g.Out[off+d] = out[d]
		}
		if a != nil {
			g.A[off+d] = a[d]
		}
		if b != nil {
			g.B[off+d] = b[d]
		}
	}
	return &g
}

func arange(n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(i)
	}
	return x
}

// The format doc's examples: col = m[:, -1] of arange [2, 3] (offset 2,
// stride 3), and an expand (stride 0) of one element.
func TestStridedDocExamples(t *testing.T) {
	m := arange(6)
	out := make([]float32, 2)
	g := geom([]int64{2}, []int64{1}, []int64{3}, nil)
	if err := ElementwiseStrided(Mul, out, m[2:], nil, BScalar, 2, g); err != nil {
		t.Fatal(err)
	}
	sameSlice(t, out, []float32{4, 10})

	ones := []float32{1}
	var s [1]float32
	if err := SumStrided(s[:], ones, geom([]int64{4}, nil, []int64{0}, nil)); err != nil {
		t.Fatal(err)
	}
	sameSlice(t, s[:], []float32{4})

	// add_ into the column, in place: only elements 2 and 5 change.
	m = arange(6)
	g = geom([]int64{2}, []int64{3}, []int64{3}, nil)
	if err := ElementwiseStrided(Add, m[2:], m[2:], []float32{10}, BBroadcast, 0, g); err != nil {
		t.Fatal(err)
	}
	sameSlice(t, m, []float32{0, 1, 12, 3, 4, 15})

	// A transposed b for matmul: [[0, 1], [2, 3]]ᵀ.
	a := []float32{1, 0, 0, 1}
	b := arange(4)
	mm := make([]float32, 4)
	g = geom([]int64{1, 1}, []int64{2, 1}, []int64{2, 1}, []int64{1, 2})
	if err := MatmulStrided(mm, a, b, 2, 2, 2, g); err != nil {
		t.Fatal(err)
	}
	sameSlice(t, mm, []float32{0, 2, 1, 3})
}

// On contiguous strides every strided kernel gives exactly what the
// contiguous reference gives, bit for bit, kernel by kernel.
func TestStridedContiguousMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	vals := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.NormFloat64() * 3)
		}
		x[0] = nan
		if n > 2 {
			x[1], x[2] = nzero, inf
		}
		return x
	}
	shape := []int64{3, 5}
	cont := []int64{5, 1}
	const n = 15
	for _, k := range All() {
		t.Run(k.String(), func(t *testing.T) {
			a, b := vals(n), vals(n)
			switch {
			case k == Sum:
				var want, got [1]float32
				if err := SumCPU(want[:], a); err != nil {
					t.Fatal(err)
				}
				if err := SumStrided(got[:], a, geom(shape, nil, cont, nil)); err != nil {
					t.Fatal(err)
				}
				sameSlice(t, got[:], want[:])
			case k == Matmul:
				a, b := vals(6), vals(12) // [2, 3] x [3, 4]
				want, got := make([]float32, 8), make([]float32, 8)
				if err := MatmulCPU(want, a, b, 2, 3, 4); err != nil {
					t.Fatal(err)
				}
				g := geom([]int64{1, 1}, []int64{4, 1}, []int64{3, 1}, []int64{4, 1})
				if err := MatmulStrided(got, a, b, 2, 3, 4, g); err != nil {
					t.Fatal(err)
				}
				sameSlice(t, got, want)
			default:
				forms := []BKind{BTensor}
				if k.IsBinary() {
					forms = []BKind{BTensor, BBroadcast, BScalar}
				}
				for _, bk := range forms {
					want, got := make([]float32, n), make([]float32, n)
					switch k {
					case Copy:
						copy(want, a)
					case Fill:
						FillCPU(want, 1.5)
					default:
						if err := Elementwise(k, want, a, b, bk, 0.75); err != nil {
							t.Fatal(err)
						}
					}
					scalar := float32(0.75)
					if k == Fill {
						scalar = 1.5
					}
					if err := ElementwiseStrided(k, got, a, b, bk, scalar, geom(shape, cont, cont, cont)); err != nil {
						t.Fatal(err)
					}
					sameSlice(t, got, want)
				}
			}
		})
	}
}

// gather returns the elements of x at strides st over shape, row-major.
func gather(x []float32, shape, st []int64) []float32 {
	var out []float32
	var rec func(d int, off int64)
	rec = func(d int, off int64) {
		if d == len(shape) {
			out = append(out, x[off])
			return
		}
		for i := int64(0); i < shape[d]; i++ {
			rec(d+1, off+i*st[d])
		}
	}
	rec(0, 0)
	return out
}

// randomStrides returns strides over shape that place every element
// apart (a permuted row-major layout with gaps), and the extent.
func randomStrides(r *rand.Rand, shape []int64) []int64 {
	perm := r.Perm(len(shape))
	st := make([]int64, len(shape))
	acc := int64(1)
	for _, d := range perm {
		st[d] = acc * int64(1+r.IntN(2))
		acc = st[d] * shape[d]
	}
	return st
}

// Property: a strided kernel is the contiguous reference on the gathered
// operands, scattered to out's places; out's other elements keep their
// values.
func TestStridedIsGatherComputeScatter(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for iter := 0; iter < 300; iter++ {
		rank := 1 + r.IntN(4)
		shape := make([]int64, rank)
		for d := range shape {
			shape[d] = int64(1 + r.IntN(3))
		}
		so, sa, sb := randomStrides(r, shape), randomStrides(r, shape), randomStrides(r, shape)
		if r.IntN(4) == 0 {
			sa[r.IntN(rank)] = 0 // an expand
		}
		g := geom(shape, so, sa, sb)
		ext := func(st []int64) int64 { n, _ := extent(shape, st); return n }
		a := make([]float32, ext(sa))
		b := make([]float32, ext(sb))
		for i := range a {
			a[i] = float32(r.IntN(9) - 4)
		}
		for i := range b {
			b[i] = float32(r.IntN(9) + 1)
		}
		ks := All()
		k := ks[r.IntN(len(ks))]
		bk := BKind(r.IntN(3))
		switch k {
		case Matmul:
			continue
		case Sum:
			var got [1]float32
			if err := SumStrided(got[:], a, g); err != nil {
				t.Fatal(err)
			}
			var want [1]float32
			SumCPU(want[:], gather(a, shape, sa))
			sameSlice(t, got[:], want[:])
			continue
		}
		out := make([]float32, ext(so))
		for i := range out {
			out[i] = -100 - float32(i)
		}
		before := append([]float32(nil), out...)
		if err := ElementwiseStrided(k, out, a, b, bk, 2, g); err != nil {
			t.Fatalf("%s %v out %v a %v b %v: %v", k, shape, so, sa, sb, err)
		}
		ga, gb := gather(a, shape, sa), gather(b, shape, sb)
		if bk == BBroadcast {
			gb = b[:1]
		}
		want := make([]float32, len(ga))
		switch k {
		case Copy:
			copy(want, ga)
		case Fill:
			FillCPU(want, 2)
		default:
			if err := Elementwise(k, want, ga, gb, bk, 2); err != nil {
				t.Fatal(err)
			}
		}
		sameSlice(t, gather(out, shape, so), want)
		// Scatter want over before: every other element kept.
		var rec func(d int, off int64, i *int)
		rec = func(d int, off int64, i *int) {
			if d == len(shape) {
				before[off] = want[*i]
				*i++
				return
			}
			for j := int64(0); j < shape[d]; j++ {
				rec(d+1, off+j*so[d], i)
			}
		}
		i := 0
		rec(0, 0, &i)
		sameSlice(t, out, before)
	}
}

func TestStridedErrors(t *testing.T) {
	buf := make([]float32, 8)
	tests := []struct {
		name string
		run  func() error
		want string
	}{
		{"out written twice", func() error {
			return ElementwiseStrided(Add, buf, buf, nil, BScalar, 1, geom([]int64{4}, []int64{0}, []int64{1}, nil))
		}, "twice"},
		{"out interleaved", func() error {
			return ElementwiseStrided(Copy, buf, buf, nil, 0, 0, geom([]int64{2, 2}, []int64{1, 1}, []int64{2, 1}, nil))
		}, "twice"},
		{"a too short", func() error {
			return ElementwiseStrided(Neg, buf, buf[:3], nil, 0, 0, geom([]int64{2}, []int64{1}, []int64{3}, nil))
		}, "a has 3 elements, its strides reach 4"},
		{"out too short", func() error {
			return ElementwiseStrided(Fill, buf[:1], nil, nil, 0, 0, geom([]int64{2}, []int64{2}, nil, nil))
		}, "out has 1"},
		{"negative stride", func() error {
			return ElementwiseStrided(Copy, buf, buf, nil, 0, 0, geom([]int64{2}, []int64{1}, []int64{-1}, nil))
		}, "negative"},
		{"b too short", func() error {
			return ElementwiseStrided(Sub, buf, buf, buf[:1], BTensor, 0, geom([]int64{2}, []int64{1}, []int64{1}, []int64{1}))
		}, "b has 1"},
		{"broadcast b empty", func() error {
			return ElementwiseStrided(Sub, buf, buf, nil, BBroadcast, 0, geom([]int64{2}, []int64{1}, []int64{1}, nil))
		}, "broadcast b is empty"},
		{"sum a too short", func() error {
			return SumStrided(buf, buf[:2], geom([]int64{3}, nil, []int64{1}, nil))
		}, "a has 2"},
		{"matmul out overlaps a", func() error {
			return MatmulStrided(buf[:4], buf[:4], make([]float32, 4), 2, 2, 2, geom([]int64{1, 1}, []int64{2, 1}, []int64{2, 1}, []int64{2, 1}))
		}, "overlaps"},
		{"matmul out twice", func() error {
			return MatmulStrided(buf[:4], make([]float32, 4), make([]float32, 4), 2, 2, 2, geom([]int64{1, 1}, []int64{0, 1}, []int64{2, 1}, []int64{2, 1}))
		}, "twice"},
		{"not elementwise", func() error {
			return ElementwiseStrided(Sum, buf, buf, nil, 0, 0, geom([]int64{2}, []int64{1}, []int64{1}, nil))
		}, "not an elementwise kernel"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.run()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error with %q", err, tt.want)
			}
		})
	}
}

func TestNewGeometry(t *testing.T) {
	tests := []struct {
		name       string
		shape      []int
		out, a, b  []int64
		want       *Geometry
		contiguous bool // out's and a's strides are row-major after merging
	}{
		{"contiguous merges to one dim", []int{2, 3, 4}, []int64{12, 4, 1}, []int64{12, 4, 1}, nil, geom([]int64{24}, []int64{1}, []int64{1}, nil), true},
		{"column of [2, 3]", []int{2}, []int64{1}, []int64{3}, []int64{1}, geom([]int64{2}, []int64{1}, []int64{3}, []int64{1}), false},
		{"expand", []int{4, 3}, []int64{3, 1}, []int64{0, 0}, nil, geom([]int64{12}, []int64{1}, []int64{0}, nil), false},
		{"transpose keeps two dims", []int{3, 2}, []int64{2, 1}, []int64{1, 3}, nil, geom([]int64{3, 2}, []int64{2, 1}, []int64{1, 3}, nil), false},
		{"size-1 dims go", []int{1, 3, 1}, []int64{3, 1, 1}, []int64{7, 2, 9}, nil, geom([]int64{3}, []int64{1}, []int64{2}, nil), false},
		{"rows of a wider matrix", []int{2, 3}, []int64{3, 1}, []int64{5, 1}, []int64{3, 1}, geom([]int64{2, 3}, []int64{3, 1}, []int64{5, 1}, []int64{3, 1}), false},
		{"b unread merges anywhere", []int{2, 3}, []int64{1, 2}, []int64{1, 2}, nil, geom([]int64{2, 3}, []int64{1, 2}, []int64{1, 2}, nil), false},
		{"empty", []int{2, 0}, []int64{0, 1}, []int64{5, 1}, nil, geom([]int64{0}, nil, nil, nil), true},
		{"scalar", []int{}, []int64{}, []int64{}, nil, geom(nil, nil, nil, nil), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, ok := NewGeometry(tt.shape, tt.out, tt.a, tt.b)
			if !ok {
				t.Fatal("not ok")
			}
			if g != *tt.want {
				t.Fatalf("got %+v, want %+v", g, *tt.want)
			}
			if c := g.Contiguous(&g.Out) && g.Contiguous(&g.A); c != tt.contiguous {
				t.Errorf("contiguous %v, want %v", c, tt.contiguous)
			}
		})
	}
	// Seven dims that cannot merge (each stride skips a gap) do not fit.
	shape := []int{2, 2, 2, 2, 2, 2, 2}
	st := []int64{1000, 300, 90, 27, 9, 3, 0}
	if _, ok := NewGeometry(shape, nil, st, nil); ok {
		t.Error("seven unmergeable dims: ok")
	}
	if _, ok := NewGeometry([]int{2}, []int64{1, 1}, nil, nil); ok {
		t.Error("strides of the wrong rank: ok")
	}
}

func TestDistinct(t *testing.T) {
	tests := []struct {
		shape, st []int64
		want      bool
	}{
		{[]int64{3}, []int64{1}, true},
		{[]int64{3}, []int64{0}, false},
		{[]int64{1}, []int64{0}, true},
		{[]int64{2, 3}, []int64{1, 2}, true},
		{[]int64{2, 3}, []int64{1, 1}, false},
		{[]int64{2, 3}, []int64{3, 1}, true},
		{[]int64{2, 3}, []int64{2, 1}, false},
		{[]int64{0, 3}, []int64{0, 0}, true},
	}
	for _, tt := range tests {
		g := geom(tt.shape, tt.st, nil, nil)
		if got := g.Distinct(&g.Out); got != tt.want {
			t.Errorf("shape %v strides %v: distinct %v, want %v", tt.shape, tt.st, got, tt.want)
		}
	}
}
