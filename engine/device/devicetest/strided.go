package devicetest

import (
	"math"
	"testing"

	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/traces/ops"
)

// This file checks launches over strided operands (Launch.Geom) against
// the op set's reference (ops.ElementwiseStrided, SumStrided,
// MatmulStrided) for every kernel: each case lays its operands out in one
// segment, runs the reference on a host copy of the whole segment and the
// kernel on the device, and compares the whole segment, so that an element
// a view skips must keep its value too.

// geo is a geometry over shape (right-aligned) with the given strides
// (nil: zeros, an operand the kernel does not read).
func geo(shape []int64, out, a, b []int64) ops.Geometry {
	var g ops.Geometry
	off := ops.MaxRank - len(shape)
	for i := range off {
		g.Shape[i] = 1
	}
	for d, s := range shape {
		g.Shape[off+d] = s
		for _, x := range []struct {
			dst *[ops.MaxRank]int64
			src []int64
		}{{&g.Out, out}, {&g.A, a}, {&g.B, b}} {
			if x.src != nil {
				x.dst[off+d] = x.src[d]
			}
		}
	}
	return g
}

// stridedCase is a layout of a kernel's operands in one segment: element
// offsets of out, a and b, and the geometry.
type stridedCase struct {
	name        string
	size        int // elements of the segment
	out, a, b   int
	g           ops.Geometry
	broadcastAt int // where a broadcast b's element is
}

// elementwiseCases cross the GPU's block edges (256 threads) and grid
// loop, and cover a column, a transpose, an expand (stride 0), a view at
// an offset in place, an output that skips elements, and a geometry of
// every dim ops.MaxRank has.
func elementwiseCases() []stridedCase {
	return []stridedCase{
		{name: "column of [2, 3]", size: 64, out: 40, a: 2, b: 20, broadcastAt: 60,
			g: geo([]int64{2}, []int64{1}, []int64{3}, []int64{5})},
		{name: "transpose 37x29", size: 4000, out: 0, a: 1100, b: 2300, broadcastAt: 3999,
			g: geo([]int64{37, 29}, []int64{29, 1}, []int64{1, 37}, []int64{1, 40})},
		{name: "expand", size: 2000, out: 0, a: 1500, b: 1600, broadcastAt: 1990,
			g: geo([]int64{50, 20}, []int64{20, 1}, []int64{1, 0}, []int64{0, 1})},
		{name: "out skips elements", size: 3000, out: 1, a: 2000, b: 1000, broadcastAt: 2999,
			g: geo([]int64{300}, []int64{3}, []int64{2}, []int64{3})},
		{name: "in place at an offset", size: 1000, out: 5, a: 5, b: 600, broadcastAt: 999,
			g: geo([]int64{10, 30}, []int64{31, 1}, []int64{31, 1}, []int64{1, 10})},
		{name: "six dims", size: 3000, out: 0, a: 800, b: 1700, broadcastAt: 2999,
			g: geo([]int64{2, 3, 2, 3, 2, 3}, []int64{108, 36, 18, 6, 3, 1}, []int64{1, 2, 6, 12, 36, 72}, []int64{2, 1, 6, 12, 36, 72})},
	}
}

