package engine

import (
	"runtime"
	"testing"

	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/engine/device/sim"
	"github.com/cgtviz/cgtviz/traces"
)

// replayHeavy builds a trace of about n records: the seed's loop (step,
// foo, del a, fee) over and over, with a new input every 8 iterations.
func replayHeavy(n int) *traces.Trace {
	b := traces.NewBuilder("replay-heavy").
		Def("foo", []string{"x"}, []string{"a", "b"}, traces.S("a", "add", "x", 1.0), traces.S("b", "add", "x", 2.0)).
		Def("fee", []string{"y"}, []string{"c"}, traces.S("c", "mul", "y", 4.0)).
		TensorSeed("inp", []int{256}, 1)
	for i := 0; b.Len() < n; i++ {
		if i%8 == 7 {
			b.TensorSeed("inp", []int{256}, int64(i))
		}
		b.Step().Call("foo", []string{"inp"}, "a", "b").Del("a").Call("fee", []string{"b"}, "out")
	}
	return b.Trace()
}

// BenchmarkReplayHeavy runs a 1,000,000-record replay-heavy trace on the
// simulated device and reports records/s and the heap in use at the end
// (targets: 500,000 records/s or more, under 200 MB).
func BenchmarkReplayHeavy(b *testing.B) {
	// The records of 8 iterations are applied over and over, as a stream
	// of 1,000,000 records would be: the trace itself is not held.
	tr := replayHeavy(40)
	head, loop := tr.Records[:3], tr.Records[3:]
	const total = 1_000_000
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e, err := New(tr.Header, Options{Devices: []device.Device{sim.New(sim.Options{})}})
		if err != nil {
			b.Fatal(err)
		}
		for j := range head {
			if s := e.Apply(&head[j]); s.Err != nil {
				b.Fatal(s.Err)
			}
		}
		for n := len(head); n < total; {
			for j := range loop {
				if s := e.Apply(&loop[j]); s.Err != nil {
					b.Fatal(s.Err)
				}
			}
			n += len(loop)
		}
		if i == b.N-1 {
			b.StopTimer()
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "MB-heap")
			b.StartTimer()
		}
	}
	b.ReportMetric(float64(total)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}
