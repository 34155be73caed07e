package sim

import (
	"errors"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/cgtviz/cgtviz/tools/golden"

	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/engine/device/devicetest"
	"github.com/cgtviz/cgtviz/traces/ops"
)

const mib = 1 << 20

// state is everything observable about a device, in a form reflect.DeepEqual
// compares (contents as bit patterns, so NaN equals itself).
type state struct {
	Segs      []segState
	Used      int64
	Next      device.Ptr
	Graphs    map[device.GraphHandle][]string
	Execs     map[device.ExecHandle][]string
	NextGraph device.GraphHandle
	NextExec  device.ExecHandle
	Capture   [numStreams]capState
	Faults    []pending
	Calls     [numFaultOps]int
	Closed    bool
}

type segState struct {
	Addr device.Ptr
	Size int64
	Bits []uint32
}

type capState struct {
	Active bool
	Nodes  []string
}

func describe(nodes []node) []string {
	out := []string{}
	for i := range nodes {
		out = append(out, nodes[i].kindName()+" "+nodes[i].name()+" "+strings.Join(nodes[i].fields(), " "))
	}
	return out
}

// dump reads the state without going through the device's methods, so
// that reading changes nothing (no segment is materialized).
func dump(d *Device) state {
	st := state{
		Used: d.used, Next: d.next, NextGraph: d.nextGraph, NextExec: d.nextExec,
		Graphs: map[device.GraphHandle][]string{}, Execs: map[device.ExecHandle][]string{},
		Calls: d.calls, Closed: d.closed,
	}
	if len(d.faults) > 0 {
		st.Faults = slices.Clone(d.faults)
	}
	for _, s := range d.segs {
		// Trailing zeros are left out: an untouched segment (nil data)
		// and one that holds zeros read the same.
		data := segValues(d, &s)
		end := len(data)
		for end > 0 && math.Float32bits(data[end-1]) == 0 {
			end--
		}
		var bits []uint32
		for _, v := range data[:end] {
			bits = append(bits, math.Float32bits(v))
		}
		st.Segs = append(st.Segs, segState{Addr: s.addr, Size: s.size, Bits: bits})
	}
	d.graphs.each(func(h uint64, g *graph) { st.Graphs[device.GraphHandle(h)] = describe(g.nodes) })
	d.execs.each(func(h uint64, e *exec) { st.Execs[device.ExecHandle(h)] = describe(e.nodes) })
	for i, c := range d.capture {
		st.Capture[i] = capState{Active: c.active, Nodes: describe(c.nodes)}
	}
	return st
}

// sameExceptCalls compares two states, ignoring the call counters (which a
// failing call still advances).
func sameExceptCalls(t *testing.T, what string, before, after state) {
	t.Helper()
	before.Calls, after.Calls = [numFaultOps]int{}, [numFaultOps]int{}
	if !reflect.DeepEqual(before, after) {
		t.Fatalf("%s changed the state:\nbefore %+v\nafter  %+v", what, before, after)
	}
}

func malloc(t testing.TB, d *Device, size int64) device.Ptr {
	t.Helper()
	p, err := d.MallocSegment(size)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func write(t testing.TB, d *Device, p device.Ptr, v ...float32) {
	t.Helper()
	if err := d.CopyHtoD(p, v); err != nil {
		t.Fatal(err)
	}
}

func read(t testing.TB, d *Device, p device.Ptr, n int) []float32 {
	t.Helper()
	out := make([]float32, n)
	if err := d.CopyDtoH(out, p); err != nil {
		t.Fatal(err)
	}
	return out
}

func launch(t testing.TB, d *Device, s device.Stream, l device.Launch) {
	t.Helper()
	if err := d.Launch(s, &l); err != nil {
		t.Fatal(err)
	}
}

func wantErr(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got error %v, want one containing %q", err, want)
	}
}

