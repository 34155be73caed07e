//go:build cuda

package cuda

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/traces/ops"
)

// These tests need an NVIDIA GPU and its driver (build tag cuda). They use
// device CGTVIZ_CUDA_DEVICE, 0 by default.

func ordinal(t testing.TB) int {
	s := os.Getenv("CGTVIZ_CUDA_DEVICE")
	if s == "" {
		return 0
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("CGTVIZ_CUDA_DEVICE=%q: %v", s, err)
	}
	return n
}

// open opens the test GPU and closes it when the test ends.
func open(t testing.TB) *Device {
	t.Helper()
	d, err := New(ordinal(t))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return d
}

// alloc reserves n floats (at least one) and frees them when the test ends
// (before the device closes: cleanups run last in, first out).
func alloc(t testing.TB, d *Device, n int) device.Ptr {
	t.Helper()
	p, err := d.MallocSegment(int64(max(n, 1)) * 4)
	if err != nil {
		t.Fatalf("MallocSegment(%d floats): %v", n, err)
	}
	t.Cleanup(func() {
		if err := d.FreeSegment(p); err != nil {
			t.Errorf("FreeSegment: %v", err)
		}
	})
	return p
}

func upload(t testing.TB, d *Device, vals []float32) device.Ptr {
	t.Helper()
	p := alloc(t, d, len(vals))
	if err := d.CopyHtoD(p, vals); err != nil {
		t.Fatalf("CopyHtoD: %v", err)
	}
	return p
}

