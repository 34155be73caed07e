// Package devicetest is the test suite every device.Device passes: the
// simulated device's tests and the CUDA device's (build tag cuda) run it
// on their backend, as delve's proc tests run one suite on every backend,
// so that the two agree on what the engine relies on. What only one
// backend has (the simulator's error texts and fault injection, the
// driver's thread rule and CUresult names) stays in its package.
//
// Sizes are chosen so that the suite runs in seconds on the simulator
// under the race detector and still crosses the GPU's block and grid
// edges; the ordering tests (Ordering) move millions of elements so that a
// copy that is not ordered with the launches next to it shows on the GPU.
package devicetest

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/traces/ops"
)

// Open returns a fresh device for one test and arranges its Close (with
// t.Cleanup); every subtest opens its own.
type Open func(t testing.TB) device.Device

// Run runs the suite on the devices open makes, one subtest per property.
// Subtests of optional interfaces (device.Snapshotter, device.Cloner,
// device.SnapshotSizer, device.Initializer, device.ValueKnower) skip on
// devices without them.
func Run(t *testing.T, open Open) {
	tests := []struct {
		name string
		run  func(t *testing.T, open Open)
	}{
		{"KernelTable", testKernelTable},
		{"Elementwise", testElementwise},
		{"Fill", testFill},
		{"Matmul", testMatmul},
		{"Sum", testSum},
		{"Strided", testStrided},
		{"BadLaunches", testBadLaunches},
		{"OutOfMemory", testOutOfMemory},
		{"CaptureReplay", testCaptureReplay},
		{"UpdateCopy", testUpdateCopy},
		{"MallocDuringCapture", testMallocDuringCapture},
		{"Ordering", testOrdering},
		{"HotPathAllocatesNothing", testHotPathAllocs},
		{"Closed", testClosed},
		{"SnapshotRestore", testSnapshotRestore},
		{"RestoreErrors", testRestoreErrors},
		{"Clone", testClone},
		{"SnapshotBytes", testSnapshotBytes},
		{"Init", testInit},
		{"UnknownValues", testUnknownValues},
		{"UnknownValuesReplayed", testUnknownValuesReplayed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, open) })
	}
}

// Alloc reserves n floats (at least one) and gives them back when the test
// ends (before the device closes: cleanups run last in, first out). A
// backend's own tests use it too.
func Alloc(t testing.TB, d device.Device, n int) device.Ptr {
	t.Helper()
	p, err := d.MallocSegment(int64(max(n, 1)) * 4)
	if err != nil {
		t.Fatalf("MallocSegment(%d floats): %v", n, err)
	}
	t.Cleanup(func() {
		if err := d.FreeSegment(p); err != nil {
			t.Errorf("FreeSegment(%#x): %v", uint64(p), err)
		}
	})
	return p
}

func upload(t testing.TB, d device.Device, p device.Ptr, vals []float32) {
	t.Helper()
	if err := d.CopyHtoD(p, vals); err != nil {
		t.Fatalf("CopyHtoD(%#x, %d floats): %v", uint64(p), len(vals), err)
	}
}

// put allocates a segment for vals and uploads them.
func put(t testing.TB, d device.Device, vals []float32) device.Ptr {
	t.Helper()
	p := Alloc(t, d, len(vals))
	upload(t, d, p, vals)
	return p
}

func download(t testing.TB, d device.Device, p device.Ptr, n int) []float32 {
	t.Helper()
	out := make([]float32, n)
	if err := d.CopyDtoH(out, p); err != nil {
		t.Fatalf("CopyDtoH(%#x, %d floats): %v", uint64(p), n, err)
	}
	return out
}

func launch(t testing.TB, d device.Device, s device.Stream, l device.Launch) {
	t.Helper()
	if err := d.Launch(s, &l); err != nil {
		t.Fatalf("Launch %s on stream %d: %v", l.K, s, err)
	}
}