// TestDevice runs the suite every device passes (engine/device/devicetest).
func TestDevice(t *testing.T) {
	devicetest.Run(t, func(t testing.TB) device.Device {
		d := New(Options{})
		t.Cleanup(func() {
			if err := d.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
		return d
	})
}

func TestNewDefaults(t *testing.T) {
	d := New(Options{})
	if d.Name() != "sim" {
		t.Errorf("Name() = %q, want sim", d.Name())
	}
	if free, total := d.MemInfo(); free != 80<<30 || total != 80<<30 {
		t.Errorf("MemInfo() = %d, %d; want 80 GiB free of 80 GiB", free, total)
	}
	d = New(Options{TotalBytes: 3 * mib, Name: "sim:1"})
	if free, total := d.MemInfo(); d.Name() != "sim:1" || free != 3*mib || total != 3*mib {
		t.Errorf("got %q %d/%d, want sim:1 3 MiB/3 MiB", d.Name(), free, total)
	}
}

func TestMallocAddresses(t *testing.T) {
	d := New(Options{TotalBytes: 100 * mib})
	sizes := []int64{1, 2 * mib, 2*mib + 4, 512, 6 * mib}
	want := []device.Ptr{0x7f0000000000, 0x7f0000200000, 0x7f0000400000, 0x7f0000800000, 0x7f0000a00000}
	var used int64
	for i, size := range sizes {
		p := malloc(t, d, size)
		if p != want[i] {
			t.Errorf("segment %d of %d B at 0x%x, want 0x%x", i, size, p, want[i])
		}
		used += size
	}
	if free, _ := d.MemInfo(); free != 100*mib-used {
		t.Errorf("free = %d, want %d", free, 100*mib-used)
	}
	// Freed ranges are not reused: the next segment goes after the last.
	if err := d.FreeSegment(want[1]); err != nil {
		t.Fatal(err)
	}
	if p := malloc(t, d, 4); p != 0x7f0001000000 {
		t.Errorf("after a free, got 0x%x, want 0x7f0001000000", p)
	}
	if free, _ := d.MemInfo(); free != 100*mib-used+2*mib-4 {
		t.Errorf("free = %d after free and malloc, want %d", free, 100*mib-used+2*mib-4)
	}
}

func TestMallocFreeErrors(t *testing.T) {
	d := New(Options{TotalBytes: 4 * mib})
	p := malloc(t, d, 3*mib)
	tests := []struct {
		name string
		call func() error
		want string
		oom  bool
	}{
		{"zero size", func() error { _, err := d.MallocSegment(0); return err }, "malloc_segment 0 B: size must be positive", false},
		{"negative size", func() error { _, err := d.MallocSegment(-8); return err }, "size must be positive", false},
		{"out of memory", func() error { _, err := d.MallocSegment(2 * mib); return err },
			"sim: malloc_segment 2097152 B: only 1048576 B free of 4194304 B: out of memory", true},
		{"free unknown", func() error { return d.FreeSegment(0x1000) }, "free_segment 0x1000: not a live segment", false},
		{"free inside", func() error { return d.FreeSegment(p + 64) }, "free_segment 0x7f0000000040: inside segment 0x7f0000000000, not its start", false},
		{"free past the end", func() error { return d.FreeSegment(p + 3*mib) }, "not a live segment", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := dump(d)
			err := tt.call()
			wantErr(t, err, tt.want)
			if got := errors.Is(err, device.ErrOutOfMemory); got != tt.oom {
				t.Errorf("errors.Is(err, ErrOutOfMemory) = %v, want %v", got, tt.oom)
			}
			sameExceptCalls(t, tt.name, before, dump(d))
		})
	}
	if err := d.FreeSegment(p); err != nil {
		t.Fatal(err)
	}
	wantErr(t, d.FreeSegment(p), "not a live segment") // double free
	// The whole budget is back.
	malloc(t, d, 4*mib)
}

func TestLaunchErrors(t *testing.T) {
	d := New(Options{})
	p := malloc(t, d, 4096)  // 0x7f0000000000
	q := malloc(t, d, 64)    // 0x7f0000200000
	gone := malloc(t, d, 64) // 0x7f0000400000, freed below
	if err := d.FreeSegment(gone); err != nil {
		t.Fatal(err)
	}
	write(t, d, p, 1, 2, 3, 4)
	write(t, d, q, 5, 6, 7, 8)
	add := func(out, a, b device.Ptr, n int64) *device.Launch {
		return &device.Launch{K: ops.Add, Out: out, A: a, B: b, N: n}
	}
	tests := []struct {
		name string
		s    device.Stream
		l    *device.Launch
		want string
	}{
		{"a not live", 0, add(p, 0x7f0000600000, p, 4), "sim: launch add: a 0x7f0000600000+16 B: not in any live segment"},
		{"a in the gap after a segment", 0, add(p, q+64, p, 4), "a 0x7f0000200040+16 B: not in any live segment"},
		{"below the first segment", 0, add(0x1000, p, p, 4), "out 0x1000+16 B: not in any live segment"},
		{"freed segment", 0, add(gone, p, p, 4), "out 0x7f0000400000+16 B: not in any live segment"},
		{"misaligned", 0, add(p+2, p, p, 1), "out 0x7f0000000002+4 B: not aligned to 4 bytes"},
		{"past the end", 0, add(p, q+60, q, 2), "a 0x7f000020003c+8 B: runs past the end of segment 0x7f0000200000 (64 B)"},
		{"b past the end", 0, add(p, p, q, 17), "b 0x7f0000200000+68 B: runs past the end"},
		{"negative n", 0, add(p, p, p, -1), "negative element count -1"},
		{"broadcast b not live", 0, &device.Launch{K: ops.Add, Out: p, A: p, B: 8, BKind: ops.BBroadcast, N: 4}, "b 0x8+4 B: not in any live segment"},
		{"unknown b form", 0, &device.Launch{K: ops.Add, Out: p, A: p, BKind: 9, N: 4}, "unknown form of b (9)"},
		{"unknown kernel", 0, &device.Launch{K: 200, Out: p, N: 1}, "unknown kernel 200"},
		{"invalid kernel", 0, &device.Launch{K: ops.Invalid, Out: p, N: 1}, "sim: launch invalid: unknown kernel 0"},
		{"sum out not live", 0, &device.Launch{K: ops.Sum, Out: 4, A: p, N: 4}, "out 0x4+4 B"},
		{"matmul out is a", 0, &device.Launch{K: ops.Matmul, Out: p, A: p, B: q, M: 2, Kd: 2, Cols: 2}, "out 0x7f0000000000+16 B overlaps a 0x7f0000000000+16 B"},
		{"matmul out overlaps b", 0, &device.Launch{K: ops.Matmul, Out: q, A: p, B: q + 8, M: 2, Kd: 2, Cols: 2}, "overlaps b"},
		{"matmul negative", 0, &device.Launch{K: ops.Matmul, Out: q, A: p, B: p, M: -1, Kd: 2, Cols: 2}, "negative size"},
		{"matmul overflow", 0, &device.Launch{K: ops.Matmul, Out: q, A: p, B: p, M: 1 << 40, Kd: 1 << 40, Cols: 1}, "overflow"},
		{"matmul b short", 0, &device.Launch{K: ops.Matmul, Out: q, A: p, B: p + 4096 - 8, M: 2, Kd: 2, Cols: 2}, "b 0x7f0000000ff8+16 B: runs past the end"},
		{"fill past the end", 0, &device.Launch{K: ops.Fill, Out: q, N: 17}, "out 0x7f0000200000+68 B: runs past the end"},
		{"bad stream", 2, add(p, p, p, 4), "sim: launch add: stream 2 does not exist"},
		{"negative stream", -1, add(p, p, p, 4), "stream -1 does not exist"},
		{"nil launch", 0, nil, "sim: launch: nil launch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := dump(d)
			wantErr(t, d.Launch(tt.s, tt.l), tt.want)
			sameExceptCalls(t, tt.name, before, dump(d))
		})
	}
}

