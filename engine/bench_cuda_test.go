//go:build cuda

package engine

import (
	"testing"

	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/engine/device/cuda"
	"github.com/cgtviz/cgtviz/traces"
)

// The GPU benchmarks of the replay fast path, as ratios within one run
// (make bench-gpu): BenchmarkGPUReplay against BenchmarkGPUBareLaunch (the
// same graph launched with nothing else), and BenchmarkGPUStep (foo then
// fee, the seed's two functions, after a step) against two bare launches.

func gpuEngine(b *testing.B, tr *traces.Trace) *Engine {
	b.Helper()
	d, err := cuda.New(0)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Close() })
	e, err := New(tr.Header, Options{Devices: []device.Device{d}})
	if err != nil {
		b.Fatal(err)
	}
	for i := range tr.Records {
		if s := e.Apply(&tr.Records[i]); s.Err != nil {
			b.Fatal(s.Err)
		}
	}
	return e
}

func oneInOneOut() *traces.Trace {
	return traces.NewBuilder("bench").
		Def("f", []string{"x"}, []string{"y"}, traces.S("y", "add", "x", 1.0)).
		TensorValues("x", []int{4}, []float64{1, 2, 3, 4}).
		Step().Call("f", []string{"x"}, "y").
		Step().Call("f", []string{"x"}, "y").
		Step().Call("f", []string{"x"}, "y").
		Trace()
}

func BenchmarkGPUReplay(b *testing.B) {
	e := gpuEngine(b, oneInOneOut())
	step := traces.Record{Op: traces.OpStep}
	call := traces.Record{Op: traces.OpCall, Fn: "f", Args: []string{"x"}, Out: []string{"y"}}
	e.Apply(&step)
	if s := e.Apply(&call); s.Action != ActionReplay {
		b.Fatalf("not a replay: %+v", s)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// A new generation each call, as PyTorch's reduce-overhead loop
		// with cudagraph_mark_step_begin() does.
		e.Apply(&step)
		e.Apply(&call)
	}
	b.StopTimer()
	e.devs[0].dev.Synchronize()
}

func BenchmarkGPUBareLaunch(b *testing.B) {
	e := gpuEngine(b, oneInOneOut())
	exec := e.devs[0].m.nodes[0].Exec
	d := e.devs[0].dev
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d.LaunchGraph(exec, device.SideStream)
	}
	b.StopTimer()
	d.Synchronize()
}

func seedStep() *traces.Trace {
	b := traces.NewBuilder("bench step").
		Def("foo", []string{"x"}, []string{"a", "b"}, traces.S("a", "add", "x", 1.0), traces.S("b", "add", "x", 2.0)).
		Def("fee", []string{"y"}, []string{"c"}, traces.S("c", "mul", "y", 4.0)).
		TensorValues("inp", []int{4}, []float64{1, 2, 3, 4})
	for i := 0; i < 3; i++ {
		b.Step().Call("foo", []string{"inp"}, "a", "b").Del("a").Call("fee", []string{"b"}, "out")
	}
	return b.Trace()
}

func BenchmarkGPUStep(b *testing.B) {
	e := gpuEngine(b, seedStep())
	recs := []traces.Record{
		{Op: traces.OpStep},
		{Op: traces.OpCall, Fn: "foo", Args: []string{"inp"}, Out: []string{"a", "b"}},
		{Op: traces.OpDel, Names: []string{"a"}},
		{Op: traces.OpCall, Fn: "fee", Args: []string{"b"}, Out: []string{"out"}},
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := range recs {
			e.Apply(&recs[j])
		}
	}
	b.StopTimer()
	e.devs[0].dev.Synchronize()
}

func BenchmarkGPUBareTwoLaunches(b *testing.B) {
	e := gpuEngine(b, seedStep())
	m := e.devs[0].m
	e0, e1 := m.nodes[0].Exec, m.nodes[1].Exec
	d := e.devs[0].dev
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d.LaunchGraph(e0, device.SideStream)
		d.LaunchGraph(e1, device.SideStream)
	}
	b.StopTimer()
	d.Synchronize()
}
