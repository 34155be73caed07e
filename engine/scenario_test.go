package engine_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/engine/device/sim"
	"github.com/cgtviz/cgtviz/traces"
)

// simDevices returns n fresh devices for a test: simulated ones, or GPUs
// when the test binary is built with the cuda tag and CGTVIZ_DEVICE=cuda
// (see cuda_test.go).
func simDevices(n int) []device.Device {
	if testDevices != nil {
		return testDevices(max(n, 1))
	}
	return sim.Devices(n)
}

// testDevices, when set (cuda_test.go), opens the devices of every test.
var testDevices func(n int) []device.Device

// scenarioFiles lists the traces with expect records that are scenario
// tests: the examples for users and the corner cases under testdata.
func scenarioFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, g := range []string{"../examples/*.cgt.jsonl", "../examples/recorded/*.cgt.jsonl", "testdata/*.cgt.jsonl"} {
		m, err := filepath.Glob(g)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Fatal("no scenario traces found")
	}
	return files
}

// TestScenarios runs every scenario trace on the simulated device with the
// invariant checker on, under the handoff rule of the PyTorch that recorded
// it (as the command line does): every expectation must hold, and a record
// may fail only where the next expect record names its error.
func TestScenarios(t *testing.T) {
	for _, f := range scenarioFiles(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			tr, err := traces.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var steps []*engine.Step
			_, err = engine.RunTrace(context.Background(), tr, scenarioOptions(simDevices(tr.Header.Devices)), func(s *engine.Step) bool {
				steps = append(steps, s)
				return true
			})
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range steps {
				for _, fl := range s.ExpectFailures {
					t.Errorf("line %d: %s", s.Line, fl)
				}
				if s.Err != nil && !errorExpected(tr, i) {
					t.Errorf("line %d: unexpected error: %s", s.Line, s.Err)
				}
			}
		})
	}
}

// scenarioOptions are the options every run of a scenario trace uses, on
// any device: the invariant checker on, the handoff rule of the PyTorch
// that recorded it (as the command line does).
func scenarioOptions(devs []device.Device) engine.Options {
	return engine.Options{Devices: devs, Check: true, Handoff: engine.HandoffByVersion}
}

// errorExpected reports whether record i is followed by an expect record
// with an "error" field naming an error.
func errorExpected(tr *traces.Trace, i int) bool {
	for j := i + 1; j < len(tr.Records); j++ {
		r := tr.Records[j]
		if r.Op != traces.OpExpect {
			return false
		}
		if r.Expect.HasError && r.Expect.Error != nil {
			return true
		}
	}
	return false
}