func TestCopies(t *testing.T) {
	d := New(Options{})
	p := malloc(t, d, 64)
	if got := read(t, d, p, 3); !reflect.DeepEqual(got, []float32{0, 0, 0}) {
		t.Fatalf("untouched segment reads %v, want zeros", got)
	}
	if len(d.segs[0].ext) != 0 {
		t.Fatal("reading an untouched segment gave it memory")
	}
	write(t, d, p, 1, 2, 3, 4, 5)
	if err := d.CopyDtoD(device.DefaultStream, p+8, p, 3); err != nil { // overlapping: memmove
		t.Fatal(err)
	}
	if got := read(t, d, p, 5); !reflect.DeepEqual(got, []float32{1, 2, 1, 2, 3}) {
		t.Fatalf("overlapping DtoD gave %v, want [1 2 1 2 3]", got)
	}
	tests := []struct {
		name string
		call func() error
		want string
	}{
		{"HtoD not live", func() error { return d.CopyHtoD(0x40, []float32{1}) }, "sim: copy HtoD: dst 0x40+4 B: not in any live segment"},
		{"HtoD past end", func() error { return d.CopyHtoD(p+60, []float32{1, 2}) }, "dst 0x7f000000003c+8 B: runs past the end of segment 0x7f0000000000 (64 B)"},
		{"DtoH misaligned", func() error { return d.CopyDtoH(make([]float32, 1), p+1) }, "sim: copy DtoH: src 0x7f0000000001+4 B: not aligned"},
		{"DtoD src", func() error { return d.CopyDtoD(0, p, 0x7f0000000040, 1) }, "sim: copy DtoD: src 0x7f0000000040+4 B: not in any live segment"},
		{"DtoD dst", func() error { return d.CopyDtoD(0, p+64, p, 1) }, "dst 0x7f0000000040+4 B: not in any live segment"},
		{"DtoD negative", func() error { return d.CopyDtoD(0, p, p, -2) }, "negative element count -2"},
		{"DtoD stream", func() error { return d.CopyDtoD(7, p, p, 1) }, "sim: copy DtoD: stream 7 does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := dump(d)
			wantErr(t, tt.call(), tt.want)
			sameExceptCalls(t, tt.name, before, dump(d))
		})
	}
	// Empty copies touch nothing and need no address.
	if err := d.CopyHtoD(0, nil); err != nil {
		t.Errorf("empty HtoD: %v", err)
	}
	if err := d.CopyDtoH(nil, 0); err != nil {
		t.Errorf("empty DtoH: %v", err)
	}
}

// TestCaptureReplay checks that a replay reruns the captured kernels on the
// same addresses: new inputs give new outputs at the old output address.
func TestCaptureReplay(t *testing.T) {
	d := New(Options{})
	in := malloc(t, d, 64)
	pool := malloc(t, d, 64) // the graph's private pool
	tmp, out := pool, pool+16
	write(t, d, in, 1, 2, 3, 4)

	if err := d.BeginCapture(device.SideStream); err != nil {
		t.Fatal(err)
	}
	// Relaxed mode: a malloc and a synchronous copy are allowed while
	// capturing, and the copy is not recorded.
	extra := malloc(t, d, 64)
	write(t, d, extra, 9)
	launch(t, d, device.SideStream, device.Launch{K: ops.Mul, Out: tmp, A: in, BKind: ops.BScalar, Scalar: 2, N: 4})
	launch(t, d, device.SideStream, device.Launch{K: ops.Add, Out: out, A: tmp, B: in, BKind: ops.BBroadcast, N: 4})
	if err := d.CopyDtoD(device.SideStream, extra, out, 4); err != nil {
		t.Fatal(err)
	}
	// A launch on the other stream is not captured: it runs now.
	launch(t, d, device.DefaultStream, device.Launch{K: ops.Fill, Out: extra + 32, Scalar: 5, N: 1})
	g, err := d.EndCapture(device.SideStream)
	if err != nil {
		t.Fatal(err)
	}
	// Capturing ran nothing.
	if got := read(t, d, out, 4); !reflect.DeepEqual(got, []float32{0, 0, 0, 0}) {
		t.Fatalf("capture wrote the output: %v", got)
	}
	if got := read(t, d, extra, 1); got[0] != 9 {
		t.Fatalf("extra holds %v, want the synchronous copy's 9", got)
	}
	if got := read(t, d, extra+32, 1); got[0] != 5 {
		t.Fatalf("the uncaptured stream's fill did not run: %v", got)
	}
	e, err := d.Instantiate(g)
	if err != nil {
		t.Fatal(err)
	}
	replay := func(want ...float32) {
		t.Helper()
		if err := d.LaunchGraph(e, device.DefaultStream); err != nil {
			t.Fatal(err)
		}
		if got := read(t, d, out, 4); !reflect.DeepEqual(got, want) {
			t.Fatalf("out = %v, want %v", got, want)
		}
		if got := read(t, d, extra, 4); !reflect.DeepEqual(got, want) {
			t.Fatalf("the memcpy node copied %v, want %v", got, want)
		}
	}
	replay(3, 5, 7, 9) // 2*in + in[0]
	write(t, d, in, 10, 20, 30, 40)
	replay(30, 50, 70, 90)
	// The graph outlives DestroyGraph through its exec.
	if err := d.DestroyGraph(g); err != nil {
		t.Fatal(err)
	}
	write(t, d, in, 0, 1, 0, 1)
	replay(0, 2, 0, 2)
	if err := d.DestroyExec(e); err != nil {
		t.Fatal(err)
	}
	wantErr(t, d.LaunchGraph(e, 0), "sim: launch_graph: no exec 1")
}

