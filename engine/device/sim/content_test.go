package sim

import (
	"errors"
	"math"
	"testing"

	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/traces"
	"github.com/cgtviz/cgtviz/traces/ops"
)

// TestRealSizeContents: tensors of real size cost the host what their
// extents do. A 16 GiB rand init reads, anywhere, what traces.Rand gives;
// a copy of it is a shifted rand; a fill times a number is a fill; a
// kernel over MaxValueElems leaves its output unknown, which a read
// refuses; and a snapshot of all of it costs next to nothing.
func TestRealSizeContents(t *testing.T) {
	const big = 4 << 30 // elements: 16 GiB
	d := New(Options{TotalBytes: 64 << 30})
	w := malloc(t, d, big*4)
	if err := d.InitRand(w, big, 9); err != nil {
		t.Fatal(err)
	}
	at := int64(3<<30 + 12345)
	for i, v := range read(t, d, w+device.Ptr(4*at), 5) {
		if want := traces.Rand(9, at+int64(i)); v != want {
			t.Fatalf("rand[%d] = %v, want %v", at+int64(i), v, want)
		}
	}
	// A copy of the rand, shifted by 7 elements into another segment.
	c := malloc(t, d, (big/4)*4)
	if err := d.CopyDtoD(device.DefaultStream, c, w+7*4, big/4); err != nil {
		t.Fatal(err)
	}
	if got, want := read(t, d, c+4*1000, 1)[0], traces.Rand(9, 1007); got != want {
		t.Fatalf("copied rand[1000] = %v, want %v", got, want)
	}
	// fill(2) * 3 is fill(6), at any size.
	f := malloc(t, d, (big/4)*4)
	launch(t, d, device.DefaultStream, device.Launch{K: ops.Fill, Out: f, Scalar: 2, N: big / 4})
	launch(t, d, device.DefaultStream, device.Launch{K: ops.Mul, Out: f, A: f, BKind: ops.BScalar, Scalar: 3, N: big / 4})
	if got := read(t, d, f+4*(big/4-1), 1)[0]; got != 6 {
		t.Fatalf("fill(2) * 3 = %v, want 6", got)
	}
	// A kernel over more than MaxValueElems: unknown.
	launch(t, d, device.DefaultStream, device.Launch{K: ops.Exp, Out: c, A: w, N: MaxValueElems + 1})
	if err := d.CopyDtoH(make([]float32, 1), c); !errors.Is(err, device.ErrValuesUnknown) {
		t.Fatalf("read of a kernel's output over the limit: %v, want ErrValuesUnknown", err)
	}
	// The rest of c is still the copied rand.
	if got, want := read(t, d, c+4*(MaxValueElems+1), 1)[0], traces.Rand(9, MaxValueElems+8); got != want {
		t.Fatalf("c past the kernel's output = %v, want %v", got, want)
	}
	// At the limit, it computes.
	small := malloc(t, d, MaxValueElems*4)
	launch(t, d, device.DefaultStream, device.Launch{K: ops.Add, Out: small, A: w, BKind: ops.BScalar, Scalar: 1, N: MaxValueElems})
	if got, want := read(t, d, small+4*(MaxValueElems-1), 1)[0], traces.Rand(9, MaxValueElems-1)+1; got != want {
		t.Fatalf("rand+1 at the limit = %v, want %v", got, want)
	}
	if got := d.SnapshotBytes(); got > MaxValueElems*4+4096 {
		t.Errorf("SnapshotBytes = %d, want about the %d of computed values", got, MaxValueElems*4)
	}
}

// TestMatmulLimit: a matmul of more than MaxMatmulMACs multiply-adds is
// not computed; one within it is.
func TestMatmulLimit(t *testing.T) {
	d := New(Options{})
	const m, k = 2048, 2048 // 2048^3 = 2^33 multiply-adds
	a := malloc(t, d, m*k*4)
	if err := d.InitFill(a, m*k, 1); err != nil {
		t.Fatal(err)
	}
	out := malloc(t, d, m*m*4)
	launch(t, d, device.DefaultStream, device.Launch{K: ops.Matmul, Out: out, A: a, B: a, M: m, Kd: k, Cols: m})
	if ok, err := d.ValuesKnown(out, 1); err != nil || ok {
		t.Fatalf("a matmul of 2^33 MACs: known %v (%v), want unknown", ok, err)
	}
	launch(t, d, device.DefaultStream, device.Launch{K: ops.Matmul, Out: out, A: a, B: a, M: 64, Kd: 64, Cols: 64})
	if got := read(t, d, out, 1)[0]; got != 64 {
		t.Fatalf("a 64x64x64 matmul of ones = %v, want 64", got)
	}
}

