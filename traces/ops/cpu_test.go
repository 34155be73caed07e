package ops

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

var (
	inf   = float32(math.Inf(1))
	ninf  = float32(math.Inf(-1))
	nan   = float32(math.NaN())
	nzero = float32(math.Copysign(0, -1))
)

// same compares bit patterns for NaN-free and sign-of-zero-sensitive
// checks: every NaN equals every NaN, and -0 differs from +0.
func same(x, y float32) bool {
	if x != x || y != y {
		return x != x && y != y
	}
	return math.Float32bits(x) == math.Float32bits(y)
}

func sameSlice(t *testing.T, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d elements %v, want %d %v", len(got), got, len(want), want)
	}
	for i := range got {
		if !same(got[i], want[i]) {
			t.Fatalf("element %d: got %v (%#x), want %v (%#x); all: %v",
				i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]), got)
		}
	}
}

func TestElementwise(t *testing.T) {
	a := []float32{1, -2, 3, 0.5}
	b := []float32{2, 4, -1, 0.25}
	tests := []struct {
		name   string
		k      Kernel
		a, b   []float32
		bk     BKind
		scalar float32
		want   []float32
	}{
		{"add tensor", Add, a, b, BTensor, 0, []float32{3, 2, 2, 0.75}},
		{"add broadcast", Add, a, []float32{10}, BBroadcast, 0, []float32{11, 8, 13, 10.5}},
		{"add scalar", Add, a, nil, BScalar, 2, []float32{3, 0, 5, 2.5}},
		{"add broadcast ignores b beyond [0]", Add, a, []float32{1, 100}, BBroadcast, 0, []float32{2, -1, 4, 1.5}},
		{"sub tensor", Sub, a, b, BTensor, 0, []float32{-1, -6, 4, 0.25}},
		{"sub broadcast", Sub, a, []float32{1}, BBroadcast, 0, []float32{0, -3, 2, -0.5}},
		{"sub scalar", Sub, a, nil, BScalar, -1, []float32{2, -1, 4, 1.5}},
		{"mul tensor", Mul, a, b, BTensor, 0, []float32{2, -8, -3, 0.125}},
		{"mul broadcast", Mul, a, []float32{-2}, BBroadcast, 0, []float32{-2, 4, -6, -1}},
		{"mul scalar", Mul, a, nil, BScalar, 0.5, []float32{0.5, -1, 1.5, 0.25}},
		{"div tensor", Div, a, b, BTensor, 0, []float32{0.5, -0.5, -3, 2}},
		{"div broadcast", Div, a, []float32{4}, BBroadcast, 0, []float32{0.25, -0.5, 0.75, 0.125}},
		{"div scalar", Div, a, nil, BScalar, 2, []float32{0.5, -1, 1.5, 0.25}},
		{"div by zero", Div, []float32{1, -1, 0, 1}, []float32{0, 0, 0, nzero}, BTensor, 0, []float32{inf, ninf, nan, ninf}},
		{"div scalar zero", Div, []float32{2, -2}, nil, BScalar, 0, []float32{inf, ninf}},
		{"max tensor", Max, a, b, BTensor, 0, []float32{2, 4, 3, 0.5}},
		{"max broadcast", Max, a, []float32{1}, BBroadcast, 0, []float32{1, 1, 3, 1}},
		{"max scalar", Max, a, nil, BScalar, 0, []float32{1, 0, 3, 0.5}},
		{"max NaN propagates", Max, []float32{nan, 1, nan, 1}, []float32{2, nan, nan, 0}, BTensor, 0, []float32{nan, nan, nan, 1}},
		{"max signed zeros", Max, []float32{nzero, 0}, []float32{0, nzero}, BTensor, 0, []float32{0, nzero}},
		{"max inf", Max, []float32{ninf, inf}, []float32{-1e30, 1e30}, BTensor, 0, []float32{-1e30, inf}},
		{"min tensor", Min, a, b, BTensor, 0, []float32{1, -2, -1, 0.25}},
		{"min broadcast", Min, a, []float32{1}, BBroadcast, 0, []float32{1, -2, 1, 0.5}},
		{"min scalar", Min, a, nil, BScalar, 0, []float32{0, -2, 0, 0}},
		{"min NaN propagates", Min, []float32{nan, 1, nan, 1}, []float32{2, nan, nan, 2}, BTensor, 0, []float32{nan, nan, nan, 1}},
		{"min signed zeros", Min, []float32{nzero, 0}, []float32{0, nzero}, BTensor, 0, []float32{0, nzero}},
		{"max scalar NaN", Max, []float32{1, nan}, nil, BScalar, nan, []float32{nan, nan}},
		{"neg", Neg, []float32{1, -2, 0, nzero, inf}, nil, 0, 0, []float32{-1, 2, nzero, 0, ninf}},
		{"relu", Relu, []float32{1, -2, 0, nzero, nan, ninf, 0.5}, nil, 0, 0, []float32{1, 0, 0, 0, nan, 0, 0.5}},
		{"exp", Exp, []float32{0, 1, -1, ninf, inf, 100}, nil, 0, 0,
			[]float32{1, 2.7182817, 0.36787945, 0, inf, inf}},
		{"sqrt", Sqrt, []float32{4, 2, 0, nzero, -1, inf, ninf}, nil, 0, 0,
			[]float32{2, 1.4142135, 0, nzero, nan, inf, nan}},
		{"tanh", Tanh, []float32{0, 1, -1, 20, ninf, nzero}, nil, 0, 0,
			[]float32{0, 0.7615942, -0.7615942, 1, -1, nzero}},
		{"abs", Abs, []float32{-1, 2, nzero, ninf, -0.5}, nil, 0, 0, []float32{1, 2, 0, inf, 0.5}},
		{"unary ignores b", Abs, []float32{-3}, []float32{1, 2, 3}, BTensor, 9, []float32{3}},
		{"empty", Add, []float32{}, []float32{}, BTensor, 0, []float32{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := make([]float32, len(tt.a))
			ain := append([]float32(nil), tt.a...)
			if err := Elementwise(tt.k, out, tt.a, tt.b, tt.bk, tt.scalar); err != nil {
				t.Fatal(err)
			}
			sameSlice(t, out, tt.want)
			sameSlice(t, tt.a, ain) // a is not written when out is separate
		})
		t.Run(tt.name+"/in place", func(t *testing.T) {
			buf := append([]float32(nil), tt.a...)
			if err := Elementwise(tt.k, buf, buf, tt.b, tt.bk, tt.scalar); err != nil {
				t.Fatal(err)
			}
			sameSlice(t, buf, tt.want)
		})
	}
}

