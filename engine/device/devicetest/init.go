package devicetest

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/traces"
	"github.com/cgtviz/cgtviz/traces/ops"
)

// testInit: a device.Initializer sets exactly the values the engine would
// have copied from the host (traces.Rand bit for bit, arange, fills), at
// any offset and for counts that are not a multiple of a block, over
// whatever the memory held, and orders them as a host copy is.
func testInit(t *testing.T, open Open) {
	d := open(t)
	in, ok := d.(device.Initializer)
	if !ok {
		t.Skipf("%s is not a device.Initializer", d.Name())
	}
	for _, n := range []int{1, 255, 256, 257, 1000, 100003} {
		for _, off := range []int{0, 3} {
			p := put(t, d, values(uint64(n+off), n+off+1, -5, 5))
			dst := p + device.Ptr(4*off)
			for _, seed := range []int64{0, 1, -7, 1 << 40} {
				wantOK(t, "InitRand", in.InitRand(dst, int64(n), seed))
				got := download(t, d, dst, n)
				for i, v := range got {
					if w := traces.Rand(seed, int64(i)); math.Float32bits(v) != math.Float32bits(w) {
						t.Fatalf("n %d offset %d seed %d: rand[%d] = %v, want %v", n, off, seed, i, v, w)
					}
				}
			}
			wantOK(t, "InitArange", in.InitArange(dst, int64(n)))
			for i, v := range download(t, d, dst, n) {
				if v != float32(i) {
					t.Fatalf("n %d offset %d: arange[%d] = %v", n, off, i, v)
				}
			}
			for _, v := range []float32{0, 1, float32(math.Copysign(0, -1)), 2.5} {
				wantOK(t, "InitFill", in.InitFill(dst, int64(n), v))
				for i, g := range download(t, d, dst, n) {
					if math.Float32bits(g) != math.Float32bits(v) {
						t.Fatalf("n %d offset %d: fill %v [%d] = %v", n, off, v, i, g)
					}
				}
			}
			// The element past the init is left alone.
			if got := download(t, d, p+device.Ptr(4*(n+off)), 1)[0]; got != values(uint64(n+off), n+off+1, -5, 5)[n+off] {
				t.Fatalf("n %d offset %d: the element after the init changed to %v", n, off, got)
			}
		}
	}
	// Ordered as a host copy: after the work queued on both streams, and
	// before the work queued after it on either.
	const n = 400000
	a, b := Alloc(t, d, n), Alloc(t, d, n)
	for it := range 4 {
		s := device.Stream(it % 2)
		launch(t, d, s, device.Launch{K: ops.Fill, Out: a, Scalar: -1, N: n})
		wantOK(t, "InitFill", in.InitFill(a, n, float32(it)))
		launch(t, d, 1-s, device.Launch{K: ops.Add, Out: b, A: a, BKind: ops.BScalar, Scalar: 1, N: n})
		compare(t, fmt.Sprintf("iteration %d: b = init + 1", it), ops.Add, download(t, d, b, n), constant(n, float32(it+1)))
	}
}

// testUnknownValues: a device.ValueKnower knows what it was given and
// what it computed; an opaque launch (values the engine does not model)
// leaves its output unknown, which CopyDtoH refuses with
// device.ErrValuesUnknown, leaving dst alone, until something known
// overwrites it.
func testUnknownValues(t *testing.T, open Open) {
	d := open(t)
	k, ok := d.(device.ValueKnower)
	if !ok {
		t.Skipf("%s is not a device.ValueKnower", d.Name())
	}
	known := func(p device.Ptr, n int64) bool {
		t.Helper()
		ok, err := k.ValuesKnown(p, n)
		if err != nil {
			t.Fatalf("ValuesKnown(%#x, %d): %v", uint64(p), n, err)
		}
		return ok
	}
	const n = 1000
	p := Alloc(t, d, n)
	if !known(p, n) {
		t.Fatal("untouched memory is not known (it reads as zeros)")
	}
	upload(t, d, p, constant(n, 3))
	launch(t, d, device.DefaultStream, device.Launch{K: ops.Fill, Out: p + 400, N: 100, Opaque: true})
	if known(p, n) || !known(p, 100) || !known(p+800, 200) || known(p+400, 1) {
		t.Fatal("an opaque launch over [100, 200) did not make exactly those values unknown")
	}
	dst := constant(n, 7)
	err := d.CopyDtoH(dst, p)
	if !errors.Is(err, device.ErrValuesUnknown) {
		t.Fatalf("CopyDtoH over unknown values: %v, want device.ErrValuesUnknown", err)
	}
	compare(t, "dst after a refused CopyDtoH", ops.Copy, dst, constant(n, 7))
	// A kernel over unknown values computes unknown values; a fill over
	// them makes them known again.
	q := Alloc(t, d, n)
	launch(t, d, device.DefaultStream, device.Launch{K: ops.Add, Out: q, A: p, BKind: ops.BScalar, Scalar: 1, N: n})
	if known(q, n) {
		t.Fatal("a kernel over unknown values gave known ones")
	}
	launch(t, d, device.DefaultStream, device.Launch{K: ops.Fill, Out: p, Scalar: 2, N: n})
	compare(t, "fill over unknown values", ops.Fill, download(t, d, p, n), constant(n, 2))
	if _, err := k.ValuesKnown(p+device.Ptr(4*n), 1<<20); err == nil {
		t.Error("ValuesKnown past the segment: no error")
	}
}