// runStridedCase uploads vals, launches l with its pointers set from c,
// and compares the whole segment with want.
func runStridedCase(t *testing.T, d device.Device, l device.Launch, c *stridedCase, vals, want []float32, near func(i int, got, want float32) bool) {
	t.Helper()
	seg := put(t, d, vals)
	at := func(i int) device.Ptr { return seg + device.Ptr(4*i) }
	l.Out, l.A, l.B = at(c.out), at(c.a), at(c.b)
	if l.BKind == ops.BBroadcast {
		l.B = at(c.broadcastAt)
	}
	g := c.g
	l.Geom = &g
	launch(t, d, device.DefaultStream, l)
	g = ops.Geometry{} // the device keeps no pointer to it
	got := download(t, d, seg, len(vals))
	bad := 0
	for i := range want {
		if ok := got[i] == want[i] || (got[i] != got[i] && want[i] != want[i]) || (near != nil && near(i, got[i], want[i])); !ok {
			if bad < 5 {
				t.Errorf("element %d = %v, want %v", i, got[i], want[i])
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d elements wrong", bad, len(want))
	}
}

// testStrided runs every kernel, in every form of b, over strided
// operands, against the reference.
func testStrided(t *testing.T, open Open) {
	d := open(t)
	for _, k := range ops.All() {
		if k == ops.Sum || k == ops.Matmul {
			continue
		}
		for _, b := range forms(k) {
			for _, c := range elementwiseCases() {
				name := k.String()
				if k.IsBinary() {
					name += "/" + formNames[b]
				}
				t.Run(name+"/"+c.name, func(t *testing.T) {
					lo, hi := float32(-4), float32(4)
					if k == ops.Sqrt {
						lo, hi = 0, 16
					}
					vals := values(uint64(k)*31+uint64(len(c.name)), c.size, lo, hi)
					if k == ops.Div {
						for i := range vals {
							vals[i] = float32(math.Copysign(float64(max(abs32(vals[i]), 0.5)), float64(vals[i])))
						}
					}
					l := device.Launch{K: k, BKind: b, Scalar: -1.75, N: c.g.Elems()}
					if k == ops.Fill {
						l.Scalar = 2.5
					}
					want := append([]float32(nil), vals...)
					var bs []float32
					switch {
					case !k.IsBinary() || b == ops.BScalar:
					case b == ops.BBroadcast:
						bs = want[c.broadcastAt:]
					default:
						bs = want[c.b:]
					}
					var as []float32
					if k != ops.Fill {
						as = want[c.a:]
					}
					if err := ops.ElementwiseStrided(k, want[c.out:], as, bs, b, l.Scalar, &c.g); err != nil {
						t.Fatal(err)
					}
					var near func(int, float32, float32) bool
					if approximate(k) {
						near = func(_ int, g, w float32) bool {
							return math.Abs(float64(g-w)) <= 1e-6*math.Abs(float64(w))+1e-7
						}
					}
					runStridedCase(t, d, l, &c, vals, want, near)
				})
			}
		}
	}
	t.Run("sum", func(t *testing.T) { testStridedSum(t, d) })
	t.Run("matmul", func(t *testing.T) { testStridedMatmul(t, d) })
	t.Run("replay", func(t *testing.T) { testStridedReplay(t, d) })
	t.Run("bad", func(t *testing.T) { testStridedBad(t, d) })
}

func abs32(x float32) float32 { return float32(math.Abs(float64(x))) }

func testStridedSum(t *testing.T, d device.Device) {
	cases := []struct {
		name string
		size int
		a    int
		g    ops.Geometry
	}{
		{"column of [2, 3]", 8, 2, geo([]int64{2}, nil, []int64{3}, nil)},
		{"expand of one element", 8, 3, geo([]int64{4}, nil, []int64{0}, nil)},
		{"transpose 400x300", 120_100, 50, geo([]int64{400, 300}, nil, []int64{1, 400}, nil)},
		{"every other element", 20_001, 1, geo([]int64{10_000}, nil, []int64{2}, nil)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vals := values(uint64(c.size), c.size, 0, 1)
			vals[0] = -99 // out
			want := append([]float32(nil), vals...)
			if err := ops.SumStrided(want[:1], want[c.a:], &c.g); err != nil {
				t.Fatal(err)
			}
			abs := make([]float32, c.size)
			for i, v := range vals {
				abs[i] = abs32(v)
			}
			var scale [1]float32
			if err := ops.SumStrided(scale[:], abs[c.a:], &c.g); err != nil {
				t.Fatal(err)
			}
			sc := stridedCase{out: 0, a: c.a, b: 0, g: c.g}
			near := func(i int, g, w float32) bool {
				return i == 0 && math.Abs(float64(g-w)) <= 1e-5*float64(scale[0])+1e-7
			}
			runStridedCase(t, d, device.Launch{K: ops.Sum, N: c.g.Elems()}, &sc, vals, want, near)
		})
	}
}

func testStridedMatmul(t *testing.T, d device.Device) {
	cases := []struct {
		name       string
		m, k, n    int64
		size       int
		out, a, b  int
		so, sa, sb []int64
	}{
		{"contiguous", 3, 5, 7, 200, 0, 50, 100, []int64{7, 1}, []int64{5, 1}, []int64{7, 1}},
		{"a transposed", 2, 2, 2, 20, 0, 8, 12, []int64{2, 1}, []int64{1, 2}, []int64{2, 1}},
		// a is the transpose of a [17, 33]; b is rows of a [17, 70]; out
		// is rows of a [33, 80]: crosses the 16x16 tiles on both axes.
		{"tiles", 33, 17, 65, 6000, 0, 2700, 3300, []int64{80, 1}, []int64{1, 33}, []int64{70, 1}},
		{"b column-major, out transposed", 20, 9, 18, 1000, 0, 400, 600, []int64{1, 20}, []int64{9, 1}, []int64{1, 9}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vals := values(uint64(c.size)+7, c.size, -1, 1)
			g := geo([]int64{1, 1}, c.so, c.sa, c.sb)
			want := append([]float32(nil), vals...)
			if err := ops.MatmulStrided(want[c.out:c.a], want[c.a:c.b], want[c.b:], c.m, c.k, c.n, &g); err != nil {
				t.Fatal(err)
			}
			abs := make([]float32, c.size)
			for i, v := range vals {
				abs[i] = abs32(v)
			}
			scale := append([]float32(nil), abs...)
			if err := ops.MatmulStrided(scale[c.out:c.a], abs[c.a:c.b], abs[c.b:], c.m, c.k, c.n, &g); err != nil {
				t.Fatal(err)
			}
			near := func(i int, got, w float32) bool {
				return math.Abs(float64(got-w)) <= 1e-5*float64(scale[i])+1e-6
			}
			sc := stridedCase{out: c.out, a: c.a, b: c.b, g: g}
			runStridedCase(t, d, device.Launch{K: ops.Matmul, M: c.m, Kd: c.k, Cols: c.n}, &sc, vals, want, near)
		})
	}
}