func download(t testing.TB, d *Device, p device.Ptr, n int) []float32 {
	t.Helper()
	out := make([]float32, n)
	if err := d.CopyDtoH(out, p); err != nil {
		t.Fatalf("CopyDtoH: %v", err)
	}
	return out
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

// refBinary and refUnary are the CPU reference of the elementwise ops.
func refBinary(k ops.Kernel, x, y float32) float32 {
	switch k {
	case ops.Add:
		return x + y
	case ops.Sub:
		return x - y
	case ops.Mul:
		return x * y
	case ops.Div:
		return x / y
	case ops.Max:
		if x > y {
			return x
		}
		return y
	case ops.Min:
		if x < y {
			return x
		}
		return y
	}
	panic("not a binary kernel: " + k.String())
}

func refUnary(k ops.Kernel, x float32) float32 {
	switch k {
	case ops.Neg:
		return -x
	case ops.Relu:
		return max(x, 0)
	case ops.Exp:
		return float32(math.Exp(float64(x)))
	case ops.Sqrt:
		return float32(math.Sqrt(float64(x)))
	case ops.Tanh:
		return float32(math.Tanh(float64(x)))
	case ops.Abs:
		return float32(math.Abs(float64(x)))
	case ops.Copy:
		return x
	}
	panic("not a unary kernel: " + k.String())
}

// approximate says whether the GPU's result may differ from the correctly
// rounded one: expf and tanhf are within a few ulp; every other elementwise
// kernel is exact in IEEE arithmetic (division and sqrt round correctly in
// nvcc's default mode).
func approximate(k ops.Kernel) bool { return k == ops.Exp || k == ops.Tanh }

func compare(t *testing.T, k ops.Kernel, got, want []float32) {
	t.Helper()
	bad := 0
	for i := range want {
		g, w := got[i], want[i]
		ok := g == w || (g != g && w != w)
		if !ok && approximate(k) {
			ok = math.Abs(float64(g-w)) <= 1e-6*math.Abs(float64(w))+1e-7
		}
		if !ok {
			if bad < 5 {
				t.Errorf("%s: element %d = %v, want %v", k, i, g, w)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d elements wrong", k, bad, len(want))
	}
}

// inputRange keeps each kernel's operands where its result is defined.
func inputRange(k ops.Kernel) (lo, hi float32) {
	if k == ops.Sqrt {
		return 0, 16
	}
	return -4, 4
}

func TestElementwiseKernels(t *testing.T) {
	d := open(t)
	const n = 1000 // several blocks, the last one partly used
	type form struct {
		name string
		b    ops.BKind
	}
	for _, k := range ops.All() {
		if !k.IsBinary() && !k.IsUnary() && k != ops.Copy {
			continue
		}
		forms := []form{{"", ops.BTensor}}
		if k.IsBinary() {
			forms = []form{{"tensor", ops.BTensor}, {"broadcast", ops.BBroadcast}, {"scalar", ops.BScalar}}
		}
		for _, f := range forms {
			for _, inPlace := range []bool{false, true} {
				name := k.String() + "/" + f.name
				if inPlace {
					name += "/in-place"
				}
				t.Run(name, func(t *testing.T) {
					lo, hi := inputRange(k)
					a := values(uint64(k)*7+1, n, lo, hi)
					bvals := values(uint64(k)*7+2, n, 0.5, 4)
					if k == ops.Max || k == ops.Min || k == ops.Sub {
						bvals = values(uint64(k)*7+3, n, -4, 4)
					}
					l := device.Launch{K: k, N: n, BKind: f.b, Scalar: -1.75}
					want := make([]float32, n)
					for i := range want {
						switch {
						case !k.IsBinary():
							want[i] = refUnary(k, a[i])
						case f.b == ops.BTensor:
							want[i] = refBinary(k, a[i], bvals[i])
						case f.b == ops.BBroadcast:
							want[i] = refBinary(k, a[i], bvals[0])
						default:
							want[i] = refBinary(k, a[i], l.Scalar)
						}
					}
					l.A = upload(t, d, a)
					switch f.b {
					case ops.BTensor:
						l.B = upload(t, d, bvals)
					case ops.BBroadcast:
						l.B = upload(t, d, bvals[:1])
					}
					if !k.IsBinary() {
						l.B = 0
					}
					l.Out = l.A
					if !inPlace {
						l.Out = upload(t, d, make([]float32, n))
					}
					if err := d.Launch(device.DefaultStream, &l); err != nil {
						t.Fatalf("Launch: %v", err)
					}
					compare(t, k, download(t, d, l.Out, n), want)
					if !inPlace {
						// The input must be untouched.
						compare(t, ops.Copy, download(t, d, l.A, n), a)
					}
				})
			}
		}
	}
}

// TestGridStride launches more elements than the capped grid has threads,
// so each thread must loop.
func TestGridStride(t *testing.T) {
	d := open(t)
	n := maxBlocks*elementwiseThreads + 777
	a := values(11, n, -4, 4)
	l := device.Launch{K: ops.Add, BKind: ops.BScalar, Scalar: 0.5, N: int64(n)}
	l.A = upload(t, d, a)
	l.Out = l.A
	if err := d.Launch(device.SideStream, &l); err != nil {
		t.Fatalf("Launch: %v", err)
	}
	want := make([]float32, n)
	for i := range a {
		want[i] = a[i] + 0.5
	}
	compare(t, ops.Add, download(t, d, l.Out, n), want)
}

func TestFill(t *testing.T) {
	d := open(t)
	for _, n := range []int{1, 255, 256, 257, 100000} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			out := upload(t, d, values(uint64(n), n, -1, 1))
			l := device.Launch{K: ops.Fill, Out: out, Scalar: 3.25, N: int64(n)}
			if err := d.Launch(device.DefaultStream, &l); err != nil {
				t.Fatalf("Launch: %v", err)
			}
			want := make([]float32, n)
			for i := range want {
				want[i] = 3.25
			}
			compare(t, ops.Fill, download(t, d, out, n), want)
		})
	}
}

