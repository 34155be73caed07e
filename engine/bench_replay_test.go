package engine

import (
	"testing"

	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/engine/device/sim"
	"github.com/cgtviz/cgtviz/traces"
)

// nullDevice is the simulated device with graph launches and copies that
// do nothing: benchmarks over it measure the engine's own CPU time.
type nullDevice struct{ *sim.Device }

func (nullDevice) LaunchGraph(device.ExecHandle, device.Stream) error          { return nil }
func (nullDevice) CopyDtoD(device.Stream, device.Ptr, device.Ptr, int64) error { return nil }

func replayEngine(b testing.TB) (*Engine, []traces.Record) {
	tr := traces.NewBuilder("bench").
		Def("f", []string{"x"}, []string{"y"}, traces.S("y", "add", "x", 1.0)).
		TensorValues("x", []int{4}, []float64{1, 2, 3, 4}).
		Step().Call("f", []string{"x"}, "y").
		Step().Call("f", []string{"x"}, "y").
		Step().Call("f", []string{"x"}, "y").
		Trace()
	e, err := New(tr.Header, Options{Devices: []device.Device{nullDevice{sim.New(sim.Options{})}}})
	if err != nil {
		b.Fatal(err)
	}
	for i := range tr.Records {
		if s := e.Apply(&tr.Records[i]); s.Err != nil {
			b.Fatal(s.Err)
		}
	}
	return e, []traces.Record{{Op: traces.OpStep}, {Op: traces.OpCall, Fn: "f", Args: []string{"x"}, Out: []string{"y"}}}
}

// BenchmarkEngineReplayOverhead is the engine's own CPU time for a step and
// the replay of a 1-input/1-output node, with a device that does nothing.
func BenchmarkEngineReplayOverhead(b *testing.B) {
	e, recs := replayEngine(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.Apply(&recs[0])
		if s := e.Apply(&recs[1]); s.Action != ActionReplay {
			b.Fatal(s.Action)
		}
	}
}