// values returns n numbers drawn uniformly from [lo, hi), the same on
// every run.
func values(seed uint64, n int, lo, hi float32) []float32 {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	out := make([]float32, n)
	for i := range out {
		out[i] = lo + (hi-lo)*r.Float32()
	}
	return out
}

func constant(n int, v float32) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// approximate says whether a GPU's result may differ from the correctly
// rounded one: expf and tanhf are within a few ulp; every other elementwise
// kernel is exact in IEEE arithmetic.
func approximate(k ops.Kernel) bool { return k == ops.Exp || k == ops.Tanh }

// compare checks got against want element by element (NaN equals NaN),
// within a few ulp for approximate kernels, and reports the first few
// differences and their count.
func compare(t testing.TB, what string, k ops.Kernel, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d elements, want %d", what, len(got), len(want))
	}
	bad, first := 0, -1
	for i := range want {
		g, w := got[i], want[i]
		ok := g == w || (g != g && w != w)
		if !ok && approximate(k) {
			ok = math.Abs(float64(g-w)) <= 1e-6*math.Abs(float64(w))+1e-7
		}
		if !ok {
			if bad < 5 {
				t.Errorf("%s: element %d = %v, want %v", what, i, g, w)
			}
			if first < 0 {
				first = i
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d elements wrong, the first at %d", what, bad, len(want), first)
	}
}

func wantOK(t testing.TB, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// testKernelTable runs each kernel on a few numbers with known results,
// special values included.
func testKernelTable(t *testing.T, open Open) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	tests := []struct {
		name string
		l    device.Launch // Out, A, B filled in below
		a, b []float32
		want []float32
	}{
		{"add", device.Launch{K: ops.Add, N: 3}, []float32{1, 2, 3}, []float32{10, 20, 30}, []float32{11, 22, 33}},
		{"sub broadcast", device.Launch{K: ops.Sub, N: 3, BKind: ops.BBroadcast}, []float32{1, 2, 3}, []float32{1}, []float32{0, 1, 2}},
		{"mul scalar", device.Launch{K: ops.Mul, N: 3, BKind: ops.BScalar, Scalar: -2}, []float32{1, 2, 3}, nil, []float32{-2, -4, -6}},
		{"div", device.Launch{K: ops.Div, N: 2}, []float32{1, -1}, []float32{0, 4}, []float32{inf, -0.25}},
		{"max", device.Launch{K: ops.Max, N: 2}, []float32{1, 5}, []float32{3, 2}, []float32{3, 5}},
		{"min", device.Launch{K: ops.Min, N: 2}, []float32{1, 5}, []float32{3, 2}, []float32{1, 2}},
		// max and min propagate NaN as torch.maximum, torch.minimum and the
		// clamps do: a device that drops it (fmaxf) disagrees with PyTorch.
		{"max NaN", device.Launch{K: ops.Max, N: 3}, []float32{nan, 1, nan}, []float32{2, nan, nan}, []float32{nan, nan, nan}},
		{"min NaN", device.Launch{K: ops.Min, N: 3}, []float32{nan, 1, nan}, []float32{2, nan, nan}, []float32{nan, nan, nan}},
		{"max scalar NaN", device.Launch{K: ops.Max, N: 2, BKind: ops.BScalar, Scalar: nan}, []float32{1, nan}, nil, []float32{nan, nan}},
		{"min broadcast NaN", device.Launch{K: ops.Min, N: 2, BKind: ops.BBroadcast}, []float32{1, -inf}, []float32{nan}, []float32{nan, nan}},
		{"neg", device.Launch{K: ops.Neg, N: 2}, []float32{1, -2}, nil, []float32{-1, 2}},
		{"relu", device.Launch{K: ops.Relu, N: 2}, []float32{1, -2}, nil, []float32{1, 0}},
		{"exp", device.Launch{K: ops.Exp, N: 1}, []float32{0}, nil, []float32{1}},
		{"sqrt", device.Launch{K: ops.Sqrt, N: 2}, []float32{9, 0.25}, nil, []float32{3, 0.5}},
		{"tanh", device.Launch{K: ops.Tanh, N: 1}, []float32{0}, nil, []float32{0}},
		{"abs", device.Launch{K: ops.Abs, N: 2}, []float32{-1, 2}, nil, []float32{1, 2}},
		{"copy", device.Launch{K: ops.Copy, N: 3}, []float32{7, 8, 9}, nil, []float32{7, 8, 9}},
		{"fill", device.Launch{K: ops.Fill, N: 3, Scalar: 1.5}, nil, nil, []float32{1.5, 1.5, 1.5}},
		{"sum", device.Launch{K: ops.Sum, N: 4}, []float32{1, 2, 3, 4}, nil, []float32{10}},
		{"matmul", device.Launch{K: ops.Matmul, M: 2, Kd: 2, Cols: 2}, []float32{1, 2, 3, 4}, []float32{5, 6, 7, 8}, []float32{19, 22, 43, 50}},
		{"in place", device.Launch{K: ops.Mul, N: 3}, []float32{1, 2, 3}, nil, []float32{1, 4, 9}},
	}
	d := open(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seg := Alloc(t, d, 1024)
			l := tt.l
			l.A, l.B, l.Out = seg, seg+1024, seg+2048
			if tt.name == "in place" {
				l.B, l.Out = seg, seg
			}
			if len(tt.a) > 0 {
				upload(t, d, l.A, tt.a)
			}
			if len(tt.b) > 0 {
				upload(t, d, l.B, tt.b)
			}
			launch(t, d, device.DefaultStream, l)
			compare(t, tt.name, l.K, download(t, d, l.Out, len(tt.want)), tt.want)
		})
	}
}