func TestMatmul(t *testing.T) {
	d := open(t)
	tests := []struct{ m, k, n int }{
		{1, 1, 1},
		{3, 5, 7},
		{16, 16, 16},
		{33, 17, 65}, // crosses tile edges on both axes
		{64, 128, 32},
		{1, 300, 2},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%dx%dx%d", tt.m, tt.k, tt.n), func(t *testing.T) {
			a := values(uint64(tt.m*1000+tt.k), tt.m*tt.k, -1, 1)
			b := values(uint64(tt.k*1000+tt.n), tt.k*tt.n, -1, 1)
			l := device.Launch{K: ops.Matmul, M: int64(tt.m), Kd: int64(tt.k), Cols: int64(tt.n)}
			l.A, l.B = upload(t, d, a), upload(t, d, b)
			l.Out = upload(t, d, values(5, tt.m*tt.n, 100, 200))
			if err := d.Launch(device.DefaultStream, &l); err != nil {
				t.Fatalf("Launch: %v", err)
			}
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

func TestSum(t *testing.T) {
	d := open(t)
	tests := []struct {
		n      int
		lo, hi float32
	}{
		{0, 0, 1},
		{1, 0, 1},
		{255, 0, 1},
		{1000, 0, 1},
		{100000, 0, 1},
		{100000, -1, 1}, // cancellation: judged against the sum of magnitudes
		{3000000, 0, 1},
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
			l.A = upload(t, d, a)
			l.Out = upload(t, d, []float32{-99})
			if err := d.Launch(device.DefaultStream, &l); err != nil {
				t.Fatalf("Launch: %v", err)
			}
			got := float64(download(t, d, l.Out, 1)[0])
			if math.Abs(got-want) > 1e-5*scale+1e-7 {
				t.Errorf("sum = %v, want %v", got, want)
			}
			// The reduction has a fixed order: a second run gives the same bits.
			if err := d.Launch(device.DefaultStream, &l); err != nil {
				t.Fatalf("Launch: %v", err)
			}
			if again := float64(download(t, d, l.Out, 1)[0]); again != got {
				t.Errorf("second sum = %v, first %v", again, got)
			}
		})
	}
}

