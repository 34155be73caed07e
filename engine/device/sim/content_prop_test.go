package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/traces"
	"github.com/cgtviz/cgtviz/traces/ops"
)

// TestContentsAgainstDense drives the extents (content.go) with random
// host copies, inits, fills, kernels, overlapping copies, snapshots,
// restores, marks and undos, all within the value limits, and compares
// every read, bit for bit, with a dense model of the same memory.
func TestContentsAgainstDense(t *testing.T) {
	seeds := uint64(40)
	if testing.Short() {
		seeds = 8
	}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { contentsAgainstDense(t, seed) })
	}
}

func contentsAgainstDense(t *testing.T, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 7))
	d := New(Options{})
	const segElems = 3 * InitValueElems
	var segs []device.Ptr
	var dense [][]float32
	for range 3 {
		segs = append(segs, malloc(t, d, segElems*4))
		dense = append(dense, make([]float32, segElems))
	}
	// span picks n elements of one segment at a random place.
	span := func(maxN int) (int, int, int) {
		s := r.IntN(len(segs))
		n := 1 + r.IntN(maxN)
		return s, r.IntN(segElems - n + 1), n
	}
	ptr := func(s, off int) device.Ptr { return segs[s] + device.Ptr(4*off) }
	type saved struct {
		snap  any
		dense [][]float32
	}
	copyDense := func() [][]float32 {
		out := make([][]float32, len(dense))
		for i := range dense {
			out[i] = append([]float32(nil), dense[i]...)
		}
		return out
	}
	var snaps []saved
	var mark any
	var markDense [][]float32
	for step := range 300 {
		what := ""
		switch op := r.IntN(12); op {
		case 0: // a host copy
			s, off, n := span(3000)
			vals := make([]float32, n)
			for i := range vals {
				vals[i] = float32(r.IntN(1000))
			}
			what = fmt.Sprintf("CopyHtoD seg %d [%d,+%d)", s, off, n)
			write(t, d, ptr(s, off), vals...)
			copy(dense[s][off:], vals)
		case 1, 2: // an init
			s, off, n := span(2 * InitValueElems)
			sd := int64(r.IntN(5)) - 2
			switch r.IntN(3) {
			case 0:
				what = fmt.Sprintf("InitRand seg %d [%d,+%d) seed %d", s, off, n, sd)
				wantOK(t, d.InitRand(ptr(s, off), int64(n), sd))
				for i := range n {
					dense[s][off+i] = traces.Rand(sd, int64(i))
				}
			case 1:
				what = fmt.Sprintf("InitArange seg %d [%d,+%d)", s, off, n)
				wantOK(t, d.InitArange(ptr(s, off), int64(n)))
				for i := range n {
					dense[s][off+i] = float32(i)
				}
			default:
				v := float32(r.IntN(3)) - 1
				what = fmt.Sprintf("InitFill seg %d [%d,+%d) %v", s, off, n, v)
				wantOK(t, d.InitFill(ptr(s, off), int64(n), v))
				for i := range n {
					dense[s][off+i] = v
				}
			}
		case 3: // a fill launch
			s, off, n := span(2 * InitValueElems)
			v := float32(r.IntN(5))
			what = fmt.Sprintf("fill seg %d [%d,+%d) %v", s, off, n, v)
			launch(t, d, device.DefaultStream, device.Launch{K: ops.Fill, Out: ptr(s, off), Scalar: v, N: int64(n)})
			for i := range n {
				dense[s][off+i] = v
			}
		case 4, 5: // an elementwise kernel, in place or into another segment
			s, off, n := span(20000)
			o, ooff := s, off
			if r.IntN(2) == 0 {
				o = (s + 1 + r.IntN(len(segs)-1)) % len(segs)
				ooff = r.IntN(segElems - n + 1)
			}
			v := float32(r.IntN(4))
			what = fmt.Sprintf("add seg %d [%d,+%d) + %v into seg %d at %d", s, off, n, v, o, ooff)
			launch(t, d, device.DefaultStream, device.Launch{K: ops.Add, Out: ptr(o, ooff), A: ptr(s, off), BKind: ops.BScalar, Scalar: v, N: int64(n)})
			src := append([]float32(nil), dense[s][off:off+n]...)
			for i := range n {
				dense[o][ooff+i] = src[i] + v
			}
		case 6, 7: // a copy, overlapping or not
			s, off, n := span(2 * InitValueElems)
			o := r.IntN(len(segs))
			ooff := r.IntN(segElems - n + 1)
			what = fmt.Sprintf("CopyDtoD seg %d [%d,+%d) to seg %d at %d", s, off, n, o, ooff)
			wantOK(t, d.CopyDtoD(device.DefaultStream, ptr(o, ooff), ptr(s, off), int64(n)))
			src := append([]float32(nil), dense[s][off:off+n]...)
			copy(dense[o][ooff:], src)
		case 8: // a snapshot
			what = "Snapshot"
			snaps = append(snaps, saved{d.Snapshot(), copyDense()})
		case 9: // a restore
			if len(snaps) == 0 {
				continue
			}
			sv := snaps[r.IntN(len(snaps))]
			what = "Restore"
			wantOK(t, d.Restore(sv.snap))
			mark = nil
			dense = make([][]float32, len(sv.dense))
			for i := range sv.dense {
				dense[i] = append([]float32(nil), sv.dense[i]...)
			}
		case 10: // a mark
			what = "Mark"
			mark, markDense = d.Mark(), copyDense()
		case 11: // undo or commit the mark
			if mark == nil {
				continue
			}
			if r.IntN(2) == 0 {
				what = "Undo"
				wantOK(t, d.Undo(mark))
				dense = markDense
			} else {
				what = "Commit"
				d.Commit(mark)
			}
			mark = nil
		}
		// A random window, then (every 50 steps) everything.
		s, off, n := span(5000)
		check := func(s, off, n int) {
			got := read(t, d, ptr(s, off), n)
			for i, v := range got {
				if w := dense[s][off+i]; math.Float32bits(v) != math.Float32bits(w) {
					t.Fatalf("step %d (%s): seg %d [%d] = %v, want %v", step, what, s, off+i, v, w)
				}
			}
		}
		check(s, off, n)
		if step%50 == 49 {
			for s := range segs {
				check(s, 0, segElems)
			}
		}
	}
}

func wantOK(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