// forms returns the forms of operand b kernel k takes.
func forms(k ops.Kernel) []ops.BKind {
	if k.IsBinary() {
		return []ops.BKind{ops.BTensor, ops.BBroadcast, ops.BScalar}
	}
	return []ops.BKind{ops.BTensor}
}

var formNames = map[ops.BKind]string{ops.BTensor: "tensor", ops.BBroadcast: "broadcast", ops.BScalar: "scalar"}

// testElementwise runs every elementwise kernel in every form of b, in
// place and not, on more elements than a block has threads, against the
// CPU reference of traces/ops.
func testElementwise(t *testing.T, open Open) {
	d := open(t)
	const n = 1000 // several blocks, the last one partly used
	for _, k := range ops.All() {
		if !k.IsBinary() && !k.IsUnary() && k != ops.Copy {
			continue
		}
		for _, b := range forms(k) {
			for _, inPlace := range []bool{false, true} {
				name := k.String()
				if k.IsBinary() {
					name += "/" + formNames[b]
				}
				if inPlace {
					name += "/in-place"
				}
				t.Run(name, func(t *testing.T) {
					lo, hi := float32(-4), float32(4)
					if k == ops.Sqrt {
						lo, hi = 0, 16
					}
					a := values(uint64(k)*7+1, n, lo, hi)
					bv := values(uint64(k)*7+2, n, 0.5, 4)
					if k == ops.Max || k == ops.Min || k == ops.Sub {
						bv = values(uint64(k)*7+3, n, -4, 4)
					}
					l := device.Launch{K: k, N: n, BKind: b, Scalar: -1.75}
					want := make([]float32, n)
					if k == ops.Copy {
						copy(want, a)
					} else if err := ops.Elementwise(k, want, a, bv, b, l.Scalar); err != nil {
						t.Fatal(err)
					}
					l.A = put(t, d, a)
					switch {
					case k.IsBinary() && b == ops.BTensor:
						l.B = put(t, d, bv)
					case k.IsBinary() && b == ops.BBroadcast:
						l.B = put(t, d, bv[:1])
					}
					l.Out = l.A
					if !inPlace {
						l.Out = put(t, d, make([]float32, n))
					}
					launch(t, d, device.DefaultStream, l)
					compare(t, "out", k, download(t, d, l.Out, n), want)
					if !inPlace {
						compare(t, "a (must be untouched)", ops.Copy, download(t, d, l.A, n), a)
					}
				})
			}
		}
	}
}