func TestLaunchRejectsBadInput(t *testing.T) {
	d := open(t)
	p := alloc(t, d, 16)
	tests := []struct {
		name string
		s    device.Stream
		l    *device.Launch
	}{
		{"nil launch", device.DefaultStream, nil},
		{"no such stream", device.Stream(5), &device.Launch{K: ops.Neg, Out: p, A: p, N: 4}},
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
	for _, l := range []device.Launch{
		{K: ops.Neg, Out: p, A: p, N: 0},
		{K: ops.Matmul, Out: p, A: p, B: p, M: 0, Kd: 3, Cols: 3},
		{K: ops.Mul, Out: p, A: p, BKind: ops.BScalar, Scalar: 2, N: 4},
	} {
		if err := d.Launch(device.DefaultStream, &l); err != nil {
			t.Errorf("Launch(%+v): %v", l, err)
		}
	}
	if err := d.Synchronize(); err != nil {
		t.Fatalf("Synchronize after the bad launches: %v", err)
	}
}

// TestCaptureReplay captures kernels and a copy on the side stream, then
// replays the graph with two different inputs: each replay must really
// overwrite the outputs.
func TestCaptureReplay(t *testing.T) {
	d := open(t)
	const n = 4096
	x := upload(t, d, values(1, n, -2, 2))
	y := upload(t, d, make([]float32, n))
	z := upload(t, d, make([]float32, n))
	w := upload(t, d, make([]float32, n))
	v := upload(t, d, make([]float32, n))
	sentinel := make([]float32, n)
	for i := range sentinel {
		sentinel[i] = -7
	}
	if err := d.CopyHtoD(v, sentinel); err != nil {
		t.Fatal(err)
	}

	captured := []device.Launch{
		{K: ops.Mul, Out: y, A: x, BKind: ops.BScalar, Scalar: 2, N: n}, // y = 2x
		{K: ops.Add, Out: z, A: y, B: x, BKind: ops.BTensor, N: n},      // z = y + x
		{K: ops.Tanh, Out: w, A: z, N: n},                               // w = tanh(z)
	}
	reference := func(xs []float32) []float32 {
		out := make([]float32, n)
		for i, xi := range xs {
			out[i] = refUnary(ops.Tanh, refBinary(ops.Add, refBinary(ops.Mul, xi, 2), xi))
		}
		return out
	}

	if err := d.WaitStream(device.SideStream, device.DefaultStream); err != nil {
		t.Fatalf("WaitStream: %v", err)
	}
	if err := d.BeginCapture(device.SideStream); err != nil {
		t.Fatalf("BeginCapture: %v", err)
	}
	for i := range captured {
		if err := d.Launch(device.SideStream, &captured[i]); err != nil {
			t.Fatalf("Launch %d during capture: %v", i, err)
		}
	}
	if err := d.CopyDtoD(device.SideStream, v, w, n); err != nil {
		t.Fatalf("CopyDtoD during capture: %v", err)
	}
	g, err := d.EndCapture(device.SideStream)
	if err != nil {
		t.Fatalf("EndCapture: %v", err)
	}
	defer func() {
		if err := d.DestroyGraph(g); err != nil {
			t.Errorf("DestroyGraph: %v", err)
		}
	}()

	// Capture records; it runs nothing.
	compare(t, ops.Copy, download(t, d, v, n), sentinel)

	nodes, err := d.GraphNodes(g)
	if err != nil {
		t.Fatalf("GraphNodes: %v", err)
	}
	wantNames := []string{"cgtviz_mul_scalar", "cgtviz_add_tensor", "cgtviz_tanh", "DtoD"}
	wantKinds := []string{"kernel", "kernel", "kernel", "memcpy"}
	if len(nodes) != len(wantNames) {
		t.Fatalf("graph has %d nodes, want %d (3 launches and a copy): %+v", len(nodes), len(wantNames), nodes)
	}
	for i, nd := range nodes {
		if nd.Kind != wantKinds[i] || nd.Name != wantNames[i] {
			t.Errorf("node %d = %s %s, want %s %s", i, nd.Kind, nd.Name, wantKinds[i], wantNames[i])
		}
		// One stream, so each node depends on the one before.
		if i == 0 && len(nd.Deps) != 0 || i > 0 && (len(nd.Deps) != 1 || nd.Deps[0] != i-1) {
			t.Errorf("node %d depends on %v, want the node before it only", i, nd.Deps)
		}
		t.Logf("node %d: %s %s deps=%v %s", i, nd.Kind, nd.Name, nd.Deps, nd.Detail)
	}
	if want := fmt.Sprintf("out=%#x a=%#x s=2 n=%d", uint64(y), uint64(x), n); !strings.Contains(nodes[0].Detail, want) {
		t.Errorf("node 0 detail %q lacks %q", nodes[0].Detail, want)
	}
	if want := fmt.Sprintf("dst=%#x src=%#x bytes=%d", uint64(v), uint64(w), n*4); !strings.Contains(nodes[3].Detail, want) {
		t.Errorf("node 3 detail %q lacks %q", nodes[3].Detail, want)
	}

	dot, err := d.GraphDOT(g)
	if err != nil {
		t.Fatalf("GraphDOT: %v", err)
	}
	if !strings.Contains(dot, "digraph") {
		t.Errorf("GraphDOT is not DOT:\n%s", dot)
	}
	for _, name := range wantNames[:3] {
		if !strings.Contains(dot, name) {
			t.Errorf("GraphDOT does not name kernel %s", name)
		}
	}
	t.Logf("GraphDOT (%d bytes):\n%s", len(dot), dot)

	e, err := d.Instantiate(g)
	if err != nil {
		t.Fatalf("Instantiate: %v", err)
	}
	defer func() {
		if err := d.DestroyExec(e); err != nil {
			t.Errorf("DestroyExec: %v", err)
		}
	}()

	var previous []float32
	for replay, seed := range []uint64{2, 3} {
		xs := values(seed, n, -2, 2)
		if err := d.CopyHtoD(x, xs); err != nil {
			t.Fatal(err)
		}
		if err := d.LaunchGraph(e, device.SideStream); err != nil {
			t.Fatalf("LaunchGraph %d: %v", replay, err)
		}
		if err := d.Synchronize(); err != nil {
			t.Fatalf("Synchronize: %v", err)
		}
		got := download(t, d, v, n)
		want := reference(xs)
		for i := range want {
			if math.Abs(float64(got[i]-want[i])) > 1e-6 {
				t.Fatalf("replay %d: v[%d] = %v, want %v", replay, i, got[i], want[i])
			}
		}
		if previous != nil {
			changed := 0
			for i := range got {
				if got[i] != previous[i] {
					changed++
				}
			}
			if changed < n/2 {
				t.Errorf("replay %d changed %d of %d outputs: the replay did not overwrite memory", replay, changed, n)
			}
		}
		previous = got
	}
}

// TestWaitStream: a copy on the side stream, queued behind a slow matmul on
// the default stream by WaitStream, must see the matmul's result.
func TestWaitStream(t *testing.T) {
	d := open(t)
	const m = 2048 // m*m*m multiply-adds: milliseconds with the simple kernel
	ones := make([]float32, m*m)
	for i := range ones {
		ones[i] = 1
	}
	a := upload(t, d, ones)
	sentinel := make([]float32, m*m)
	for i := range sentinel {
		sentinel[i] = -1
	}
	out := upload(t, d, sentinel)
	copied := upload(t, d, sentinel)
	l := device.Launch{K: ops.Matmul, Out: out, A: a, B: a, M: m, Kd: m, Cols: m}
	if err := d.Launch(device.DefaultStream, &l); err != nil {
		t.Fatalf("Launch: %v", err)
	}
	if err := d.WaitStream(device.SideStream, device.DefaultStream); err != nil {
		t.Fatalf("WaitStream: %v", err)
	}
	if err := d.CopyDtoD(device.SideStream, copied, out, m*m); err != nil {
		t.Fatalf("CopyDtoD: %v", err)
	}
	got := download(t, d, copied, m*m)
	for i, v := range got {
		if v != m {
			t.Fatalf("copied[%d] = %v, want %d: the copy did not wait for the matmul", i, v, m)
		}
	}
}

// TestCaptureAcrossStreams forks the default stream into a capture on the
// side stream and joins it back, as WaitStream does during a capture: the
// graph holds both kernels, the second after the first.
func TestCaptureAcrossStreams(t *testing.T) {
	d := open(t)
	p := upload(t, d, values(8, 512, -1, 1))
	first := device.Launch{K: ops.Fill, Out: p, Scalar: 2, N: 512}
	second := device.Launch{K: ops.Mul, Out: p, A: p, BKind: ops.BScalar, Scalar: 3, N: 512}
	if err := d.BeginCapture(device.SideStream); err != nil {
		t.Fatalf("BeginCapture: %v", err)
	}
	steps := []struct {
		name string
		do   func() error
	}{
		{"fill on side", func() error { return d.Launch(device.SideStream, &first) }},
		{"fork default", func() error { return d.WaitStream(device.DefaultStream, device.SideStream) }},
		{"mul on default", func() error { return d.Launch(device.DefaultStream, &second) }},
		{"join side", func() error { return d.WaitStream(device.SideStream, device.DefaultStream) }},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			d.EndCapture(device.SideStream)
			t.Fatalf("%s: %v", st.name, err)
		}
	}
	g, err := d.EndCapture(device.SideStream)
	if err != nil {
		t.Fatalf("EndCapture: %v", err)
	}
	nodes, err := d.GraphNodes(g)
	if err != nil {
		t.Fatalf("GraphNodes: %v", err)
	}
	for i, nd := range nodes {
		t.Logf("node %d: %s %s deps=%v", i, nd.Kind, nd.Name, nd.Deps)
	}
	if len(nodes) != 2 || nodes[0].Name != "cgtviz_fill" || nodes[1].Name != "cgtviz_mul_scalar" ||
		len(nodes[1].Deps) != 1 || nodes[1].Deps[0] != 0 {
		t.Errorf("graph = %+v, want fill then mul after it", nodes)
	}
	e, err := d.Instantiate(g)
	if err != nil {
		t.Fatalf("Instantiate: %v", err)
	}
	if err := d.LaunchGraph(e, device.SideStream); err != nil {
		t.Fatalf("LaunchGraph: %v", err)
	}
	if got := download(t, d, p, 512); got[0] != 6 || got[511] != 6 {
		t.Errorf("replay wrote %v ... %v, want 6", got[0], got[511])
	}
	for _, err := range []error{d.DestroyExec(e), d.DestroyGraph(g)} {
		if err != nil {
			t.Error(err)
		}
	}
}

