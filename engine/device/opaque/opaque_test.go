package opaque

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/traces/ops"
)

func TestSetAddRemove(t *testing.T) {
	r := func(lo, hi device.Ptr) Range { return Range{lo, hi} }
	tests := []struct {
		name string
		do   func(s *Set)
		want []Range
	}{
		{"one", func(s *Set) { s.add(r(8, 16)) }, []Range{r(8, 16)}},
		{"touching merge", func(s *Set) { s.add(r(8, 16)); s.add(r(16, 24)); s.add(r(0, 8)) }, []Range{r(0, 24)}},
		{"apart stay apart", func(s *Set) { s.add(r(32, 40)); s.add(r(8, 16)) }, []Range{r(8, 16), r(32, 40)}},
		{"covering swallows", func(s *Set) { s.add(r(8, 16)); s.add(r(32, 40)); s.add(r(4, 48)) }, []Range{r(4, 48)}},
		{"remove middle splits", func(s *Set) { s.add(r(0, 40)); s.remove(r(8, 16)) }, []Range{r(0, 8), r(16, 40)}},
		{"remove across two", func(s *Set) { s.add(r(0, 8)); s.add(r(16, 24)); s.remove(r(4, 20)) }, []Range{r(0, 4), r(20, 24)}},
		{"remove all", func(s *Set) { s.add(r(0, 8)); s.add(r(16, 24)); s.remove(r(0, 24)) }, []Range{}},
		{"remove outside", func(s *Set) { s.add(r(8, 16)); s.remove(r(16, 24)); s.remove(r(0, 8)) }, []Range{r(8, 16)}},
		{"empty add", func(s *Set) { s.add(r(8, 8)) }, []Range{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s Set
			tc.do(&s)
			if got := s.Ranges(); !slices.Equal(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
				t.Errorf("ranges %v, want %v", got, tc.want)
			}
		})
	}
}

// model is the set as one flag a byte, over a small address space.
type model [512]bool

func (m *model) any(r Range) bool {
	for p := r.Lo; p < r.Hi && p < 512; p++ {
		if m[p] {
			return true
		}
	}
	return false
}

func (m *model) set(r Range, v bool) {
	for p := r.Lo; p < r.Hi && p < 512; p++ {
		m[p] = v
	}
}

// TestSetAgreesWithBytes applies random ops to a Set and to a flag per
// byte, and compares every answer and the whole set after each.
func TestSetAgreesWithBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	rnd := func() Range {
		lo := device.Ptr(rng.IntN(64)) * 4
		return Range{lo, lo + device.Ptr(rng.IntN(16))*4}
	}
	for round := 0; round < 200; round++ {
		var s Set
		var m model
		for i := 0; i < 60; i++ {
			op := Op{Out: rnd(), In: [2]Range{rnd(), rnd()}, Opaque: rng.IntN(6) == 0, Whole: rng.IntN(4) != 0}
			if rng.IntN(3) == 0 {
				op.In[1] = Range{}
			}
			switch rng.IntN(4) {
			case 0:
				s.Written(op.Out.Lo, int64(op.Out.Hi-op.Out.Lo)/4)
				m.set(op.Out, false)
			default:
				in := m.any(op.In[0]) || m.any(op.In[1])
				s.Apply(&op)
				switch {
				case op.Out.empty():
				case op.Opaque || in:
					m.set(op.Out, true)
				case op.Whole:
					m.set(op.Out, false)
				}
			}
			q := rnd()
			if got, want := s.Known(q.Lo, int64(q.Hi-q.Lo)/4), !m.any(q); got != want {
				t.Fatalf("round %d op %d: Known(%v) = %v, want %v", round, i, q, got, want)
			}
			var back model
			for _, r := range s.Ranges() {
				if r.empty() {
					t.Fatalf("round %d: empty range in %v", round, s.Ranges())
				}
				back.set(r, true)
			}
			if back != m {
				t.Fatalf("round %d op %d: set %v differs from the bytes", round, i, s.Ranges())
			}
			for j := 1; j < len(s.r); j++ {
				if s.r[j-1].Hi >= s.r[j].Lo {
					t.Fatalf("round %d: ranges not sorted and apart: %v", round, s.r)
				}
			}
		}
	}
}

// unit is a geometry of one element: every dim of size 1.
func unit() *ops.Geometry {
	g := &ops.Geometry{}
	for d := range g.Shape {
		g.Shape[d] = 1
	}
	return g
}