func TestElementwiseInPlaceOnB(t *testing.T) {
	// out is b: x - b written over b.
	b := []float32{1, 2, 3}
	if err := Elementwise(Sub, b, []float32{10, 10, 10}, b, BTensor, 0); err != nil {
		t.Fatal(err)
	}
	sameSlice(t, b, []float32{9, 8, 7})
	// out is a and b is a's first element, broadcast: b[0] is read before
	// out[0] is written, so every element sees the original 2.
	x := []float32{2, 3, 4}
	if err := Elementwise(Mul, x, x, x[:1], BBroadcast, 0); err != nil {
		t.Fatal(err)
	}
	sameSlice(t, x, []float32{4, 6, 8})
	// a and b the same slice as out: x + x.
	y := []float32{1, -1, 0.5}
	if err := Elementwise(Add, y, y, y, BTensor, 0); err != nil {
		t.Fatal(err)
	}
	sameSlice(t, y, []float32{2, -2, 1})
}

// TestElementwiseSequential checks the unrolled arithmetic loops against
// the one-element loop the package's doc promises, at lengths around the
// unroll's width, separate and in place, and with out overlapping a or b
// one element either side (which the doc says gives what a sequential
// loop gives).
func TestElementwiseSequential(t *testing.T) {
	ref := func(k Kernel, x, y float32) float32 {
		switch k {
		case Add:
			return x + y
		case Sub:
			return x - y
		case Mul:
			return x * y
		case Div:
			return x / y
		case Max:
			return maxf(x, y)
		}
		return minf(x, y)
	}
	// seq is the reference over one buffer: out, a and b are offsets into
	// it (b -1 for the scalar).
	seq := func(k Kernel, buf []float32, out, a, b, n int, y float32) {
		for i := 0; i < n; i++ {
			z := y
			if b >= 0 {
				z = buf[b+i]
			}
			buf[out+i] = ref(k, buf[a+i], z)
		}
	}
	for _, k := range []Kernel{Add, Sub, Mul, Div, Max, Min} {
		for n := 0; n <= 13; n++ {
			// Offsets within a buffer of n+2: out at 1, a and b at 0, 1 or 2.
			for _, c := range []struct {
				name string
				a, b int
			}{
				{"separate", -1, -1}, {"in place", 1, -1}, {"a before out", 0, -1}, {"a after out", 2, -1},
				{"b in place", -1, 1}, {"b before out", -1, 0}, {"b after out", -1, 2},
			} {
				for _, bk := range []BKind{BTensor, BScalar} {
					if bk == BScalar && c.b >= 0 {
						continue
					}
					init := func() []float32 {
						buf := make([]float32, 3*(n+2))
						for i := range buf {
							buf[i] = float32(i%7) - 2.5 + float32(i)/8
						}
						return buf
					}
					// Separate operands live past the shared window.
					a, b := c.a, c.b
					if a < 0 {
						a = n + 2
					}
					if b < 0 && bk == BTensor {
						b = 2 * (n + 2)
					}
					got, want := init(), init()
					var bs []float32
					if bk == BTensor {
						bs = got[b : b+n]
					} else {
						b = -1
					}
					if err := Elementwise(k, got[1:1+n], got[a:a+n], bs, bk, 1.75); err != nil {
						t.Fatal(err)
					}
					seq(k, want, 1, a, b, n, 1.75)
					t.Run(fmt.Sprintf("%s/%d/%s/%d", k, n, c.name, bk), func(t *testing.T) { sameSlice(t, got, want) })
				}
			}
		}
	}
}