// TestCaptureOtherGoroutine checks the thread rule of capture: EndCapture
// from a goroutine other than BeginCapture's fails and leaves the capture
// to its owner.
func TestCaptureOtherGoroutine(t *testing.T) {
	d := open(t)
	p := alloc(t, d, 64)
	if err := d.BeginCapture(device.SideStream); err != nil {
		t.Fatalf("BeginCapture: %v", err)
	}
	l := device.Launch{K: ops.Fill, Out: p, Scalar: 1, N: 64}
	if err := d.Launch(device.SideStream, &l); err != nil {
		t.Fatalf("Launch: %v", err)
	}
	errc := make(chan error)
	go func() {
		_, err := d.EndCapture(device.SideStream)
		errc <- err
	}()
	err := <-errc
	var ce *Error
	if !errors.As(err, &ce) || ce.Name != "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD" {
		t.Errorf("EndCapture from another goroutine: %v, want CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD", err)
	}
	g, err := d.EndCapture(device.SideStream)
	if err != nil {
		t.Fatalf("EndCapture from the capturing goroutine: %v", err)
	}
	if nodes, err := d.GraphNodes(g); err != nil || len(nodes) != 1 {
		t.Errorf("GraphNodes = %d nodes, %v; want the one fill", len(nodes), err)
	}
	if err := d.DestroyGraph(g); err != nil {
		t.Error(err)
	}
	if _, err := d.EndCapture(device.SideStream); err == nil {
		t.Error("EndCapture of a stream that is not capturing succeeded")
	}
	// The stream captures again.
	if err := d.BeginCapture(device.SideStream); err != nil {
		t.Fatalf("BeginCapture after the refused end: %v", err)
	}
	if err := d.Launch(device.SideStream, &l); err != nil {
		t.Fatalf("Launch: %v", err)
	}
	g, err = d.EndCapture(device.SideStream)
	if err != nil {
		t.Fatalf("EndCapture of the second capture: %v", err)
	}
	if err := d.DestroyGraph(g); err != nil {
		t.Error(err)
	}
}