func TestCaptureErrors(t *testing.T) {
	d := New(Options{})
	p := malloc(t, d, 64)
	q := malloc(t, d, 64)
	write(t, d, p, 1, 2)
	_, e := captureOne(t, d, 0, device.Launch{K: ops.Add, Out: q, A: p, B: p, N: 2})
	if err := d.BeginCapture(1); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		call func() error
		want string
	}{
		{"begin twice", func() error { return d.BeginCapture(1) }, "sim: begin_capture: stream 1 is already capturing"},
		{"begin bad stream", func() error { return d.BeginCapture(3) }, "begin_capture: stream 3 does not exist"},
		{"end not capturing", func() error { _, err := d.EndCapture(0); return err }, "sim: end_capture: stream 0 is not capturing"},
		{"end bad stream", func() error { _, err := d.EndCapture(-2); return err }, "stream -2 does not exist"},
		{"instantiate unknown", func() error { _, err := d.Instantiate(99); return err }, "sim: instantiate: no graph 99"},
		{"launch unknown exec", func() error { return d.LaunchGraph(42, 0) }, "sim: launch_graph: no exec 42"},
		{"launch on capturing stream", func() error { return d.LaunchGraph(e, 1) }, "sim: launch_graph exec 1: stream 1 is capturing"},
		{"launch bad stream", func() error { return d.LaunchGraph(e, 5) }, "stream 5 does not exist"},
		{"captured launch checked", func() error {
			return d.Launch(1, &device.Launch{K: ops.Neg, Out: 0x10, A: p, N: 1})
		}, "sim: launch neg: out 0x10+4 B: not in any live segment"},
		{"nodes unknown", func() error { _, err := d.GraphNodes(7); return err }, "sim: graph_nodes: no graph 7"},
		{"dot unknown", func() error { _, err := d.GraphDOT(7); return err }, "sim: graph_dot: no graph 7"},
		{"destroy graph unknown", func() error { return d.DestroyGraph(7) }, "sim: destroy_graph: no graph 7"},
		{"destroy exec unknown", func() error { return d.DestroyExec(7) }, "sim: destroy_exec: no exec 7"},
		{"synchronize while capturing", d.Synchronize, "sim: synchronize: stream 1 is capturing"},
		{"wait bad stream", func() error { return d.WaitStream(0, 2) }, "sim: wait_stream: stream 2 does not exist"},
		{"wait bad stream first", func() error { return d.WaitStream(9, 0) }, "stream 9 does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := dump(d)
			wantErr(t, tt.call(), tt.want)
			sameExceptCalls(t, tt.name, before, dump(d))
		})
	}
	if err := d.WaitStream(1, 0); err != nil {
		t.Errorf("WaitStream(1, 0) while capturing: %v", err)
	}
	if _, err := d.EndCapture(1); err != nil {
		t.Fatal(err)
	}
	if err := d.Synchronize(); err != nil {
		t.Errorf("Synchronize after the capture ended: %v", err)
	}

	// A replay whose segment was freed writes nothing, even through the
	// nodes before the bad one.
	r := malloc(t, d, 64)
	gone := malloc(t, d, 64)
	if err := d.BeginCapture(0); err != nil {
		t.Fatal(err)
	}
	launch(t, d, 0, device.Launch{K: ops.Fill, Out: r, Scalar: 1, N: 4})
	launch(t, d, 0, device.Launch{K: ops.Fill, Out: gone, Scalar: 2, N: 4})
	g2, err := d.EndCapture(0)
	if err != nil {
		t.Fatal(err)
	}
	e2, err := d.Instantiate(g2)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.FreeSegment(gone); err != nil {
		t.Fatal(err)
	}
	before := dump(d)
	wantErr(t, d.LaunchGraph(e2, 0), "sim: launch_graph exec 2: node 1 (fill): out 0x7f0000600000+16 B: not in any live segment")
	sameExceptCalls(t, "a replay over a freed segment", before, dump(d))
}

func TestGraphNodes(t *testing.T) {
	d := New(Options{})
	p := malloc(t, d, 4096)
	if err := d.BeginCapture(1); err != nil {
		t.Fatal(err)
	}
	launch(t, d, 1, device.Launch{K: ops.Add, Out: p + 0x200, A: p, BKind: ops.BScalar, Scalar: 2, N: 4})
	launch(t, d, 1, device.Launch{K: ops.Max, Out: p + 0x300, A: p, B: p + 0x100, BKind: ops.BBroadcast, N: 4})
	launch(t, d, 1, device.Launch{K: ops.Matmul, Out: p + 0x400, A: p, B: p + 0x100, M: 2, Kd: 3, Cols: 4})
	if err := d.CopyDtoD(1, p+0x500, p+0x400, 8); err != nil {
		t.Fatal(err)
	}
	launch(t, d, 1, device.Launch{K: ops.Fill, Out: p + 0x600, Scalar: 0.5, N: 2})
	launch(t, d, 1, device.Launch{K: ops.Sum, Out: p + 0x700, A: p, N: 4})
	g, err := d.EndCapture(1)
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.GraphNodes(g)
	if err != nil {
		t.Fatal(err)
	}
	want := []device.GraphNode{
		{Kind: "kernel", Name: "add", Detail: "out=0x7f0000000200 a=0x7f0000000000 b=2 n=4"},
		{Kind: "kernel", Name: "max", Deps: []int{0}, Detail: "out=0x7f0000000300 a=0x7f0000000000 b=0x7f0000000100[0] n=4"},
		{Kind: "kernel", Name: "matmul", Deps: []int{1}, Detail: "out=0x7f0000000400 a=0x7f0000000000 b=0x7f0000000100 m=2 k=3 n=4"},
		{Kind: "memcpy", Name: "DtoD", Deps: []int{2}, Detail: "dst=0x7f0000000500 src=0x7f0000000400 n=8"},
		{Kind: "kernel", Name: "fill", Deps: []int{3}, Detail: "out=0x7f0000000600 value=0.5 n=2"},
		{Kind: "kernel", Name: "sum", Deps: []int{4}, Detail: "out=0x7f0000000700 a=0x7f0000000000 n=4"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("GraphNodes:\ngot  %+v\nwant %+v", got, want)
	}

	dot, err := d.GraphDOT(g)
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "graph.dot", dot)

	// An empty capture is an empty graph.
	if err := d.BeginCapture(0); err != nil {
		t.Fatal(err)
	}
	empty, err := d.EndCapture(0)
	if err != nil {
		t.Fatal(err)
	}
	if nodes, err := d.GraphNodes(empty); err != nil || len(nodes) != 0 {
		t.Fatalf("empty graph: %v nodes, error %v", nodes, err)
	}
	e, err := d.Instantiate(empty)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.LaunchGraph(e, 0); err != nil {
		t.Fatal(err)
	}
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", name), []byte(got))
}