// testUnknownValuesReplayed: a captured graph carries unknown values as
// eager work does. Its replay makes an opaque node's output unknown and
// what a node computes from unknown values unknown; a replay from known
// inputs makes them known again; an input copy pointed at unknown values
// (UpdateCopy) carries those; a snapshot and a clone keep which values
// were known with the contents.
func testUnknownValuesReplayed(t *testing.T, open Open) {
	d := open(t)
	k, ok := d.(device.ValueKnower)
	if !ok {
		t.Skipf("%s is not a device.ValueKnower", d.Name())
	}
	known := func(what string, p device.Ptr, n int64, want bool) {
		t.Helper()
		got, err := k.ValuesKnown(p, n)
		if err != nil {
			t.Fatalf("%s: ValuesKnown(%#x, %d): %v", what, uint64(p), n, err)
		}
		if got != want {
			t.Fatalf("%s: ValuesKnown(%#x, %d) = %v, want %v", what, uint64(p), n, got, want)
		}
	}
	const n = 64
	x, y := put(t, d, constant(n, 1)), put(t, d, constant(n, 2))
	ph, out, opq := Alloc(t, d, n), Alloc(t, d, n), Alloc(t, d, n)
	// The graph: x copied into its placeholder, out = ph + 1, and an
	// opaque output of its own.
	_, e := capture(t, d, func() {
		wantOK(t, "CopyDtoD", d.CopyDtoD(device.SideStream, ph, x, n))
		launch(t, d, device.SideStream, device.Launch{K: ops.Add, Out: out, A: ph, BKind: ops.BScalar, Scalar: 1, N: n})
		launch(t, d, device.SideStream, device.Launch{K: ops.Fill, Out: opq, N: n, Opaque: true})
	})
	replay := func() {
		t.Helper()
		wantOK(t, "WaitStream", d.WaitStream(device.SideStream, device.DefaultStream))
		wantOK(t, "LaunchGraph", d.LaunchGraph(e, device.SideStream))
		wantOK(t, "WaitStream", d.WaitStream(device.DefaultStream, device.SideStream))
	}
	known("captured, not replayed", opq, n, true)
	replay()
	known("the opaque node, replayed", opq, n, false)
	known("out from a known x", out, n, true)
	compare(t, "out from a known x", ops.Add, download(t, d, out, n), constant(n, 2))
	// x becomes unknown (an opaque launch): the next replay carries it.
	launch(t, d, device.DefaultStream, device.Launch{K: ops.Fill, Out: x, N: n, Opaque: true})
	replay()
	known("the placeholder of an unknown x", ph, n, false)
	known("out from an unknown x", out, n, false)
	// A snapshot here keeps out unknown.
	var snap any
	if sn, ok := d.(device.Snapshotter); ok {
		snap = sn.Snapshot()
		if r, ok := snap.(device.Releaser); ok {
			t.Cleanup(r.Release)
		}
	}
	// The copy reads y instead: known again.
	wantOK(t, "UpdateCopy", d.UpdateCopy(e, ph, y, n))
	replay()
	known("out from y", out, n, true)
	compare(t, "out from y", ops.Add, download(t, d, out, n), constant(n, 3))
	if c, ok := d.(device.Cloner); ok {
		cd := clone(t, c)
		ck := cd.(device.ValueKnower)
		launch(t, cd, device.DefaultStream, device.Launch{K: ops.Fill, Out: out, N: n, Opaque: true})
		if got, err := ck.ValuesKnown(out, n); err != nil || got {
			t.Fatalf("the clone's out after an opaque launch: known %v, %v", got, err)
		}
		known("the original's out after its clone's opaque launch", out, n, true)
	}
	if snap != nil {
		wantOK(t, "Restore", d.(device.Snapshotter).Restore(snap))
		known("out after the restore", out, n, false)
		// The restored exec copies x again, still unknown.
		replay()
		known("out replayed after the restore", out, n, false)
		upload(t, d, x, constant(n, 5))
		replay()
		known("out from a written x", out, n, true)
		compare(t, "out from a written x", ops.Add, download(t, d, out, n), constant(n, 6))
	}
}