// TestMallocDuringCapture: the graph pool grows during capture, as
// PyTorch's allocator does (relaxed mode around cuMemAlloc).
func TestMallocDuringCapture(t *testing.T) {
	d := open(t)
	if err := d.BeginCapture(device.SideStream); err != nil {
		t.Fatalf("BeginCapture: %v", err)
	}
	p, mallocErr := d.MallocSegment(1 << 20)
	var l device.Launch
	if mallocErr == nil {
		l = device.Launch{K: ops.Fill, Out: p, Scalar: 4, N: 1 << 18}
		if err := d.Launch(device.SideStream, &l); err != nil {
			t.Errorf("Launch: %v", err)
		}
	}
	g, err := d.EndCapture(device.SideStream)
	if mallocErr != nil {
		t.Fatalf("MallocSegment during capture: %v", mallocErr)
	}
	if err != nil {
		t.Fatalf("EndCapture after a malloc: %v", err)
	}
	e, err := d.Instantiate(g)
	if err != nil {
		t.Fatalf("Instantiate: %v", err)
	}
	if err := d.LaunchGraph(e, device.DefaultStream); err != nil {
		t.Fatalf("LaunchGraph: %v", err)
	}
	if got := download(t, d, p, 1<<18); got[0] != 4 || got[len(got)-1] != 4 {
		t.Errorf("replay of the fill wrote %v ... %v, want 4", got[0], got[len(got)-1])
	}
	for _, err := range []error{d.DestroyExec(e), d.DestroyGraph(g), d.FreeSegment(p)} {
		if err != nil {
			t.Error(err)
		}
	}
}

func TestOutOfMemory(t *testing.T) {
	d := open(t)
	_, err := d.MallocSegment(1 << 40)
	if !errors.Is(err, device.ErrOutOfMemory) {
		t.Fatalf("MallocSegment(1 TiB) = %v, want an error wrapping device.ErrOutOfMemory", err)
	}
	if !strings.Contains(err.Error(), "CUDA_ERROR_OUT_OF_MEMORY") {
		t.Errorf("error %q does not name the CUresult", err)
	}
	// The device still works.
	p := upload(t, d, values(4, 1000, -1, 1))
	l := device.Launch{K: ops.Fill, Out: p, Scalar: 9, N: 1000}
	if err := d.Launch(device.DefaultStream, &l); err != nil {
		t.Fatalf("Launch after OOM: %v", err)
	}
	if got := download(t, d, p, 1000); got[999] != 9 {
		t.Errorf("fill after OOM wrote %v, want 9", got[999])
	}
}