func testFill(t *testing.T, open Open) {
	d := open(t)
	for _, n := range []int{1, 255, 256, 257, 100000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			out := put(t, d, values(uint64(n), n, -1, 1))
			launch(t, d, device.DefaultStream, device.Launch{K: ops.Fill, Out: out, Scalar: 3.25, N: int64(n)})
			compare(t, "fill", ops.Fill, download(t, d, out, n), constant(n, 3.25))
		})
	}
}

func testMatmul(t *testing.T, open Open) {
	d := open(t)
	tests := []struct{ m, k, n int }{
		{1, 1, 1}, {3, 5, 7}, {16, 16, 16},
		{33, 17, 65}, // crosses tile edges on both axes
		{64, 128, 32}, {1, 300, 2},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%dx%dx%d", tt.m, tt.k, tt.n), func(t *testing.T) {
			a := values(uint64(tt.m*1000+tt.k), tt.m*tt.k, -1, 1)
			b := values(uint64(tt.k*1000+tt.n), tt.k*tt.n, -1, 1)
			l := device.Launch{K: ops.Matmul, M: int64(tt.m), Kd: int64(tt.k), Cols: int64(tt.n)}
			l.A, l.B = put(t, d, a), put(t, d, b)
			l.Out = put(t, d, values(5, tt.m*tt.n, 100, 200))
			launch(t, d, device.DefaultStream, l)
			got := download(t, d, l.Out, tt.m*tt.n)
			for i := 0; i < tt.m; i++ {
				for j := 0; j < tt.n; j++ {
					var want, scale float64
					for p := 0; p < tt.k; p++ {
						x, y := float64(a[i*tt.k+p]), float64(b[p*tt.n+j])
						want += x * y
						scale += math.Abs(x * y)
					}
					if g := float64(got[i*tt.n+j]); math.Abs(g-want) > 1e-5*scale+1e-6 {
						t.Errorf("out[%d,%d] = %v, want %v", i, j, g, want)
					}
				}
			}
		})
	}
}

func testSum(t *testing.T, open Open) {
	d := open(t)
	tests := []struct {
		n      int
		lo, hi float32
	}{
		{0, 0, 1}, {1, 0, 1}, {255, 0, 1}, {1000, 0, 1}, {100000, 0, 1},
		{100000, -1, 1}, // cancellation: judged against the sum of magnitudes
		{1000000, 0, 1},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d[%g,%g)", tt.n, tt.lo, tt.hi), func(t *testing.T) {
			a := values(uint64(tt.n)+3, tt.n, tt.lo, tt.hi)
			var want, scale float64
			for _, x := range a {
				want += float64(x)
				scale += math.Abs(float64(x))
			}
			l := device.Launch{K: ops.Sum, N: int64(tt.n)}
			l.A = Alloc(t, d, tt.n)
			if tt.n > 0 {
				upload(t, d, l.A, a)
			}
			l.Out = put(t, d, []float32{-99})
			launch(t, d, device.DefaultStream, l)
			got := float64(download(t, d, l.Out, 1)[0])
			if math.Abs(got-want) > 1e-5*scale+1e-7 {
				t.Errorf("sum = %v, want %v", got, want)
			}
			// The reduction has a fixed order: a second run gives the same bits.
			launch(t, d, device.DefaultStream, l)
			if again := float64(download(t, d, l.Out, 1)[0]); again != got {
				t.Errorf("second sum = %v, first %v", again, got)
			}
		})
	}
}

