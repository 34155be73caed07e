package report_test

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/engine/device/sim"
	"github.com/cgtviz/cgtviz/engine/report"
	"github.com/cgtviz/cgtviz/traces"
	"path/filepath"
)

// TestReportStreamMatchesReport checks that the streamed JSON report (what
// cgtviz run --json writes) decodes to the same document as the report
// encoded whole, for every example trace.
func TestReportStreamMatchesReport(t *testing.T) {
	files, err := filepath.Glob("../../examples/*.cgt.jsonl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example traces: %v", err)
	}
	for _, f := range files {
		tr, err := traces.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		whole := report.New(tr.Header.Name, "sim")
		streamed := report.New(tr.Header.Name, "sim")
		var buf bytes.Buffer
		write := streamed.WriteJSONStream(&buf)
		e, err := engine.RunTrace(context.Background(), tr, engine.Options{Devices: sim.Devices(tr.Header.Devices)}, func(s *engine.Step) bool {
			whole.Add(s)
			rs := streamed.Count(s)
			if err := write(&rs); err != nil {
				t.Fatal(err)
			}
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		st := e.State()
		whole.Finish(st)
		streamed.Finish(st)
		if err := write(nil); err != nil {
			t.Fatal(err)
		}
		wb, err := json.Marshal(whole)
		if err != nil {
			t.Fatal(err)
		}
		var a, b any
		if err := json.Unmarshal(wb, &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(buf.Bytes(), &b); err != nil {
			t.Fatalf("%s: the streamed report is not JSON: %v\n%s", f, err, buf.String())
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: streamed report differs from the whole one", f)
		}
	}
}