func TestLaunchOp(t *testing.T) {
	g := unit()
	// A column of a [4, 8] matrix into a contiguous [4]: out whole, a's
	// extent 3*8+1 elements.
	g.Shape[ops.MaxRank-1], g.Out[ops.MaxRank-1], g.A[ops.MaxRank-1] = 4, 1, 8
	col := unit()
	// The reverse: a contiguous [4] into a column, out not whole.
	col.Shape[ops.MaxRank-1], col.Out[ops.MaxRank-1], col.A[ops.MaxRank-1] = 4, 8, 1
	tests := []struct {
		name string
		l    device.Launch
		want Op
	}{
		{"opaque", device.Launch{K: ops.Fill, Out: 64, N: 3, Opaque: true}, Op{Out: Range{64, 76}, Opaque: true, Whole: true}},
		{"fill", device.Launch{K: ops.Fill, Out: 64, N: 3}, Op{Out: Range{64, 76}, Whole: true}},
		{"add tensor", device.Launch{K: ops.Add, Out: 0, A: 100, B: 200, BKind: ops.BTensor, N: 2}, Op{Out: Range{0, 8}, In: [2]Range{{100, 108}, {200, 208}}, Whole: true}},
		{"add broadcast", device.Launch{K: ops.Add, Out: 0, A: 100, B: 200, BKind: ops.BBroadcast, N: 2}, Op{Out: Range{0, 8}, In: [2]Range{{100, 108}, {200, 204}}, Whole: true}},
		{"add scalar", device.Launch{K: ops.Add, Out: 0, A: 100, BKind: ops.BScalar, N: 2}, Op{Out: Range{0, 8}, In: [2]Range{{100, 108}}, Whole: true}},
		{"relu", device.Launch{K: ops.Relu, Out: 0, A: 100, N: 5}, Op{Out: Range{0, 20}, In: [2]Range{{100, 120}}, Whole: true}},
		{"copy", device.Launch{K: ops.Copy, Out: 0, A: 100, N: 5}, Op{Out: Range{0, 20}, In: [2]Range{{100, 120}}, Whole: true}},
		{"sum", device.Launch{K: ops.Sum, Out: 0, A: 100, N: 5}, Op{Out: Range{0, 4}, In: [2]Range{{100, 120}}, Whole: true}},
		{"matmul", device.Launch{K: ops.Matmul, Out: 0, A: 100, B: 200, M: 2, Kd: 3, Cols: 4}, Op{Out: Range{0, 32}, In: [2]Range{{100, 124}, {200, 248}}, Whole: true}},
		{"copy of a column", device.Launch{K: ops.Copy, Out: 0, A: 100, N: 4, Geom: g}, Op{Out: Range{0, 16}, In: [2]Range{{100, 100 + 25*4}}, Whole: true}},
		{"copy into a column", device.Launch{K: ops.Copy, Out: 0, A: 100, N: 4, Geom: col}, Op{Out: Range{0, 25 * 4}, In: [2]Range{{100, 116}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := LaunchOp(&tc.l); got != tc.want {
				t.Errorf("LaunchOp = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestProgram: a graph's ops applied at each replay, in order; skipped
// once they leave the set as it was; an input copy pointed elsewhere.
func TestProgram(t *testing.T) {
	// x (0..16) copied into the placeholder (100..116), relu of it into
	// 200..216, and an opaque output at 300..316.
	prog := NewProgram([]Op{CopyOp(100, 0, 4), LaunchOp(&device.Launch{K: ops.Relu, Out: 200, A: 100, N: 4}), {Out: Range{300, 316}, Opaque: true, Whole: true}})
	p := prog.Exec()
	var s Set
	s.Run(p)
	if !s.Known(200, 4) || s.Known(300, 4) {
		t.Fatalf("after a replay with x modelled: %v", s.Ranges())
	}
	// x is now the output of an opaque launch: the replay carries it.
	s.Apply(&Op{Out: Range{0, 16}, Opaque: true, Whole: true})
	s.Run(p)
	if s.Known(100, 4) || s.Known(200, 4) {
		t.Fatalf("after a replay with x not modelled: %v", s.Ranges())
	}
	stamp := s.stamp
	s.Run(p) // unchanged: remembered as stable
	if s.stamp != stamp || p.stable.Load() != stamp {
		t.Fatalf("a replay that changed nothing: stamp %d -> %d, stable %d", stamp, s.stamp, p.stable.Load())
	}
	// The host writes x: the next replay makes the copies modelled again,
	// though the program was stable on the set before.
	s.Written(0, 4)
	s.Run(p)
	if !s.Known(100, 4) || !s.Known(200, 4) || s.Known(300, 4) {
		t.Fatalf("after the host wrote x: %v", s.Ranges())
	}
	// The input copy pointed at y (500..516), not modelled.
	s.Apply(&Op{Out: Range{500, 516}, Opaque: true, Whole: true})
	q := p.WithCopy(100, 500, 4)
	s.Run(q)
	if s.Known(200, 4) {
		t.Fatalf("after a replay from y: %v", s.Ranges())
	}
	if len(p.src) != 0 || prog.ops[0].In[0] != (Range{0, 16}) {
		t.Fatalf("WithCopy changed the exec it came from: %v, %+v", p.src, prog.ops[0])
	}
	// A clone is the same set: a program stable on one is stable on it.
	c := s.Clone()
	s.Run(q)
	c.Run(q)
	if !slices.Equal(c.Ranges(), s.Ranges()) {
		t.Fatalf("clone %v, set %v", c.Ranges(), s.Ranges())
	}
}

// BenchmarkRunEmpty is a replay's cost on the GPU's usual state: nothing
// opaque anywhere.
func BenchmarkRunEmpty(b *testing.B) {
	list := make([]Op, 1000)
	for i := range list {
		list[i] = LaunchOp(&device.Launch{K: ops.Relu, Out: device.Ptr(i * 64), A: device.Ptr(i*64 + 32), N: 8})
	}
	p := NewProgram(list).Exec()
	var s Set
	for b.Loop() {
		s.Run(p)
	}
}