// testBadLaunches: every malformed launch is an error, and the device
// works on after them.
func testBadLaunches(t *testing.T, open Open) {
	d := open(t)
	p := Alloc(t, d, 16)
	tests := []struct {
		name string
		s    device.Stream
		l    *device.Launch
	}{
		{"nil launch", device.DefaultStream, nil},
		{"no such stream", device.Stream(5), &device.Launch{K: ops.Neg, Out: p, A: p, N: 4}},
		{"negative stream", device.Stream(-1), &device.Launch{K: ops.Neg, Out: p, A: p, N: 4}},
		{"invalid kernel", device.DefaultStream, &device.Launch{K: ops.Invalid, Out: p, A: p, N: 4}},
		{"kernel out of range", device.DefaultStream, &device.Launch{K: ops.Kernel(99), Out: p, A: p, N: 4}},
		{"unknown b form", device.DefaultStream, &device.Launch{K: ops.Add, Out: p, A: p, B: p, BKind: 9, N: 4}},
		{"negative n", device.DefaultStream, &device.Launch{K: ops.Neg, Out: p, A: p, N: -1}},
		{"null out", device.DefaultStream, &device.Launch{K: ops.Neg, A: p, N: 4}},
		{"null a", device.DefaultStream, &device.Launch{K: ops.Copy, Out: p, N: 4}},
		{"null b tensor", device.DefaultStream, &device.Launch{K: ops.Mul, Out: p, A: p, N: 4}},
		{"null b broadcast", device.DefaultStream, &device.Launch{K: ops.Mul, Out: p, A: p, BKind: ops.BBroadcast, N: 4}},
		{"negative matmul size", device.DefaultStream, &device.Launch{K: ops.Matmul, Out: p, A: p, B: p, M: -2, Kd: 2, Cols: 2}},
		{"matmul too tall", device.DefaultStream, &device.Launch{K: ops.Matmul, Out: p, A: p, B: p, M: 1 << 40, Kd: 1, Cols: 1}},
		{"negative sum", device.DefaultStream, &device.Launch{K: ops.Sum, Out: p, A: p, N: -3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := d.Launch(tt.s, tt.l); err == nil {
				t.Error("Launch succeeded, want an error")
			}
		})
	}
	// Nothing to compute is no error, and a scalar b needs no pointer.
	upload(t, d, p, constant(16, 1))
	for _, l := range []device.Launch{
		{K: ops.Neg, Out: p, A: p, N: 0},
		{K: ops.Matmul, Out: p + 32, A: p, B: p, M: 0, Kd: 3, Cols: 3},
		{K: ops.Mul, Out: p, A: p, BKind: ops.BScalar, Scalar: 2, N: 4},
	} {
		if err := d.Launch(device.DefaultStream, &l); err != nil {
			t.Errorf("Launch(%+v): %v", l, err)
		}
	}
	wantOK(t, "Synchronize after the bad launches", d.Synchronize())
	compare(t, "after the bad launches", ops.Mul, download(t, d, p, 5), []float32{2, 2, 2, 2, 1})
}

func testOutOfMemory(t *testing.T, open Open) {
	d := open(t)
	_, err := d.MallocSegment(1 << 50)
	if !errors.Is(err, device.ErrOutOfMemory) {
		t.Fatalf("MallocSegment(1 PiB) = %v, want an error wrapping device.ErrOutOfMemory", err)
	}
	// The device still works.
	p := put(t, d, values(4, 1000, -1, 1))
	launch(t, d, device.DefaultStream, device.Launch{K: ops.Fill, Out: p, Scalar: 9, N: 1000})
	compare(t, "fill after OOM", ops.Fill, download(t, d, p, 1000), constant(1000, 9))
}

// capture captures launches and copies on the side stream, as the engine
// records, and instantiates the graph; the graph and its exec are
// destroyed when the test ends.
func capture(t testing.TB, d device.Device, body func()) (device.GraphHandle, device.ExecHandle) {
	t.Helper()
	wantOK(t, "WaitStream", d.WaitStream(device.SideStream, device.DefaultStream))
	wantOK(t, "BeginCapture", d.BeginCapture(device.SideStream))
	body()
	g, err := d.EndCapture(device.SideStream)
	wantOK(t, "EndCapture", err)
	e, err := d.Instantiate(g)
	if err != nil {
		d.DestroyGraph(g)
		t.Fatalf("Instantiate: %v", err)
	}
	t.Cleanup(func() {
		for _, err := range []error{d.Synchronize(), d.DestroyExec(e), d.DestroyGraph(g)} {
			if err != nil {
				t.Error(err)
			}
		}
	})
	return g, e
}

