//go:build cuda

package sessions_test

import (
	"reflect"
	"testing"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/engine/device/cuda"
	"github.com/cgtviz/cgtviz/sessions"
	"github.com/cgtviz/cgtviz/traces/gen"
)

func gpus(n int) ([]device.Device, error) {
	out := make([]device.Device, n)
	for i := range out {
		d, err := cuda.New(i)
		if err != nil {
			return nil, err
		}
		out[i] = d
	}
	return out, nil
}

// decisions is what a step decided, without addresses (which differ
// between the GPU and the simulated device).
type decision struct {
	Action     engine.Action
	Node       int
	Parent     int
	Checkpoint bool
	Err        string
	Failures   int
}

func decide(s *engine.Step) decision {
	return decision{s.Action, s.Node, s.Parent, s.Checkpoint, s.ErrText(), len(s.ExpectFailures)}
}

// TestCUDASession steps the demo trace live on the GPU, forward to the end
// and back (which restores a keyframe: the GPU device clones), and
// compares every decision with a session on the simulated device.
func TestCUDASession(t *testing.T) {
	tr, err := sessions.OpenTrace(sessions.DemoSource)
	if err != nil {
		t.Fatal(err)
	}
	gs, err := sessions.New(tr, sessions.Options{NewDevices: gpus, Source: sessions.DemoSource, Check: true})
	if err != nil {
		t.Fatal(err)
	}
	defer gs.Close()
	ss, err := sessions.New(tr, sessions.Options{Source: sessions.DemoSource, Check: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	if !gs.Cloneable() {
		t.Fatal("a GPU session cannot clone its engine (the cuda device is a device.Cloner)")
	}
	for {
		g, ok := gs.Step()
		if !ok {
			break
		}
		s, _ := ss.Step()
		if decide(g) != decide(s) {
			t.Fatalf("line %d: cuda %+v, sim %+v", g.Line, decide(g), decide(s))
		}
	}
	if gs.Pos() != gs.Len() {
		t.Fatalf("stopped at %d of %d", gs.Pos(), gs.Len())
	}
	// Back to the checkpoint (line 32) and forward again.
	target := 0
	for i := 0; i < gs.Len(); i++ {
		if st := gs.StepAt(i); st != nil && st.Checkpoint {
			target = i + 1
		}
	}
	if target == 0 {
		t.Fatal("the demo has no checkpoint")
	}
	if err := gs.Goto(target); err != nil {
		t.Fatal(err)
	}
	if err := ss.Goto(target); err != nil {
		t.Fatal(err)
	}
	gst, sst := gs.State(), ss.State()
	if len(gst.Devices[0].Nodes) != len(sst.Devices[0].Nodes) || gst.Counters != sst.Counters {
		t.Fatalf("after going back to step %d: cuda %d nodes %+v, sim %d nodes %+v", target,
			len(gst.Devices[0].Nodes), gst.Counters, len(sst.Devices[0].Nodes), sst.Counters)
	}
	for i := range gst.Devices[0].Nodes {
		g, s := gst.Devices[0].Nodes[i], sst.Devices[0].Nodes[i]
		if g.Fn != s.Fn || g.Parent != s.Parent || !reflect.DeepEqual(g.ExpectedDeadBefore, s.ExpectedDeadBefore) {
			t.Errorf("node %d: cuda %s<-%d, sim %s<-%d", i, g.Fn, g.Parent, s.Fn, s.Parent)
		}
	}
	t.Logf("stepped %d records live on %s, went back to step %d (checkpoint): %d nodes, %+v", gs.Len(), gst.Devices[0].Name, target, len(gst.Devices[0].Nodes), gst.Counters)
}

// TestCUDAKeyframeBytes runs the demo on the GPU under a byte cap of a few
// snapshots and checks that the keyframes' device memory stays under it,
// that going back restores keyframes (no re-run: the GPU clones) and that
// every position reached by going back decides as on sim.
func TestCUDAKeyframeBytes(t *testing.T) {
	tr, err := sessions.OpenTrace(sessions.DemoSource)
	if err != nil {
		t.Fatal(err)
	}
	probe, err := sessions.New(tr, sessions.Options{NewDevices: gpus, Source: sessions.DemoSource})
	if err != nil {
		t.Fatal(err)
	}
	if err := probe.Goto(probe.Len()); err != nil {
		t.Fatal(err)
	}
	per := probe.SnapshotBytes()
	probe.Close()
	if per <= 0 {
		t.Fatalf("SnapshotBytes = %d at the end of the demo on the GPU, want > 0", per)
	}
	budget := 3 * per
	gs, err := sessions.New(tr, sessions.Options{NewDevices: gpus, Source: sessions.DemoSource, KeyframeEvery: 1, KeyframeBytes: budget})
	if err != nil {
		t.Fatal(err)
	}
	defer gs.Close()
	ss, err := sessions.New(tr, sessions.Options{Source: sessions.DemoSource})
	if err != nil {
		t.Fatal(err)
	}
	if err := gs.Goto(gs.Len()); err != nil {
		t.Fatal(err)
	}
	for p := gs.Len(); p >= 0; p-- {
		if err := gs.Goto(p); err != nil {
			t.Fatal(err)
		}
		if held, _ := gs.KeyframeBytes(); held > budget {
			t.Fatalf("at %d the keyframes hold %d bytes of device memory, budget %d", p, held, budget)
		}
		if p == 0 {
			break
		}
		g, s := gs.StepAt(p-1), ss.StepAt(p-1)
		if s == nil {
			if err := ss.Goto(gs.Len()); err != nil {
				t.Fatal(err)
			}
			s = ss.StepAt(p - 1)
		}
		if decide(g) != decide(s) {
			t.Fatalf("record %d: cuda %+v, sim %+v", p-1, decide(g), decide(s))
		}
	}
	n, every := gs.Keyframes()
	held, _ := gs.KeyframeBytes()
	t.Logf("demo on the GPU: a snapshot costs %d bytes at the end; %d keyframes every %d hold %d bytes (budget %d)", per, n, every, held, budget)
}

// BenchmarkCUDAMoves times the TUI's moves on the GPU against the same
// moves on the simulated device, in one binary: N (Back one record) and g
// (Goto the middle, then the end) over the 2,000-record seed loop, the
// engine live on each. Going back restores a keyframe (a clone of the
// device's pool on the GPU) and re-applies the records after it.
func BenchmarkCUDAMoves(b *testing.B) {
	tr := gen.TreeTrace(50, 600) // 100 recordings, 600 replays: 2,250 records
	for _, dev := range []struct {
		name string
		open func(int) ([]device.Device, error)
	}{{"sim", sessions.SimDevices}, {"cuda", gpus}} {
		s, err := sessions.New(tr, sessions.Options{NewDevices: dev.open})
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Goto(s.Len()); err != nil {
			b.Fatal(err)
		}
		b.Run(dev.name+"/back", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if err := s.Back(); err != nil {
					b.Fatal(err)
				}
				if err := s.Goto(s.Len()); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(dev.name+"/jump", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if err := s.Goto(s.Len() / 2); err != nil {
					b.Fatal(err)
				}
				if err := s.Goto(s.Len()); err != nil {
					b.Fatal(err)
				}
			}
		})
		s.Close()
	}
}
