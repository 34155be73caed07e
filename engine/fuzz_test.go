package engine_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/engine/device/sim"
	"github.com/cgtviz/cgtviz/traces"
	"github.com/cgtviz/cgtviz/traces/gen"
)

// FuzzRun feeds any bytes to the whole pipeline: the checker, the reader,
// and a run with the invariant checker on, on a simulated device of 256 MiB
// so that memory stays bounded. A trace that checks must run without a
// panic (an internal error), without breaking an invariant, and quickly.
func FuzzRun(f *testing.F) {
	for _, g := range []string{"../examples/*.cgt.jsonl", "testdata/*.cgt.jsonl"} {
		files, _ := filepath.Glob(g)
		for _, p := range files {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
	}
	f.Add([]byte(`{"cgtviz": 1}` + "\n" + `{"op": "step"}`))
	// Small random valid traces (traces/gen): aliasing, views, in-place
	// writes and overwritten outputs that the examples meet less.
	for seed := int64(1); seed <= 4; seed++ {
		var b bytes.Buffer
		if err := gen.Trace(seed, gen.Options{Records: 40}).Write(&b); err == nil {
			f.Add(b.Bytes())
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// Bounds that keep one execution in milliseconds: the fuzzer runs
		// each input that finds new coverage again and again while it
		// minimizes it, so a slow input stalls the whole run.
		if len(data) > 32<<10 {
			return
		}
		tr, err := traces.Read(bytes.NewReader(data), "fuzz.cgt.jsonl")
		if err != nil {
			return
		}
		if len(tr.Records) > 300 {
			return
		}
		n := tr.Header.Devices
		if n < 1 {
			n = 1
		}
		devs := make([]device.Device, n)
		for i := range devs {
			devs[i] = sim.New(sim.Options{TotalBytes: 256 << 20})
		}
		// Half the inputs (by length, so mutations cross over) run under
		// PyTorch 2.11's handoff rule, whose failures keep their changes.
		handoff := engine.HandoffPreserve
		if len(data)%2 == 1 {
			handoff = engine.HandoffRaise
		}
		start := time.Now()
		_, err = engine.RunTrace(context.Background(), tr, engine.Options{Devices: devs, Check: true, Handoff: handoff}, func(s *engine.Step) bool {
			if s.Err != nil && (s.Err.Kind == engine.ErrInternal || s.Err.Kind == engine.ErrInvariant) {
				t.Fatalf("line %d: %s", s.Line, s.Err)
			}
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("a %d-record trace took %v", len(tr.Records), d)
		}
	})
}
