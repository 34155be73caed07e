package engine

import (
	"reflect"
	"runtime"
	"testing"

	"github.com/cgtviz/cgtviz/engine/device/sim"
	"github.com/cgtviz/cgtviz/traces"
	"github.com/cgtviz/cgtviz/traces/gen"
)

// TestCloneSharesNodes: a clone shares its original's nodes and functions, and the two
// stay independent whichever changes a node first. For every example and
// 12 random traces, cloned at every eighth record (a keyframe), then a
// clone of the clone (a restore): the original runs on to the end, each
// record also failed once and rolled back (Options.Check with an injected
// failure); the clone's State is still what it was; the clone of the clone
// runs the same records and ends in the original's State.
func TestCloneSharesNodes(t *testing.T) {
	trs := testTraces(t, 12, "../examples/*.cgt.jsonl")
	trs = append(trs, gen.TreeTrace(40, 100))
	for _, tr := range trs {
		e, err := New(tr.Header, Options{Devices: sim.Devices(tr.Header.Devices), File: tr.File, Check: true})
		if err != nil {
			t.Fatal(err)
		}
		type frame struct {
			at    int
			eng   *Engine
			state *State
		}
		var frames []frame
		for i := range tr.Records {
			rec := &tr.Records[i]
			if i%8 == 0 {
				c, err := e.Clone()
				if err != nil {
					t.Fatal(err)
				}
				for d := range e.devs {
					for k, n := range e.devs[d].m.nodes {
						if c.devs[d].m.nodes[k] != n {
							t.Fatalf("%s:%d: the clone copied node %d instead of sharing it", tr.File, rec.Line, k)
						}
					}
				}
				frames = append(frames, frame{i, c, c.State()})
			}
			e.failAfter = func(r *traces.Record) bool { return r == rec }
			e.Apply(rec)
			e.failAfter = nil
			e.Apply(rec)
		}
		runtime.GC() // buried clones drop out of the owners
		want := e.State()
		for _, f := range frames {
			if got := f.eng.State(); !reflect.DeepEqual(got, f.state) {
				t.Fatalf("%s: the clone at record %d changed as its original ran on:\n%s", tr.File, f.at, stateDiffs(f.state, got))
			}
			r, err := f.eng.Clone()
			if err != nil {
				t.Fatal(err)
			}
			for i := f.at; i < len(tr.Records); i++ {
				rec := &tr.Records[i]
				r.failAfter = func(x *traces.Record) bool { return x == rec }
				r.Apply(rec)
				r.failAfter = nil
				r.Apply(rec)
			}
			got := r.State()
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: restored at record %d and run to the end, the State differs from the original's:\n%s", tr.File, f.at, stateDiffs(want, got))
			}
			if again := f.eng.State(); !reflect.DeepEqual(again, f.state) {
				t.Fatalf("%s: the clone at record %d changed as its own clone ran:\n%s", tr.File, f.at, stateDiffs(f.state, again))
			}
		}
	}
}