// threeKernels is the graph the capture tests replay: x -> y = 2x,
// z = y + x, w = tanh(z), then a copy of w to v.
type threeKernels struct {
	n             int
	x, y, z, w, v device.Ptr
}

func newThreeKernels(t testing.TB, d device.Device, n int) *threeKernels {
	g := &threeKernels{n: n, x: put(t, d, values(1, n, -2, 2))}
	g.y, g.z, g.w = put(t, d, make([]float32, n)), put(t, d, make([]float32, n)), put(t, d, make([]float32, n))
	g.v = put(t, d, constant(n, -7))
	return g
}

func (g *threeKernels) record(t testing.TB, d device.Device) (device.GraphHandle, device.ExecHandle) {
	n := int64(g.n)
	return capture(t, d, func() {
		launch(t, d, device.SideStream, device.Launch{K: ops.Mul, Out: g.y, A: g.x, BKind: ops.BScalar, Scalar: 2, N: n})
		launch(t, d, device.SideStream, device.Launch{K: ops.Add, Out: g.z, A: g.y, B: g.x, BKind: ops.BTensor, N: n})
		launch(t, d, device.SideStream, device.Launch{K: ops.Tanh, Out: g.w, A: g.z, N: n})
		wantOK(t, "CopyDtoD during capture", d.CopyDtoD(device.SideStream, g.v, g.w, n))
	})
}

func (g *threeKernels) want(xs []float32) []float32 {
	out := make([]float32, len(xs))
	for i, x := range xs {
		out[i] = float32(math.Tanh(float64(x*2 + x)))
	}
	return out
}

// testCaptureReplay: capture records and runs nothing; each replay reruns
// the kernels on the captured addresses, so new inputs give new outputs.
func testCaptureReplay(t *testing.T, open Open) {
	d := open(t)
	const n = 4096
	k := newThreeKernels(t, d, n)
	gr, e := k.record(t, d)
	compare(t, "v after capture (capture runs nothing)", ops.Copy, download(t, d, k.v, n), constant(n, -7))
	nodes, err := d.GraphNodes(gr)
	wantOK(t, "GraphNodes", err)
	kinds := []string{"kernel", "kernel", "kernel", "memcpy"}
	if len(nodes) != len(kinds) {
		t.Fatalf("graph has %d nodes, want 3 kernels and a copy: %+v", len(nodes), nodes)
	}
	for i, nd := range nodes {
		if nd.Kind != kinds[i] {
			t.Errorf("node %d is a %s, want a %s", i, nd.Kind, kinds[i])
		}
	}
	dot, err := d.GraphDOT(gr)
	if err != nil || len(dot) == 0 {
		t.Errorf("GraphDOT = %d bytes, %v", len(dot), err)
	}
	for replay, seed := range []uint64{2, 3} {
		xs := values(seed, n, -2, 2)
		upload(t, d, k.x, xs)
		wantOK(t, "LaunchGraph", d.LaunchGraph(e, device.SideStream))
		compare(t, fmt.Sprintf("v after replay %d", replay), ops.Tanh, download(t, d, k.v, n), k.want(xs))
	}
}

// testUpdateCopy: a graph whose first node copies an input into its
// placeholder, as the engine records; UpdateCopy points the copy at
// another input.
func testUpdateCopy(t *testing.T, open Open) {
	d := open(t)
	const n = 512
	in1, in2 := put(t, d, constant(n, 1)), put(t, d, constant(n, 5))
	ph, out := put(t, d, make([]float32, n)), put(t, d, make([]float32, n))
	_, e := capture(t, d, func() {
		wantOK(t, "CopyDtoD", d.CopyDtoD(device.SideStream, ph, in1, n))
		launch(t, d, device.SideStream, device.Launch{K: ops.Mul, Out: out, A: ph, BKind: ops.BScalar, Scalar: 3, N: n})
	})
	wantOK(t, "LaunchGraph", d.LaunchGraph(e, device.SideStream))
	compare(t, "out from in1", ops.Mul, download(t, d, out, n), constant(n, 3))
	wantOK(t, "UpdateCopy", d.UpdateCopy(e, ph, in2, n))
	wantOK(t, "LaunchGraph", d.LaunchGraph(e, device.SideStream))
	compare(t, "out from in2", ops.Mul, download(t, d, out, n), constant(n, 15))
}