func TestRecordEscape(t *testing.T) {
	if got, want := recordEscape(`a{b}|<c>"\`), `a\{b\}\|\<c\>\"\\`; got != want {
		t.Fatalf("recordEscape = %s, want %s", got, want)
	}
}

// script drives a device through every kind of call and returns what it
// saw; it stops at the first error, which it returns with the step's index.
type script struct {
	p, q, r device.Ptr
	g       device.GraphHandle
	e       device.ExecHandle
	host    []float32
}

func (sc *script) steps() []func(d *Device) error {
	return []func(d *Device) error{
		func(d *Device) (err error) { sc.p, err = d.MallocSegment(4096); return },
		func(d *Device) (err error) { sc.q, err = d.MallocSegment(2*mib + 4); return },
		func(d *Device) error { return d.CopyHtoD(sc.p, []float32{1, 2, 3, 4}) },
		func(d *Device) error {
			return d.Launch(0, &device.Launch{K: ops.Add, Out: sc.q, A: sc.p, B: sc.p, N: 4})
		},
		func(d *Device) error { return d.BeginCapture(1) },
		func(d *Device) error {
			return d.Launch(1, &device.Launch{K: ops.Mul, Out: sc.q, A: sc.q, BKind: ops.BScalar, Scalar: 3, N: 4})
		},
		func(d *Device) error { return d.CopyDtoD(1, sc.p+16, sc.q, 4) },
		func(d *Device) (err error) { sc.g, err = d.EndCapture(1); return },
		func(d *Device) (err error) { sc.e, err = d.Instantiate(sc.g); return },
		func(d *Device) error { return d.LaunchGraph(sc.e, 0) },
		func(d *Device) error { return d.LaunchGraph(sc.e, 0) },
		func(d *Device) error { sc.host = make([]float32, 8); return d.CopyDtoH(sc.host, sc.p) },
		func(d *Device) (err error) { sc.r, err = d.MallocSegment(12); return },
		func(d *Device) error { return d.CopyDtoD(0, sc.r, sc.p, 3) },
		func(d *Device) error { return d.FreeSegment(sc.q) },
	}
}

func TestDeterminism(t *testing.T) {
	d1, d2 := New(Options{}), New(Options{})
	var s1, s2 script
	for i, step := range s1.steps() {
		if err := step(d1); err != nil {
			t.Fatalf("device 1 step %d: %v", i, err)
		}
	}
	for i, step := range s2.steps() {
		if err := step(d2); err != nil {
			t.Fatalf("device 2 step %d: %v", i, err)
		}
	}
	if !reflect.DeepEqual(dump(d1), dump(d2)) || !reflect.DeepEqual(s1, s2) {
		t.Fatalf("two devices given the same calls differ:\n%+v %+v\n%+v %+v", dump(d1), s1, dump(d2), s2)
	}
	// The script's values, worked by hand: q = 2p = [2 4 6 8], two replays
	// of q *= 3 and p[4:8] = q: q = [18 36 54 72].
	if want := []float32{1, 2, 3, 4, 18, 36, 54, 72}; !reflect.DeepEqual(s1.host, want) {
		t.Fatalf("host copy %v, want %v", s1.host, want)
	}
	if s1.r != 0x7f0000600000 {
		t.Fatalf("third segment at 0x%x, want 0x7f0000600000", s1.r)
	}
}

// TestFaultInjection fails every counted call of the script in turn and
// checks that the failing call changed nothing but its counter.
func TestFaultInjection(t *testing.T) {
	var clean script
	ref := New(Options{})
	for _, step := range clean.steps() {
		if err := step(ref); err != nil {
			t.Fatal(err)
		}
	}
	for op := FaultMalloc; op < numFaultOps; op++ {
		if ref.Calls(op) == 0 {
			t.Fatalf("the script never calls %s", op)
		}
		for n := 1; n <= ref.Calls(op); n++ {
			t.Run(op.String()+"/"+strconv.Itoa(n), func(t *testing.T) {
				d := New(Options{})
				if err := d.InjectFault(op, n); err != nil {
					t.Fatal(err)
				}
				var sc script
				for i, step := range sc.steps() {
					before := dump(d)
					calls := d.Calls(op)
					err := step(d)
					if err == nil {
						continue
					}
					if !errors.Is(err, ErrInjected) {
						t.Fatalf("step %d: %v, want an injected fault", i, err)
					}
					if want := "sim: injected fault: " + op.String() + " call " + strconv.Itoa(n); !strings.HasPrefix(err.Error(), want) {
						t.Fatalf("step %d: %q, want it to start %q", i, err, want)
					}
					if got := errors.Is(err, device.ErrOutOfMemory); got != (op == FaultMalloc) {
						t.Fatalf("errors.Is(ErrOutOfMemory) = %v for %s", got, op)
					}
					var fe *FaultError
					if !errors.As(err, &fe) || fe.Op != op || fe.Call != n {
						t.Fatalf("FaultError = %+v, want op %s call %d", fe, op, n)
					}
					if d.Calls(op) != calls+1 || calls+1 != n {
						t.Fatalf("calls of %s: %d before, %d after; fault at %d", op, calls, d.Calls(op), n)
					}
					after := dump(d)
					before.Faults = nil // the fault fired: it is no longer pending
					sameExceptCalls(t, "the failing call", before, after)
					return
				}
				t.Fatalf("the fault at %s call %d never fired", op, n)
			})
		}
	}
}

