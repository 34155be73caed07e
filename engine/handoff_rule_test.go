package engine

import (
	"testing"

	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/engine/device/sim"
	"github.com/cgtviz/cgtviz/traces"
)

func TestHandoffFor(t *testing.T) {
	tests := []struct {
		meta    string
		rule    Handoff
		version string
	}{
		{``, HandoffPreserve, ""},
		{`{}`, HandoffPreserve, ""},
		{`{"torch": "2.11.0+cu130"}`, HandoffRaise, "2.11.0+cu130"},
		{`{"torch": "2.12.1"}`, HandoffRaise, "2.12.1"},
		{`{"torch": "2.12rc1"}`, HandoffRaise, "2.12rc1"},
		{`{"torch": "1.13.1"}`, HandoffRaise, "1.13.1"},
		{`{"torch": "2.13.0"}`, HandoffPreserve, "2.13.0"},
		{`{"torch": "2.14.0a0+git0011014"}`, HandoffPreserve, "2.14.0a0+git0011014"},
		{`{"torch": "3.0"}`, HandoffPreserve, "3.0"},
		{`{"torch": "nightly"}`, HandoffPreserve, ""},
		{`{"torch": 2.11}`, HandoffPreserve, ""},
		{`{"torch": "2.11\u001b]0;x\u0007"}`, HandoffPreserve, ""},
		{`not json`, HandoffPreserve, ""},
	}
	for _, tt := range tests {
		rule, v := HandoffFor(traces.Header{Meta: []byte(tt.meta)})
		if rule != tt.rule || v != tt.version {
			t.Errorf("HandoffFor(meta %s) = %v, %q; want %v, %q", tt.meta, rule, v, tt.rule, tt.version)
		}
	}
}

// TestHandoffByVersionResolved: an engine asked for the version's rule runs
// under the rule itself, as Handoff reports.
func TestHandoffByVersionResolved(t *testing.T) {
	for meta, want := range map[string]Handoff{`{"torch": "2.11.0"}`: HandoffRaise, `{"torch": "2.14.0"}`: HandoffPreserve, ``: HandoffPreserve} {
		h := traces.Header{Devices: 1, Meta: []byte(meta)}
		e, err := New(h, Options{Devices: []device.Device{sim.New(sim.Options{})}, Handoff: HandoffByVersion})
		if err != nil {
			t.Fatal(err)
		}
		if got := e.Handoff(); got != want {
			t.Errorf("meta %s: Handoff() = %v, want %v", meta, got, want)
		}
	}
	if h, err := ParseHandoff("version"); err != nil || h != HandoffByVersion || h.String() != "version" {
		t.Errorf(`ParseHandoff("version") = %v, %v`, h, err)
	}
}