// testMallocDuringCapture: the graph pool grows during capture, as
// PyTorch's allocator does (relaxed mode around cudaMalloc).
func testMallocDuringCapture(t *testing.T, open Open) {
	d := open(t)
	const n = 1 << 18
	var p device.Ptr
	_, e := capture(t, d, func() {
		var err error
		p, err = d.MallocSegment(n * 4)
		wantOK(t, "MallocSegment during capture", err)
		launch(t, d, device.SideStream, device.Launch{K: ops.Fill, Out: p, Scalar: 4, N: n})
	})
	wantOK(t, "LaunchGraph", d.LaunchGraph(e, device.DefaultStream))
	compare(t, "the replayed fill", ops.Fill, download(t, d, p, n), constant(n, 4))
	t.Cleanup(func() { wantOK(t, "FreeSegment", d.FreeSegment(p)) })
}

// testOrdering is the race of issue 16: an upload followed at once by a
// launch on either stream must land before the launch reads it, and a
// download right after launches on either stream must see them. Large
// copies, many times over, every element checked: on a GPU whose uploads
// are not ordered with the streams, some iteration reads stale elements
// (issue 16 saw 6,144 stale elements of 100,000 in 4 runs of 30, one
// upload and fill per run; this test makes 36 such pairs per run).
func testOrdering(t *testing.T, open Open) {
	d := open(t)
	for _, n := range []int{100000, 400000, 1600000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			a, b := Alloc(t, d, n), Alloc(t, d, n)
			vals := make([]float32, n)
			want := make([]float32, n)
			for it := range 6 {
				s := device.Stream(it % 2)
				base := float32(it * 10)
				for i := range vals {
					vals[i] = base + float32(i%1000)
					want[i] = vals[i] + 1
				}
				// Upload, then at once a kernel that reads it.
				upload(t, d, a, vals)
				launch(t, d, s, device.Launch{K: ops.Add, Out: b, A: a, BKind: ops.BScalar, Scalar: 1, N: int64(n)})
				compare(t, fmt.Sprintf("iteration %d: b = a+1 on stream %d", it, s), ops.Add, download(t, d, b, n), want)
				// Upload, then at once a kernel that overwrites it.
				upload(t, d, a, vals)
				launch(t, d, 1-s, device.Launch{K: ops.Fill, Out: a, Scalar: float32(it), N: int64(n)})
				compare(t, fmt.Sprintf("iteration %d: a filled on stream %d", it, 1-s), ops.Fill, download(t, d, a, n), constant(n, float32(it)))
				if t.Failed() {
					return
				}
			}
		})
	}
	t.Run("download after launches", func(t *testing.T) {
		const n = 400000
		a := put(t, d, make([]float32, n))
		for it := range 4 {
			s := device.Stream(it % 2)
			for range 8 {
				launch(t, d, s, device.Launch{K: ops.Add, Out: a, A: a, BKind: ops.BScalar, Scalar: 1, N: n})
			}
			compare(t, fmt.Sprintf("after %d adds on stream %d", 8*(it+1), s), ops.Add, download(t, d, a, n), constant(n, float32(8*(it+1))))
		}
	})
	// What the engine does between the tree's stream and the default one
	// (engine/streams.go): work on one stream that reads or overwrites the
	// other's results only after a WaitStream, no host copy between.
	t.Run("wait orders the streams", func(t *testing.T) {
		const n = 1600000
		a, b := put(t, d, make([]float32, n)), Alloc(t, d, n)
		for it := range 4 {
			s := device.Stream(it % 2)
			for range 8 {
				launch(t, d, s, device.Launch{K: ops.Add, Out: a, A: a, BKind: ops.BScalar, Scalar: 1, N: n})
			}
			// Read after write: b = a, on the other stream, once it waits.
			wantOK(t, "WaitStream", d.WaitStream(1-s, s))
			wantOK(t, "CopyDtoD", d.CopyDtoD(1-s, b, a, n))
			// Write after read: a is filled on s once s waits for the copy.
			wantOK(t, "WaitStream", d.WaitStream(s, 1-s))
			launch(t, d, s, device.Launch{K: ops.Fill, Out: a, Scalar: 0, N: n})
			compare(t, fmt.Sprintf("iteration %d: b copied on stream %d after 8 adds on stream %d", it, 1-s, s), ops.Copy, download(t, d, b, n), constant(n, 8))
			compare(t, fmt.Sprintf("iteration %d: a filled after the copy", it), ops.Fill, download(t, d, a, n), constant(n, 0))
			if t.Failed() {
				return
			}
		}
	})
}