func TestFaultInjectionSeveral(t *testing.T) {
	d := New(Options{})
	for _, f := range []struct {
		op FaultOp
		n  int
	}{{FaultMalloc, 2}, {FaultMalloc, 3}, {FaultMalloc, 2}, {FaultCopy, 1}} {
		if err := d.InjectFault(f.op, f.n); err != nil {
			t.Fatal(err)
		}
	}
	if len(d.faults) != 3 {
		t.Fatalf("%d pending faults, want 3 (a duplicate is one)", len(d.faults))
	}
	var errs []string
	for range 4 {
		_, err := d.MallocSegment(64)
		errs = append(errs, errString(err))
	}
	want := []string{"", "sim: injected fault: malloc_segment call 2 (out of memory)", "sim: injected fault: malloc_segment call 3 (out of memory)", ""}
	if !reflect.DeepEqual(errs, want) {
		t.Fatalf("malloc results %q, want %q", errs, want)
	}
	if d.Calls(FaultMalloc) != 4 || d.Calls(FaultLaunch) != 0 {
		t.Fatalf("calls: malloc %d launch %d", d.Calls(FaultMalloc), d.Calls(FaultLaunch))
	}
	wantErr(t, d.CopyHtoD(BaseAddress, []float32{1}), "sim: injected fault: copy call 1")
	if err := d.InjectFault(numFaultOps, 1); err == nil {
		t.Error("InjectFault of an unknown op succeeded")
	}
	wantErr(t, d.InjectFault(FaultLaunch, 0), "sim: inject_fault launch: call 0: must be 1")
	if d.Calls(numFaultOps) != 0 {
		t.Error("Calls of an unknown op is not 0")
	}
	if got := FaultOp(9).String(); got != "fault_op(9)" {
		t.Errorf("FaultOp(9).String() = %q", got)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestSnapshotRestore(t *testing.T) {
	d := New(Options{TotalBytes: 64 * mib})
	var sc script
	steps := sc.steps()
	for _, step := range steps[:9] { // segments, a graph, an exec
		if err := step(d); err != nil {
			t.Fatal(err)
		}
	}
	untouched := malloc(t, d, 64)
	if err := d.BeginCapture(0); err != nil {
		t.Fatal(err)
	}
	launch(t, d, 0, device.Launch{K: ops.Neg, Out: sc.q, A: sc.q, N: 2})
	if err := d.InjectFault(FaultGraphLaunch, 5); err != nil {
		t.Fatal(err)
	}
	before := dump(d)
	snap := d.Snapshot()
	if !reflect.DeepEqual(before, dump(d)) {
		t.Fatal("Snapshot changed the state")
	}

	// Mutate everything.
	launch(t, d, 0, device.Launch{K: ops.Exp, Out: sc.q, A: sc.q, N: 2}) // captured
	if _, err := d.EndCapture(0); err != nil {
		t.Fatal(err)
	}
	if err := d.WaitStream(1, 0); err != nil { // (the script's add wrote q on stream 0)
		t.Fatal(err)
	}
	if err := d.LaunchGraph(sc.e, 1); err != nil {
		t.Fatal(err)
	}
	write(t, d, sc.p, 9, 9, 9)
	write(t, d, untouched, 5)
	if err := d.CopyDtoD(0, sc.q+64, sc.p, 2); err != nil {
		t.Fatal(err)
	}
	malloc(t, d, 1*mib)
	if err := d.FreeSegment(sc.p); err != nil {
		t.Fatal(err)
	}
	if err := d.DestroyGraph(sc.g); err != nil {
		t.Fatal(err)
	}
	if err := d.DestroyExec(sc.e); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Instantiate(1); err == nil {
		t.Fatal("instantiate of a destroyed graph succeeded")
	}
	if err := d.InjectFault(FaultCopy, 1); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(before, dump(d)) {
		t.Fatal("the mutations changed nothing: the test would pass without Restore")
	}

	if err := d.Restore(snap); err != nil {
		t.Fatal(err)
	}
	if after := dump(d); !reflect.DeepEqual(before, after) {
		t.Fatalf("restore differs:\nbefore %+v\nafter  %+v", before, after)
	}
	// The restored device works on: the capture continues, the graph
	// replays, and a second restore of the same snapshot gives the same.
	launch(t, d, 0, device.Launch{K: ops.Abs, Out: sc.q, A: sc.q, N: 2})
	if _, err := d.EndCapture(0); err != nil {
		t.Fatal(err)
	}
	if err := d.LaunchGraph(sc.e, 1); err != nil {
		t.Fatal(err)
	}
	if err := d.Restore(snap); err != nil {
		t.Fatal(err)
	}
	if after := dump(d); !reflect.DeepEqual(before, after) {
		t.Fatalf("second restore differs:\nbefore %+v\nafter  %+v", before, after)
	}
	// Restored pending faults and counters fire as before: the graph
	// launch fault is 5 calls after the snapshot's count.
	for i := range 4 {
		if err := d.LaunchGraph(sc.e, 1); err != nil {
			t.Fatalf("replay %d: %v", i, err)
		}
	}
	wantErr(t, d.LaunchGraph(sc.e, 1), "sim: injected fault: graph_launch call 5")
}

// TestSnapshotCOW checks that a snapshot keeps its contents while the
// device writes on, read from another goroutine so that -race sees any
// write to shared memory.
func TestSnapshotCOW(t *testing.T) {
	d := New(Options{})
	var segs []device.Ptr
	for i := range 4 {
		p := malloc(t, d, 64)
		write(t, d, p, float32(i), float32(i), float32(i))
		segs = append(segs, p)
	}
	snap := d.Snapshot().(*snapshot)
	want := dumpSnap(snap)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if got := dumpSnap(snap); !reflect.DeepEqual(got, want) {
				t.Errorf("snapshot changed while the device ran")
				return
			}
		}
	}()
	for i := range 200 {
		p := segs[i%len(segs)]
		launch(t, d, 0, device.Launch{K: ops.Add, Out: p, A: p, BKind: ops.BScalar, Scalar: 1, N: 3})
		write(t, d, p+32, float32(i))
		if i == 100 {
			// A second snapshot in the middle: the first stays intact,
			// and the device copies again before writing.
			d.Snapshot()
		}
	}
	close(stop)
	wg.Wait()
	if got := dumpSnap(snap); !reflect.DeepEqual(got, want) {
		t.Fatal("snapshot changed by later writes")
	}
	// After its first write following a snapshot, a segment owns its data
	// again: later writes do not copy it.
	for i := range d.segs {
		if d.segs[i].gen != d.gen {
			t.Errorf("segment %d not owned after writes", i)
		}
	}
}