// TestValueBytes: computed values are bounded by Options.ValueBytes: a
// kernel that would hold more leaves its output unknown, while values
// copied from the host (the caller holds them already) are kept.
func TestValueBytes(t *testing.T) {
	d := New(Options{ValueBytes: 1 << 20})
	const n = 100_000 // 400 KB
	a, b, c := malloc(t, d, n*4), malloc(t, d, n*4), malloc(t, d, n*4)
	write(t, d, a, make([]float32, n)...)
	launch(t, d, device.DefaultStream, device.Launch{K: ops.Add, Out: b, A: a, BKind: ops.BScalar, Scalar: 1, N: n})
	launch(t, d, device.DefaultStream, device.Launch{K: ops.Add, Out: c, A: a, BKind: ops.BScalar, Scalar: 2, N: n})
	if ok, _ := d.ValuesKnown(b, n); !ok {
		t.Error("b (800 KB of values in all) is not known")
	}
	if ok, _ := d.ValuesKnown(c, n); ok {
		t.Error("c (1.2 MB of values in all) is known, over ValueBytes")
	}
	// In place, a kernel costs nothing more.
	launch(t, d, device.DefaultStream, device.Launch{K: ops.Add, Out: b, A: b, BKind: ops.BScalar, Scalar: 1, N: n})
	if got := read(t, d, b, 1)[0]; got != 2 {
		t.Errorf("b+1 in place = %v, want 2", got)
	}
	// Freeing gives the budget back.
	if err := d.FreeSegment(a); err != nil {
		t.Fatal(err)
	}
	launch(t, d, device.DefaultStream, device.Launch{K: ops.Add, Out: c, A: b, BKind: ops.BScalar, Scalar: 1, N: n})
	if got := read(t, d, c, 1)[0]; got != 3 {
		t.Errorf("c after a free = %v, want 3", got)
	}
}

// TestExtentsUndo: a mark puts symbolic contents back as it puts values
// back, and a clone shares them.
func TestExtentsUndo(t *testing.T) {
	d := New(Options{})
	p := malloc(t, d, 1<<30)
	if err := d.InitRand(p, 1<<28, 5); err != nil {
		t.Fatal(err)
	}
	c := d.Clone()
	m := d.Mark()
	launch(t, d, device.DefaultStream, device.Launch{K: ops.Exp, Out: p, A: p, N: 1 << 28})
	if err := d.InitArange(p+4*100, 10); err != nil {
		t.Fatal(err)
	}
	if err := d.Undo(m); err != nil {
		t.Fatal(err)
	}
	for _, dev := range []*Device{d, c} {
		got := read(t, dev, p+4*100, 3)
		for i, v := range got {
			if want := traces.Rand(5, int64(100+i)); v != want {
				t.Fatalf("after undo: [%d] = %v, want %v", 100+i, v, want)
			}
		}
	}
	if n := d.SnapshotBytes(); n > 1024 {
		t.Errorf("SnapshotBytes of one rand extent = %d", n)
	}
}

// TestFoldKeepsNaN: folding an elementwise kernel of fills computes the
// one value as the kernel would, special values included.
func TestFoldKeepsNaN(t *testing.T) {
	d := New(Options{})
	const n = MaxValueElems * 2
	p := malloc(t, d, n*4)
	launch(t, d, device.DefaultStream, device.Launch{K: ops.Fill, Out: p, Scalar: -1, N: n})
	launch(t, d, device.DefaultStream, device.Launch{K: ops.Sqrt, Out: p, A: p, N: n})
	if got := read(t, d, p+4*(n-1), 1)[0]; !math.IsNaN(float64(got)) {
		t.Fatalf("sqrt(fill(-1)) = %v, want NaN", got)
	}
}

// TestRealSizeLaunchAllocatesNothing: a kernel over real-size tensors
// (unknown output), a fill and a copy of a rand init cost no allocation
// once their extents exist, as the hot path of a replay must.
func TestRealSizeLaunchAllocatesNothing(t *testing.T) {
	d := New(Options{})
	const n = 1 << 26
	w, out, c := malloc(t, d, n*4), malloc(t, d, n*4), malloc(t, d, n*4)
	if err := d.InitRand(w, n, 1); err != nil {
		t.Fatal(err)
	}
	launches := []device.Launch{
		{K: ops.Exp, Out: out, A: w, N: n},
		{K: ops.Fill, Out: out, Scalar: 2, N: n},
		{K: ops.Mul, Out: out, A: out, BKind: ops.BScalar, Scalar: 3, N: n},
	}
	for _, l := range launches {
		if got := testing.AllocsPerRun(50, func() { launch(t, d, device.DefaultStream, l) }); got != 0 {
			t.Errorf("%s over %d elements: %v allocations", l.K, n, got)
		}
	}
	if got := testing.AllocsPerRun(50, func() {
		if err := d.CopyDtoD(device.DefaultStream, c, w, n); err != nil {
			t.Fatal(err)
		}
	}); got != 0 {
		t.Errorf("a copy of a rand init: %v allocations", got)
	}
}