func TestElementwiseErrors(t *testing.T) {
	tests := []struct {
		name   string
		k      Kernel
		out, a []float32
		b      []float32
		bk     BKind
		want   string
	}{
		{"a shorter", Add, make([]float32, 3), make([]float32, 2), make([]float32, 3), BTensor, "a has 2 elements, out 3"},
		{"b shorter", Add, make([]float32, 3), make([]float32, 3), make([]float32, 2), BTensor, "b has 2 elements, out 3"},
		{"broadcast empty", Mul, make([]float32, 3), make([]float32, 3), nil, BBroadcast, "broadcast b is empty"},
		{"bad bkind", Sub, make([]float32, 1), make([]float32, 1), nil, BKind(7), "unknown form of b"},
		{"not elementwise", Matmul, make([]float32, 1), make([]float32, 1), nil, BTensor, "matmul is not an elementwise kernel"},
		{"invalid", Invalid, make([]float32, 1), make([]float32, 1), nil, BTensor, "invalid is not an elementwise kernel"},
		{"unary a shorter", Exp, make([]float32, 2), make([]float32, 1), nil, 0, "a has 1 elements, out 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i := range tt.out {
				tt.out[i] = 7
			}
			err := Elementwise(tt.k, tt.out, tt.a, tt.b, tt.bk, 1)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got error %v, want one containing %q", err, tt.want)
			}
			for i, v := range tt.out {
				if v != 7 {
					t.Fatalf("out[%d] written (%v) by a failing call", i, v)
				}
			}
		})
	}
}

func TestMatmul(t *testing.T) {
	tests := []struct {
		name    string
		a, b    []float32
		m, k, n int
		want    []float32
	}{
		{"2x3 by 3x2", []float32{1, 2, 3, 4, 5, 6}, []float32{7, 8, 9, 10, 11, 12}, 2, 3, 2,
			[]float32{58, 64, 139, 154}},
		{"1x1", []float32{3}, []float32{-2}, 1, 1, 1, []float32{-6}},
		{"row by column", []float32{1, 2, 3}, []float32{4, 5, 6}, 1, 3, 1, []float32{32}},
		{"column by row", []float32{1, 2}, []float32{3, 4, 5}, 2, 1, 3, []float32{3, 4, 5, 6, 8, 10}},
		{"k zero gives zeros", []float32{}, []float32{}, 2, 0, 2, []float32{0, 0, 0, 0}},
		{"m zero", []float32{}, []float32{1, 2}, 0, 1, 2, []float32{}},
		// Summed in k order in float32: (1e8 + 1) rounds to 1e8, then
		// -1e8 gives 0, then +1 gives 1. Any other order or a wider
		// accumulator would give 2 or 0.
		{"k order in float32", []float32{1e8, 1, -1e8, 1}, []float32{1, 1, 1, 1}, 1, 4, 1, []float32{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := make([]float32, tt.m*tt.n)
			for i := range out {
				out[i] = 99 // k == 0 must still write zeros
			}
			if err := MatmulCPU(out, tt.a, tt.b, tt.m, tt.k, tt.n); err != nil {
				t.Fatal(err)
			}
			sameSlice(t, out, tt.want)
		})
	}
}

