package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/traces"
)

// TestReportStreamMatchesReport checks that the streamed JSON report (what
// cgtviz run --json writes) decodes to the same document as the report
// encoded whole, for every example trace.
func TestReportStreamMatchesReport(t *testing.T) {
	for _, f := range scenarioFiles(t) {
		tr, err := traces.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		whole := engine.NewReport(tr.Header.Name, "sim")
		streamed := engine.NewReport(tr.Header.Name, "sim")
		var buf bytes.Buffer
		write := streamed.WriteJSONStream(&buf)
		e, err := engine.RunTrace(context.Background(), tr, engine.Options{Devices: simDevices(tr.Header.Devices)}, func(s *engine.Step) bool {
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
		whole.Finish(e)
		streamed.Finish(e)
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
