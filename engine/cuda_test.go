//go:build cuda

package engine_test

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/engine/device/cuda"
	"github.com/cgtviz/cgtviz/engine/device/sim"
	"github.com/cgtviz/cgtviz/traces"
)

// With CGTVIZ_DEVICE=cuda every engine test runs on the GPU.
func init() {
	if os.Getenv("CGTVIZ_DEVICE") == "cuda" {
		testDevices = openGPUs
	}
}

// gpuCount is the number of GPUs of this machine.
func gpuCount() int {
	_, names, err := cuda.Info()
	if err != nil {
		return 0
	}
	return len(names)
}

// openGPUs opens n GPUs; a trace that needs more GPUs than the machine
// has runs on simulated devices instead (TestCUDAMatchesSim skips it).
func openGPUs(n int) []device.Device {
	out := make([]device.Device, n)
	if n > gpuCount() {
		for i := range out {
			out[i] = sim.New(sim.Options{})
		}
		return out
	}
	for i := range out {
		d, err := cuda.New(i)
		if err != nil {
			panic(err)
		}
		out[i] = d
	}
	return out
}

// TestCUDAMatchesSim runs every scenario trace on the GPU and on the
// simulated device: the decisions, node ids, errors and expectations must
// be the same, and every named tensor's values equal within 1e-5.
func TestCUDAMatchesSim(t *testing.T) {
	for _, f := range scenarioFiles(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			tr, err := traces.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			n := tr.Header.Devices
			if n < 1 {
				n = 1
			}
			if n > gpuCount() {
				t.Skipf("the trace needs %d GPUs, this machine has %d", n, gpuCount())
			}
			var simSteps, gpuSteps []*engine.Step
			sims := make([]device.Device, n)
			for i := range sims {
				sims[i] = sim.New(sim.Options{})
			}
			es, err := engine.RunTrace(context.Background(), tr, scenarioOptions(sims), func(s *engine.Step) bool { simSteps = append(simSteps, s); return true })
			if err != nil {
				t.Fatal(err)
			}
			gpus := openGPUs(n)
			defer func() {
				for _, d := range gpus {
					d.Close()
				}
			}()
			eg, err := engine.RunTrace(context.Background(), tr, scenarioOptions(gpus), func(s *engine.Step) bool { gpuSteps = append(gpuSteps, s); return true })
			if err != nil {
				t.Fatal(err)
			}
			for i := range simSteps {
				a, b := simSteps[i], gpuSteps[i]
				if a.Action != b.Action || a.Node != b.Node || a.Parent != b.Parent || a.Checkpoint != b.Checkpoint || sameDeviceError(a.ErrText()) != sameDeviceError(b.ErrText()) {
					t.Errorf("line %d: sim %s #%d<-#%d ckpt=%v err=%q; cuda %s #%d<-#%d ckpt=%v err=%q", a.Line,
						a.Action, a.Node, a.Parent, a.Checkpoint, a.Err, b.Action, b.Node, b.Parent, b.Checkpoint, b.Err)
				}
				if len(a.ExpectFailures) > 0 {
					t.Errorf("line %d: on sim: %v", a.Line, a.ExpectFailures)
				}
				if len(b.ExpectFailures) > 0 {
					t.Errorf("line %d: on cuda: %v", b.Line, b.ExpectFailures)
				}
			}
			for _, name := range es.Names() {
				sv, serr := es.Values(name)
				gv, gerr := eg.Values(name)
				if errors.Is(serr, device.ErrValuesUnknown) {
					continue // the sim does not compute them (docs/real-size.md)
				}
				if (serr != nil) != (gerr != nil) {
					t.Errorf("%s: sim error %v, cuda error %v", name, serr, gerr)
					continue
				}
				for i := range sv {
					if d := math.Abs(float64(sv[i] - gv[i])); d > 1e-5*math.Max(1, math.Abs(float64(sv[i]))) && !(math.IsNaN(float64(sv[i])) && math.IsNaN(float64(gv[i]))) {
						t.Errorf("%s[%d]: sim %g, cuda %g", name, i, sv[i], gv[i])
						break
					}
				}
			}
			// The kernel count of each captured graph matches the body.
			for _, nv := range eg.State().Devices[0].Nodes {
				def := findDef(tr, nv.Fn)
				want := 0
				for _, st := range def.Body {
					if st.K != "view" && st.K != "empty" {
						want++
					}
				}
				kern := 0
				for _, k := range nv.Kernels {
					if k.Kind == "kernel" {
						kern++
					}
				}
				if kern != want {
					t.Errorf("node #%d (%s): %d kernel nodes in its CUDA graph, the body has %d kernels", nv.ID, nv.Fn, kern, want)
				}
			}
		})
	}
}

func findDef(tr *traces.Trace, fn string) *traces.Record {
	for i := range tr.Records {
		if r := &tr.Records[i]; r.Op == traces.OpDef && r.Fn == fn {
			return r
		}
	}
	return &traces.Record{}
}

// TestCUDAReplayOverwrites shows that a replay really writes the memory of
// an output that an earlier call returned: the recording's output, freed at
// the next generation, holds the newest replay's values.
func TestCUDAReplayOverwrites(t *testing.T) {
	b := traces.NewBuilder("overwrite").
		Def("f", []string{"x"}, []string{"y"}, traces.S("y", "mul", "x", 3.0)).
		TensorValues("x", []int{4}, []float64{1, 2, 3, 4}).
		Call("f", []string{"x"}, "w").
		Call("f", []string{"x"}, "r").
		TensorValues("x", []int{4}, []float64{10, 20, 30, 40}).
		Call("f", []string{"x"}, "p")
	tr := b.Trace()
	gpus := openGPUs(1)
	defer gpus[0].Close()
	e, err := engine.RunTrace(context.Background(), tr, engine.Options{Devices: gpus, Check: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Values("r"); err == nil {
		t.Fatal("reading the recording's output after the next generation did not raise")
	}
	raw, err := e.RawValues("r")
	if err != nil {
		t.Fatal(err)
	}
	want := []float32{30, 60, 90, 120}
	for i := range want {
		if raw[i] != want[i] {
			t.Fatalf("the recording output's memory holds %v, want the last replay's %v", raw, want)
		}
	}
	t.Logf("stale output r's memory after the replay: %v", raw)
}

// sameDeviceError drops from an out-of-memory message the part that
// describes the device (its capacity and free memory differ between the
// simulated device and a GPU), keeping what was asked for.
func sameDeviceError(msg string) string {
	if i := strings.Index(msg, " GPU 0 has a total capacity"); i >= 0 && strings.Contains(msg, "out of memory") {
		return msg[:i]
	}
	// A moved static input's message names the addresses, which are the
	// device's own.
	return maskAddr(msg)
}