func TestMatmulErrors(t *testing.T) {
	buf := make([]float32, 8)
	tests := []struct {
		name      string
		out, a, b []float32
		m, k, n   int
		want      string
	}{
		{"negative", buf[:1], buf[1:2], buf[2:3], -1, 1, 1, "negative size"},
		{"overflow", nil, nil, nil, 1 << 40, 1 << 40, 1, "overflow"},
		{"a length", make([]float32, 4), make([]float32, 3), make([]float32, 4), 2, 2, 2, "a has 3 elements (want 4)"},
		{"b length", make([]float32, 4), make([]float32, 4), make([]float32, 5), 2, 2, 2, "b 5 (want 4)"},
		{"out length", make([]float32, 3), make([]float32, 4), make([]float32, 4), 2, 2, 2, "out 3 (want 4)"},
		{"out is a", buf[:4], buf[:4], make([]float32, 4), 2, 2, 2, "out overlaps an operand"},
		{"out overlaps b", buf[0:4], make([]float32, 4), buf[3:7], 2, 2, 2, "out overlaps an operand"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := MatmulCPU(tt.out, tt.a, tt.b, tt.m, tt.k, tt.n)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got error %v, want one containing %q", err, tt.want)
			}
		})
	}
	// Adjacent, not overlapping: fine.
	if err := MatmulCPU(buf[0:4], buf[4:8], make([]float32, 4), 2, 2, 2); err != nil {
		t.Fatalf("adjacent slices: %v", err)
	}
}

func TestSum(t *testing.T) {
	tests := []struct {
		name string
		a    []float32
		want float32
	}{
		{"simple", []float32{1, 2, 3, 4}, 10},
		{"empty", []float32{}, 0},
		{"signs", []float32{-1.5, 0.5, 3}, 2},
		// In float32 the 1s would vanish next to 1e8; in float64 they
		// survive until the final rounding: 1e8+4 is exactly a float32.
		{"float64 accumulator", []float32{1e8, 1, 1, 1, 1}, 100000004},
		{"cancellation", []float32{1e8, 1, -1e8}, 1},
		{"inf", []float32{1, inf}, inf},
		{"inf minus inf", []float32{inf, ninf}, nan},
		{"nan", []float32{1, nan}, nan},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := []float32{42}
			if err := SumCPU(out, tt.a); err != nil {
				t.Fatal(err)
			}
			if !same(out[0], tt.want) {
				t.Fatalf("got %v, want %v", out[0], tt.want)
			}
		})
	}
	t.Run("in place", func(t *testing.T) {
		x := []float32{1, 2, 3}
		if err := SumCPU(x, x); err != nil {
			t.Fatal(err)
		}
		sameSlice(t, x, []float32{6, 2, 3})
	})
	t.Run("empty out", func(t *testing.T) {
		if err := SumCPU(nil, []float32{1}); err == nil || !strings.Contains(err.Error(), "out is empty") {
			t.Fatalf("got %v", err)
		}
	})
}

func TestCopyFill(t *testing.T) {
	out := make([]float32, 3)
	if err := CopyCPU(out, []float32{1, nan, nzero}); err != nil {
		t.Fatal(err)
	}
	sameSlice(t, out, []float32{1, nan, nzero})
	if err := CopyCPU(out, out); err != nil {
		t.Fatal(err)
	}
	sameSlice(t, out, []float32{1, nan, nzero})
	if err := CopyCPU(out, make([]float32, 2)); err == nil || !strings.Contains(err.Error(), "a has 2 elements, out 3") {
		t.Fatalf("length mismatch: got %v", err)
	}
	FillCPU(out, -2.5)
	sameSlice(t, out, []float32{-2.5, -2.5, -2.5})
	FillCPU(out[:0], 1) // nothing to do, nothing written
	sameSlice(t, out, []float32{-2.5, -2.5, -2.5})
}

func TestNoAllocations(t *testing.T) {
	a := []float32{1, 2, 3, 4}
	b := []float32{4, 3, 2, 1}
	out := make([]float32, 4)
	calls := map[string]func(){
		"add":    func() { _ = Elementwise(Add, out, a, b, BTensor, 0) },
		"max":    func() { _ = Elementwise(Max, out, a, b, BBroadcast, 0) },
		"div":    func() { _ = Elementwise(Div, out, a, nil, BScalar, 3) },
		"tanh":   func() { _ = Elementwise(Tanh, out, a, nil, 0, 0) },
		"matmul": func() { _ = MatmulCPU(out, a, b, 2, 2, 2) },
		"sum":    func() { _ = SumCPU(out, a) },
		"copy":   func() { _ = CopyCPU(out, a) },
		"fill":   func() { FillCPU(out, 1) },
	}
	for name, f := range calls {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s: %v allocations per call, want 0", name, n)
		}
	}
}

func BenchmarkElementwiseAdd1024(b *testing.B) {
	x := make([]float32, 1024)
	y := make([]float32, 1024)
	out := make([]float32, 1024)
	for b.Loop() {
		_ = Elementwise(Add, out, x, y, BTensor, 0)
	}
}

func BenchmarkMatmul64(b *testing.B) {
	x := make([]float32, 64*64)
	y := make([]float32, 64*64)
	out := make([]float32, 64*64)
	for b.Loop() {
		_ = MatmulCPU(out, x, y, 64, 64, 64)
	}
}
