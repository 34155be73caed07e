package main

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/engine/device/sim"
	"github.com/cgtviz/cgtviz/traces"
)

// TestScaleTrace checks the traces of the table: as many records as asked,
// clean, a tree of exactly the nodes asked, and every call after the
// growth a replay.
func TestScaleTrace(t *testing.T) {
	for _, tc := range []struct{ records, nodes int }{
		{51, 10}, {1000, 10}, {1001, 100}, {777, 3},
	} {
		var out, errOut bytes.Buffer
		args := []string{"-records", strconv.Itoa(tc.records), "-nodes", strconv.Itoa(tc.nodes)}
		if code := run(args, &out, &errOut); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut.String())
		}
		if ps := traces.Check(bytes.NewReader(out.Bytes()), "scale"); len(ps) > 0 {
			t.Fatalf("%v: %v", args, traces.Problems(ps))
		}
		tr, err := traces.ReadChecked(bytes.NewReader(out.Bytes()), "scale")
		if err != nil {
			t.Fatal(err)
		}
		if len(tr.Records) != tc.records {
			t.Errorf("%v: %d records", args, len(tr.Records))
		}
		grown := setupRecords(tc.nodes)
		e, err := engine.RunTrace(context.Background(), tr, engine.Options{Devices: sim.Devices(1)}, func(s *engine.Step) bool {
			if s.Err != nil {
				t.Fatalf("%v: line %d: %v", args, s.Line, s.Err)
			}
			if s.Index >= grown && s.Op == traces.OpCall && s.Action != engine.ActionReplay {
				t.Fatalf("%v: line %d: %s after the tree grew", args, s.Line, s.Action)
			}
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(e.State().Devices[0].Nodes); n != tc.nodes {
			t.Errorf("%v: %d nodes", args, n)
		}
	}
	var errOut bytes.Buffer
	if code := run([]string{"-records", "10", "-nodes", "10"}, &bytes.Buffer{}, &errOut); code != 2 || !strings.Contains(errOut.String(), "take 51 records") {
		t.Errorf("a trace too short for its tree: exit %d, %q", code, errOut.String())
	}
}