func dumpSnap(s *snapshot) [][]float32 {
	var out [][]float32
	for _, seg := range s.segs {
		out = append(out, segValues(s.dev, &seg))
	}
	return out
}

func TestRestoreErrors(t *testing.T) {
	d := New(Options{})
	other := New(Options{Name: "other"})
	p := malloc(t, d, 64)
	good := d.Snapshot()
	wantErr(t, d.Restore("nope"), "sim: restore: string is not a snapshot of a sim device")
	wantErr(t, d.Restore((*snapshot)(nil)), "is not a snapshot")
	wantErr(t, d.Restore(other.Snapshot()), "sim: restore: the snapshot is of another device (other)")
	wantErr(t, d.Restore(42), "sim: restore: int is not a snapshot")
	for name, err := range map[string]error{
		"malloc": func() error { _, err := d.MallocSegment(4); return err }(),
		"launch": d.Launch(0, &device.Launch{K: ops.Fill, Out: p, N: 1}),
		"sync":   d.Synchronize(),
	} {
		if err == nil || !strings.Contains(err.Error(), "int is not a snapshot") {
			t.Errorf("%s after a bad Restore: %v", name, err)
		}
	}
	if err := d.Restore(good); err != nil {
		t.Fatal(err)
	}
	if err := d.Launch(0, &device.Launch{K: ops.Fill, Out: p, N: 1}); err != nil {
		t.Fatalf("after a good Restore: %v", err)
	}
}

func TestClose(t *testing.T) {
	d := New(Options{})
	p := malloc(t, d, 64)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	calls := map[string]error{
		"malloc":   func() error { _, err := d.MallocSegment(4); return err }(),
		"free":     d.FreeSegment(p),
		"launch":   d.Launch(0, &device.Launch{K: ops.Fill, Out: p, N: 1}),
		"htod":     d.CopyHtoD(p, []float32{1}),
		"dtoh":     d.CopyDtoH(make([]float32, 1), p),
		"dtod":     d.CopyDtoD(0, p, p, 1),
		"wait":     d.WaitStream(0, 1),
		"begin":    d.BeginCapture(0),
		"end":      func() error { _, err := d.EndCapture(0); return err }(),
		"inst":     func() error { _, err := d.Instantiate(1); return err }(),
		"replay":   d.LaunchGraph(1, 0),
		"nodes":    func() error { _, err := d.GraphNodes(1); return err }(),
		"dot":      func() error { _, err := d.GraphDOT(1); return err }(),
		"destroyg": d.DestroyGraph(1),
		"destroye": d.DestroyExec(1),
		"sync":     d.Synchronize(),
	}
	if err := d.Close(); err != nil {
		t.Errorf("second Close: %v, want none (closing twice is a no-op)", err)
	}
	for name, err := range calls {
		if !errors.Is(err, errClosed) {
			t.Errorf("%s on a closed device: %v, want %v", name, err, errClosed)
		}
	}
	if free, total := d.MemInfo(); free != total {
		t.Errorf("closed device: %d of %d B free", free, total)
	}
}

func threeNodeGraph(t testing.TB, d *Device) (device.GraphHandle, device.ExecHandle) {
	t.Helper()
	p := malloc(t, d, 256)
	write(t, d, p, 1, 2, 3, 4)
	if err := d.BeginCapture(1); err != nil {
		t.Fatal(err)
	}
	launch(t, d, 1, device.Launch{K: ops.Mul, Out: p + 64, A: p, B: p, N: 4})
	launch(t, d, 1, device.Launch{K: ops.Relu, Out: p + 128, A: p + 64, N: 4})
	if err := d.CopyDtoD(1, p+192, p+128, 4); err != nil {
		t.Fatal(err)
	}
	return endCapture(t, d, 1)
}