func TestErrorsNameTheCUresult(t *testing.T) {
	d := open(t)
	tests := []struct {
		name     string
		call     func() error
		wantName string // "" for any CUDA_ERROR_ name
	}{
		{"free of an address never allocated", func() error { return d.FreeSegment(0x1000) }, ""},
		{"malloc of 1 TiB", func() error { _, err := d.MallocSegment(1 << 40); return err }, "CUDA_ERROR_OUT_OF_MEMORY"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %v is not an *Error", err)
			}
			if !strings.HasPrefix(ce.Name, "CUDA_ERROR_") || (tt.wantName != "" && ce.Name != tt.wantName) {
				t.Errorf("CUresult name %q, want %q", ce.Name, tt.wantName)
			}
			if !strings.Contains(err.Error(), ce.Name) || !strings.Contains(err.Error(), strconv.Itoa(ce.Code)) {
				t.Errorf("message %q lacks the CUresult's name or number", err)
			}
			t.Logf("%v", err)
		})
	}
}

func TestMemInfo(t *testing.T) {
	d := open(t)
	free, total := d.MemInfo()
	if free <= 0 || total < free || total < 1<<30 {
		t.Fatalf("MemInfo = %d free of %d", free, total)
	}
	const size = 1 << 30
	alloc(t, d, size/4)
	after, total2 := d.MemInfo()
	if total2 != total {
		t.Errorf("total changed from %d to %d", total, total2)
	}
	if after > free-size+64<<20 {
		t.Errorf("free went from %d to %d after a 1 GiB segment", free, after)
	}
}

func TestInfoAndName(t *testing.T) {
	d := open(t)
	version, names, err := Info()
	if err != nil {
		t.Fatalf("Info: %v", err)
	}
	if version < 11000 {
		t.Errorf("driver version %d, want CUDA 11 or later", version)
	}
	if ord := ordinal(t); ord >= len(names) || !strings.HasSuffix(d.Name(), names[ord]) ||
		!strings.HasPrefix(d.Name(), fmt.Sprintf("cuda:%d ", ord)) {
		t.Errorf("Name() = %q, devices %q", d.Name(), names)
	}
	t.Logf("driver %d, devices %q, Name %q", version, names, d.Name())
}

func TestNewRejectsBadOrdinal(t *testing.T) {
	for _, ord := range []int{-1, 1 << 20} {
		if d, err := New(ord); err == nil {
			d.Close()
			t.Errorf("New(%d) succeeded", ord)
		}
	}
	if _, err := NewWithPTX(ordinal(t), ".version 7.8\n.target sm_75\n.address_size 64\n"); err == nil {
		t.Error("NewWithPTX with a module that lacks the kernels succeeded")
	}
}

func TestClosed(t *testing.T) {
	d, err := New(ordinal(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	l := device.Launch{K: ops.Fill, Out: 0x1000, N: 1}
	for name, err := range map[string]error{
		"Launch":      d.Launch(device.DefaultStream, &l),
		"Synchronize": d.Synchronize(),
		"CopyDtoD":    d.CopyDtoD(device.DefaultStream, 0x1000, 0x2000, 1),
		"LaunchGraph": d.LaunchGraph(1, device.DefaultStream),
	} {
		if !errors.Is(err, errClosed) {
			t.Errorf("%s on a closed device: %v", name, err)
		}
	}
	if _, err := d.MallocSegment(64); !errors.Is(err, errClosed) {
		t.Errorf("MallocSegment on a closed device: %v", err)
	}
}

// oneKernelGraph captures one small kernel on the side stream and
// instantiates it.
func oneKernelGraph(tb testing.TB, d *Device) device.ExecHandle {
	tb.Helper()
	p := alloc(tb, d, 256)
	l := device.Launch{K: ops.Add, Out: p, A: p, BKind: ops.BScalar, Scalar: 1, N: 256}
	if err := d.BeginCapture(device.SideStream); err != nil {
		tb.Fatal(err)
	}
	if err := d.Launch(device.SideStream, &l); err != nil {
		tb.Fatal(err)
	}
	g, err := d.EndCapture(device.SideStream)
	if err != nil {
		tb.Fatal(err)
	}
	e, err := d.Instantiate(g)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		for _, err := range []error{d.Synchronize(), d.DestroyExec(e), d.DestroyGraph(g)} {
			if err != nil {
				tb.Error(err)
			}
		}
	})
	return e
}