// testStridedReplay: a strided launch captured in a graph replays with its
// geometry, though the caller has changed the one it launched with.
func testStridedReplay(t *testing.T, d device.Device) {
	m := put(t, d, []float32{0, 1, 2, 3, 4, 5})
	out := put(t, d, []float32{-1, -1})
	g := geo([]int64{2}, []int64{1}, []int64{3}, nil)
	l := device.Launch{K: ops.Mul, Out: out, A: m + 8, BKind: ops.BScalar, Scalar: 2, N: 2, Geom: &g}
	_, e := capture(t, d, func() { launch(t, d, device.SideStream, l) })
	g = geo([]int64{2}, []int64{1}, []int64{1}, nil) // would read [2, 3]
	wantOK(t, "WaitStream", d.WaitStream(device.SideStream, device.DefaultStream))
	wantOK(t, "LaunchGraph", d.LaunchGraph(e, device.SideStream))
	wantOK(t, "Synchronize", d.Synchronize())
	compare(t, "replayed m[:, -1] * 2", ops.Mul, download(t, d, out, 2), []float32{4, 10})
}

// testStridedBad: a geometry no kernel can run is an error, and the
// output is left as it was.
func testStridedBad(t *testing.T, d device.Device) {
	p := put(t, d, constant(16, 1))
	tests := []struct {
		name string
		l    device.Launch
		g    ops.Geometry
	}{
		{"out written twice", device.Launch{K: ops.Neg, Out: p, A: p, N: 4}, geo([]int64{4}, []int64{0}, []int64{1}, nil)},
		{"negative stride", device.Launch{K: ops.Copy, Out: p, A: p + 32, N: 2}, geo([]int64{2}, []int64{1}, []int64{-1}, nil)},
		{"n is not the geometry's", device.Launch{K: ops.Copy, Out: p, A: p, N: 3}, geo([]int64{2}, []int64{1}, []int64{2}, nil)},
		{"sum's n is not the geometry's", device.Launch{K: ops.Sum, Out: p, A: p, N: 5}, geo([]int64{2}, nil, []int64{2}, nil)},
		{"matmul out written twice", device.Launch{K: ops.Matmul, Out: p, A: p + 32, B: p + 48, M: 2, Kd: 1, Cols: 2}, geo([]int64{1, 1}, []int64{1, 0}, []int64{1, 1}, []int64{1, 1})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := tt.l
			l.Geom = &tt.g
			if err := d.Launch(device.DefaultStream, &l); err == nil {
				t.Error("Launch succeeded, want an error")
			}
		})
	}
	wantOK(t, "Synchronize", d.Synchronize())
	compare(t, "after the bad launches", ops.Copy, download(t, d, p, 16), constant(16, 1))
}