func BenchmarkLaunchAdd4(b *testing.B) {
	d := New(Options{})
	p := malloc(b, d, 64)
	write(b, d, p, 1, 2, 3, 4)
	l := device.Launch{K: ops.Add, Out: p + 32, A: p, B: p + 16, N: 4}
	b.ReportAllocs()
	for b.Loop() {
		if err := d.Launch(device.DefaultStream, &l); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLaunchGraph(b *testing.B) {
	d := New(Options{})
	_, e := threeNodeGraph(b, d)
	b.ReportAllocs()
	for b.Loop() {
		if err := d.LaunchGraph(e, device.DefaultStream); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSnapshot(b *testing.B) {
	d := New(Options{})
	for range 10 {
		p := malloc(b, d, 2*mib)
		write(b, d, p, 1, 2, 3)
	}
	b.ReportAllocs()
	for b.Loop() {
		d.Snapshot()
	}
}

// BenchmarkSnapshotWriteRestore is the engine's pattern around a risky
// record: snapshot, write one segment (which copies it), restore.
func BenchmarkSnapshotWriteRestore(b *testing.B) {
	benchWriteBack(b, (*Device).Snapshot, (*Device).Restore)
}

// benchWriteBack times save, a write into one of ten 64 KiB segments, and
// back to what save kept.
func benchWriteBack(b *testing.B, save func(*Device) any, back func(*Device, any) error) {
	d := New(Options{})
	var p device.Ptr
	for range 10 {
		p = malloc(b, d, 64*1024)
		write(b, d, p, 1, 2, 3)
	}
	l := device.Launch{K: ops.Add, Out: p, A: p, B: p, N: 4}
	b.ReportAllocs()
	for b.Loop() {
		kept := save(d)
		if err := d.Launch(0, &l); err != nil {
			b.Fatal(err)
		}
		if err := back(d, kept); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSnapshotCaptureNodes checks that capture node lists are not shared
// for writing: restoring an earlier snapshot and capturing on must not
// change what a later snapshot recorded.
func TestSnapshotCaptureNodes(t *testing.T) {
	d := New(Options{})
	p := malloc(t, d, 64)
	if err := d.BeginCapture(0); err != nil {
		t.Fatal(err)
	}
	fill := func(v float32) { launch(t, d, 0, device.Launch{K: ops.Fill, Out: p, Scalar: v, N: 1}) }
	fill(1)
	fill(2)
	fill(3) // the node list now has spare capacity
	s1 := d.Snapshot()
	fill(4)
	s2 := d.Snapshot()
	want := dump(d)
	if err := d.Restore(s1); err != nil {
		t.Fatal(err)
	}
	fill(5) // would land where s2 keeps its fourth node, were the array shared
	if err := d.Restore(s2); err != nil {
		t.Fatal(err)
	}
	if got := dump(d); !reflect.DeepEqual(got, want) {
		t.Fatalf("a later snapshot's capture changed:\ngot  %+v\nwant %+v", got.Capture, want.Capture)
	}
}

func TestMallocHuge(t *testing.T) {
	// A budget as large as int64 allows: the 2 MiB rounding must not
	// overflow, and the fake address space runs out before the budget.
	d := New(Options{TotalBytes: math.MaxInt64})
	p, err := d.MallocSegment(math.MaxInt64 - 1)
	if err != nil || p != BaseAddress {
		t.Fatalf("got 0x%x, %v; want the base address", p, err)
	}
	if err := d.FreeSegment(p); err != nil {
		t.Fatal(err)
	}
	_, err = d.MallocSegment(math.MaxInt64 - 1)
	wantErr(t, err, "fake address space exhausted at 0x80007f0000000000")
	if !errors.Is(err, device.ErrOutOfMemory) {
		t.Fatalf("%v does not wrap ErrOutOfMemory", err)
	}
}

// captureOne captures launch l on stream s into a graph and instantiates it.
func captureOne(t testing.TB, d *Device, s device.Stream, l device.Launch) (device.GraphHandle, device.ExecHandle) {
	t.Helper()
	if err := d.BeginCapture(s); err != nil {
		t.Fatal(err)
	}
	launch(t, d, s, l)
	return endCapture(t, d, s)
}

// endCapture ends stream s's capture and instantiates its graph.
func endCapture(t testing.TB, d *Device, s device.Stream) (device.GraphHandle, device.ExecHandle) {
	t.Helper()
	g, err := d.EndCapture(s)
	if err != nil {
		t.Fatal(err)
	}
	e, err := d.Instantiate(g)
	if err != nil {
		t.Fatal(err)
	}
	return g, e
}

// segValues is what a segment holds, up to its last extent, without going
// through the device's methods (nil for an untouched segment); unknown
// values read as NaN.
func segValues(d *Device, s *segment) []float32 {
	if len(s.ext) == 0 {
		return nil
	}
	out := make([]float32, s.ext[len(s.ext)-1].end)
	for i := range s.ext {
		x := &s.ext[i]
		if x.kind == kindUnknown {
			for k := x.off; k < x.end; k++ {
				out[k] = float32(math.NaN())
			}
			continue
		}
		d.materialise(&segment{ext: []extent{*x}}, x.off, out[x.off:x.end])
	}
	return out
}

// TestGraphNodesStrided: a captured strided launch names its kernel and
// adds its geometry to the detail, over the dims it uses (the cuda
// device prints the same "shape=... strides=out/a/b").
func TestGraphNodesStrided(t *testing.T) {
	d := New(Options{})
	p := malloc(t, d, 4096)
	if err := d.BeginCapture(1); err != nil {
		t.Fatal(err)
	}
	g, _ := ops.NewGeometry([]int{2}, []int64{1}, []int64{3}, nil)
	launch(t, d, 1, device.Launch{K: ops.Mul, Out: p + 0x200, A: p + 8, BKind: ops.BScalar, Scalar: 2, N: 2, Geom: &g})
	gr, err := d.EndCapture(1)
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.GraphNodes(gr)
	if err != nil {
		t.Fatal(err)
	}
	want := []device.GraphNode{
		{Kind: "kernel", Name: "mul", Detail: "out=0x7f0000000200 a=0x7f0000000008 b=2 n=2 shape=[2] strides=[1]/[3]/[0]"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("GraphNodes:\ngot  %+v\nwant %+v", got, want)
	}
}
