package engine_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/traces"
)

// peerDifferences are the traces of PyTorch's own suite whose expectations
// the engine does not meet, with the reason (docs/oracle-differences.md).
// A trace listed here that starts to pass fails the test, so the list
// shrinks with the engine.
var peerDifferences = map[string]string{
	// None since run 14 (docs/gpu-runs/2026-12-01-h200.md): every trace of
	// the suite meets every expectation. A new difference goes here, with
	// its reason, until the engine models it.
}

// TestPeerSuite replays PyTorch's test/inductor/test_cudagraph_trees.py
// (bbus/pytorch at 35f093e4, about the 2.11 branch cut) as recorded test by
// test on the H200 with traces/pytorch/cgtrace (tools/gpu/gpu.sh peer,
// docs/gpu-runs/2026-12-01-h200.md, run 14): every expectation PyTorch's
// tree met must hold here, on sim, and on the GPU under CGTVIZ_DEVICE=cuda.
func TestPeerSuite(t *testing.T) {
	files, err := filepath.Glob("testdata/peer/*.cgt.jsonl.gz")
	if err != nil || len(files) < 200 {
		t.Fatalf("want the 206 traces of the peer suite in testdata/peer, got %d (%v)", len(files), err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".cgt.jsonl.gz")
		t.Run(name, func(t *testing.T) {
			tr, err := traces.ReadFile(f) // gzip: what every command reads
			if err != nil {
				t.Fatal(err)
			}
			var fails []string
			_, err = engine.RunTrace(context.Background(), tr, engine.Options{Devices: simDevices(tr.Header.Devices)}, func(s *engine.Step) bool {
				for _, fl := range s.ExpectFailures {
					fails = append(fails, fl.String())
				}
				return true
			})
			if err != nil {
				t.Fatal(err)
			}
			why, known := peerDifferences[name]
			switch {
			case known && len(fails) == 0:
				t.Errorf("meets every expectation now: remove it from peerDifferences (%s)", why)
			case !known:
				for _, fl := range fails {
					t.Error(fl)
				}
			}
		})
	}
}
