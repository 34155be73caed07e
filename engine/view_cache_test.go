package engine

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/cgtviz/cgtviz/engine/device/sim"
	"github.com/cgtviz/cgtviz/traces"
	"github.com/cgtviz/cgtviz/traces/gen"
)

// TestStateReusesNodeViews: after every record of every example and of 30
// random traces, the State built from the nodes' cached views equals one
// built from scratch (every cache dropped), and the clone of an engine
// gives the same State as the engine. And the cache is used: a replay
// rebuilds the view of the node it replayed, not of the whole tree.
func TestStateReusesNodeViews(t *testing.T) {
	// testdata too: its resets swap a device's manager under the caches.
	trs := testTraces(t, 30, "../examples/*.cgt.jsonl", "testdata/*.cgt.jsonl")
	for _, tr := range trs {
		e, err := New(tr.Header, Options{Devices: sim.Devices(tr.Header.Devices), File: tr.File})
		if err != nil {
			t.Fatal(err)
		}
		for i := range tr.Records {
			rec := &tr.Records[i]
			e.Apply(rec)
			cached := e.State()
			c, err := e.Clone()
			if err != nil {
				t.Fatal(err)
			}
			for _, ds := range e.devs {
				for _, n := range ds.m.nodes {
					n.view = nil
				}
			}
			if fresh := e.State(); !reflect.DeepEqual(cached, fresh) {
				t.Fatalf("%s:%d (%s): the State from cached node views differs from a fresh one:\n%s", tr.File, rec.Line, rec.Op, stateDiffs(cached, fresh))
			}
			if cs := c.State(); !reflect.DeepEqual(cached, cs) {
				t.Fatalf("%s:%d (%s): the clone's State differs:\n%s", tr.File, rec.Line, rec.Op, stateDiffs(cached, cs))
			}
		}
	}

	tr := gen.TreeTrace(50, 60)
	e, err := New(tr.Header, Options{Devices: sim.Devices(1)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range tr.Records {
		e.Apply(&tr.Records[i])
		e.State()
	}
	views := map[*nodeView]bool{}
	for _, n := range e.devs[0].m.nodes {
		views[n.view] = true
	}
	// One more round of the trace's last three records: a tensor, a step
	// and a call replaying one node.
	for _, rec := range tr.Records[len(tr.Records)-3:] {
		if s := e.Apply(&rec); s.Err != nil {
			t.Fatal(s.Err)
		}
	}
	e.State()
	rebuilt := 0
	for _, n := range e.devs[0].m.nodes {
		if !views[n.view] {
			rebuilt++
		}
	}
	if rebuilt == 0 || rebuilt > 2 {
		t.Fatalf("a replay rebuilt %d of %d node views, want 1 or 2", rebuilt, len(e.devs[0].m.nodes))
	}
}

// stateDiffs names the first fields that differ between two States.
func stateDiffs(a, b *State) string {
	va, vb := reflect.ValueOf(*a), reflect.ValueOf(*b)
	out := ""
	for f := 0; f < va.NumField(); f++ {
		if !reflect.DeepEqual(va.Field(f).Interface(), vb.Field(f).Interface()) {
			out += va.Type().Field(f).Name + " differs\n"
		}
	}
	if len(a.Devices) == len(b.Devices) {
		for d := range a.Devices {
			if len(a.Devices[d].Nodes) != len(b.Devices[d].Nodes) {
				out += "node counts differ\n"
				continue
			}
			for i := range a.Devices[d].Nodes {
				if !reflect.DeepEqual(a.Devices[d].Nodes[i], b.Devices[d].Nodes[i]) {
					out += "node " + a.Devices[d].Nodes[i].Fn + " differs\n"
					return out + "  " + formatNode(a.Devices[d].Nodes[i]) + "\n  " + formatNode(b.Devices[d].Nodes[i])
				}
			}
		}
	}
	return out
}

func formatNode(n NodeView) string { return fmt.Sprintf("%+v", n) }

// TestStateShowsDroppedPools: after a reset, the old tree's pool still
// holds the output the program kept; State lists it under Dropped (the
// pool pane shows it), and not before the reset.
func TestStateShowsDroppedPools(t *testing.T) {
	tr, err := traces.ReadFile("testdata/reset-one-device.cgt.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(tr.Header, Options{Devices: sim.Devices(1)})
	if err != nil {
		t.Fatal(err)
	}
	reset := false
	for i := range tr.Records {
		rec := &tr.Records[i]
		if s := e.Apply(rec); s.Err != nil {
			t.Fatal(s.Err)
		}
		reset = reset || rec.Op == traces.OpReset
		dropped := e.State().Devices[0].Dropped
		if !reset {
			if len(dropped) > 0 {
				t.Fatalf("line %d: %d dropped pools before the reset", rec.Line, len(dropped))
			}
			continue
		}
		if len(dropped) != 1 {
			t.Fatalf("line %d: %d dropped pools, want 1", rec.Line, len(dropped))
		}
		var names []string
		for _, seg := range dropped[0].Segments {
			for _, b := range seg.Blocks {
				names = append(names, b.Tensors...)
			}
		}
		if !slices.Contains(names, "old") {
			t.Errorf("line %d: the dropped pool's blocks hold %v, want old among them", rec.Line, names)
		}
	}
}