// testHotPathAllocs: kernel launches, copies and graph launches, through
// the device.Device interface as the engine calls them, allocate nothing.
func testHotPathAllocs(t *testing.T, open Open) {
	d := open(t)
	p, q, r := put(t, d, constant(1024, 1)), put(t, d, constant(1024, 1)), put(t, d, constant(1024, 1))
	_, e := capture(t, d, func() {
		launch(t, d, device.SideStream, device.Launch{K: ops.Add, Out: p, A: p, BKind: ops.BScalar, Scalar: 1, N: 256})
	})
	launches := []*device.Launch{
		{K: ops.Mul, Out: p, A: p, B: q, BKind: ops.BTensor, N: 1024},
		{K: ops.Mul, Out: p, A: p, BKind: ops.BScalar, Scalar: 1, N: 1024},
		{K: ops.Exp, Out: q, A: p, N: 1024},
		{K: ops.Matmul, Out: q, A: p, B: r, M: 16, Kd: 16, Cols: 16},
		{K: ops.Sum, Out: q, A: p, N: 1024},
		{K: ops.Fill, Out: p, Scalar: 0, N: 1024},
	}
	for _, l := range launches {
		if n := testing.AllocsPerRun(100, func() {
			if err := d.Launch(device.DefaultStream, l); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("Launch %s: %v allocations per launch", l.K, n)
		}
	}
	// The side stream's work below comes after the default stream's.
	wantOK(t, "WaitStream", d.WaitStream(device.SideStream, device.DefaultStream))
	if n := testing.AllocsPerRun(100, func() {
		if err := d.CopyDtoD(device.SideStream, p, q, 1024); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("CopyDtoD: %v allocations per copy", n)
	}
	if n := testing.AllocsPerRun(100, func() {
		if err := d.LaunchGraph(e, device.SideStream); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("LaunchGraph: %v allocations per launch", n)
	}
	wantOK(t, "Synchronize", d.Synchronize())
}

// testClosed: after Close every call fails, and Close again is no error.
func testClosed(t *testing.T, open Open) {
	d := open(t)
	p, err := d.MallocSegment(64)
	wantOK(t, "MallocSegment", err)
	wantOK(t, "Close", d.Close())
	wantOK(t, "second Close", d.Close())
	l := device.Launch{K: ops.Fill, Out: p, N: 1}
	for name, err := range map[string]error{
		"Launch":       d.Launch(device.DefaultStream, &l),
		"Synchronize":  d.Synchronize(),
		"CopyDtoD":     d.CopyDtoD(device.DefaultStream, p, p, 1),
		"CopyHtoD":     d.CopyHtoD(p, []float32{1}),
		"CopyDtoH":     d.CopyDtoH(make([]float32, 1), p),
		"LaunchGraph":  d.LaunchGraph(1, device.DefaultStream),
		"BeginCapture": d.BeginCapture(device.SideStream),
		"MallocSegment": func() error {
			_, err := d.MallocSegment(64)
			return err
		}(),
	} {
		if err == nil {
			t.Errorf("%s on a closed device succeeded", name)
		}
	}
}
