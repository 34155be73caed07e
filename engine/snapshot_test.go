package engine_test

import (
	"strings"
	"testing"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/engine/device/sim"
	"github.com/cgtviz/cgtviz/traces"
)

// plainDevice hides every optional interface of the device it wraps.
type plainDevice struct{ device.Device }

// TestCloneAndSnapshotBytes: a clone's engine is independent of its
// original, SnapshotBytes is the devices' sum, and a device that is not a
// device.Cloner makes Clone fail with its name.
func TestCloneAndSnapshotBytes(t *testing.T) {
	tr, err := traces.Read(strings.NewReader(handoffTrace), "test.cgt.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	d := sim.New(sim.Options{})
	e, err := engine.New(tr.Header, engine.Options{Devices: []device.Device{d}})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.SnapshotBytes(); got != 0 {
		t.Errorf("SnapshotBytes before any record = %d, want 0", got)
	}
	for i := range 5 { // defs, the tensor, the first calls
		if st := e.Apply(&tr.Records[i]); st.Err != nil {
			t.Fatalf("record %d: %s", i, st.Err)
		}
	}
	got := e.SnapshotBytes()
	if got <= 0 || got != d.SnapshotBytes() {
		t.Errorf("SnapshotBytes = %d, the device's %d; want them equal and positive", got, d.SnapshotBytes())
	}
	c, err := e.Clone()
	if err != nil {
		t.Fatal(err)
	}
	before := e.State()
	for i := 5; i < len(tr.Records); i++ {
		c.Apply(&tr.Records[i])
	}
	if after := e.State(); len(after.Devices[0].Nodes) != len(before.Devices[0].Nodes) {
		t.Errorf("running the clone changed the original: %d nodes, were %d", len(after.Devices[0].Nodes), len(before.Devices[0].Nodes))
	}

	p, err := engine.New(tr.Header, engine.Options{Devices: []device.Device{plainDevice{sim.New(sim.Options{Name: "plain"})}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Clone(); err == nil || !strings.Contains(err.Error(), "device 0 (plain) cannot be cloned") {
		t.Errorf("Clone on a device without CloneDevice: %v", err)
	}
	if got := p.SnapshotBytes(); got != 0 {
		t.Errorf("SnapshotBytes of a device that cannot say = %d, want 0", got)
	}
}