// TestHotPathAllocatesNothing: kernel launches, copies and graph launches,
// through the device.Device interface as the engine calls them, make no
// heap allocation.
func TestHotPathAllocatesNothing(t *testing.T) {
	d := open(t)
	var dev device.Device = d
	p := alloc(t, d, 1024)
	q := alloc(t, d, 1024)
	e := oneKernelGraph(t, d)
	launches := []*device.Launch{
		{K: ops.Mul, Out: p, A: p, B: q, BKind: ops.BTensor, N: 1024},
		{K: ops.Mul, Out: p, A: p, BKind: ops.BScalar, Scalar: 1, N: 1024},
		{K: ops.Exp, Out: q, A: p, N: 1024},
		{K: ops.Matmul, Out: q, A: p, B: p, M: 32, Kd: 32, Cols: 32},
		{K: ops.Sum, Out: q, A: p, N: 1024},
		{K: ops.Fill, Out: p, Scalar: 0, N: 1024},
	}
	for _, l := range launches {
		if n := testing.AllocsPerRun(200, func() {
			if err := dev.Launch(device.DefaultStream, l); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("Launch %s: %v allocations per launch", l.K, n)
		}
	}
	if n := testing.AllocsPerRun(200, func() {
		if err := dev.CopyDtoD(device.SideStream, p, q, 1024); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("CopyDtoD: %v allocations per copy", n)
	}
	if n := testing.AllocsPerRun(200, func() {
		if err := dev.LaunchGraph(e, device.SideStream); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("LaunchGraph: %v allocations per launch", n)
	}
	if err := d.Synchronize(); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkGraphLaunch replays a one-kernel graph: "bare" is cuGraphLaunch
// alone on a locked thread, "device" is LaunchGraph; "sync" waits for the
// replay after every launch.
func BenchmarkGraphLaunch(b *testing.B) {
	d := open(b)
	e := oneKernelGraph(b, d)
	cases := []struct {
		name   string
		launch func() error
		sync   func() error
	}{
		{"bare", func() error { return d.rawGraphLaunch(e, device.SideStream) }, nil},
		{"bare-sync", func() error { return d.rawGraphLaunch(e, device.SideStream) },
			func() error { return d.rawStreamSync(device.SideStream) }},
		{"device", func() error { return d.LaunchGraph(e, device.SideStream) }, nil},
		{"device-sync", func() error { return d.LaunchGraph(e, device.SideStream) },
			func() error { return d.rawStreamSync(device.SideStream) }},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			if err := d.bindThread(); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := c.launch(); err != nil {
					b.Fatal(err)
				}
				if c.sync != nil {
					if err := c.sync(); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.StopTimer()
			if err := d.Synchronize(); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkKernelLaunch launches one elementwise kernel per iteration, with
// and without a wait for it.
func BenchmarkKernelLaunch(b *testing.B) {
	d := open(b)
	p := alloc(b, d, 1024)
	l := device.Launch{K: ops.Add, Out: p, A: p, BKind: ops.BScalar, Scalar: 1, N: 1024}
	for _, sync := range []bool{false, true} {
		name := "nosync"
		if sync {
			name = "sync"
		}
		b.Run(name, func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			if err := d.bindThread(); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := d.Launch(device.DefaultStream, &l); err != nil {
					b.Fatal(err)
				}
				if sync {
					if err := d.rawStreamSync(device.DefaultStream); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.StopTimer()
			if err := d.Synchronize(); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkCopyDtoD is the copy of a replay's input into its static buffer.
func BenchmarkCopyDtoD(b *testing.B) {
	d := open(b)
	p, q := alloc(b, d, 1024), alloc(b, d, 1024)
	b.ReportAllocs()
	for b.Loop() {
		if err := d.CopyDtoD(device.SideStream, p, q, 1024); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if err := d.Synchronize(); err != nil {
		b.Fatal(err)
	}
}
