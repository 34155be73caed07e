package sessions

import (
	"reflect"
	"slices"
	"testing"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/traces"
)

// TestOverwriteBreakpoint: the silent cached-object overwrite is a
// breakpoint kind by name, and Continue stops on it, forward from the
// start and again over records already run.
func TestOverwriteBreakpoint(t *testing.T) {
	k, ok := ParseKind("overwrite")
	if !ok || k != KindOverwrite || KindName(k) != "overwrite" {
		t.Fatalf("ParseKind(overwrite) = %v, %v", k, ok)
	}
	s := open(t, "../examples/s08-overwritten-errors.cgt.jsonl", Options{})
	if err := s.AddBreakpoint(Breakpoint{Kind: KindOverwrite}); err != nil {
		t.Fatal(err)
	}
	h, err := s.Continue()
	if err != nil || !h.Found {
		t.Fatalf("Continue: %+v, %v", h, err)
	}
	rec, _ := s.Records().Record(h.Index)
	if rec.Line != 14 || s.Pos() != h.Index+1 {
		t.Fatalf("stopped at line %d, position %d", rec.Line, s.Pos())
	}
	if v, known := s.Overwrote(h.Index); !v || !known {
		t.Errorf("Overwrote(%d) = %v, %v", h.Index, v, known)
	}
	// Back to the start, then again through the history: the same stop.
	if err := s.Goto(0); err != nil {
		t.Fatal(err)
	}
	h2, err := s.Continue()
	if err != nil || h2 != h {
		t.Errorf("Continue over the history: %+v, %v, want %+v", h2, err, h)
	}
	if hits := s.OverwriteHits(); len(hits) == 0 || hits[0] != h.Index {
		t.Errorf("OverwriteHits = %v", hits)
	}
}

// TestSharedOutputsAmong: given the live tensors of several names, or
// any superset of indexes, SharedOutputsAmong finds what SharedOutputs
// finds, in the same order; candidates that cannot share find nothing.
func TestSharedOutputsAmong(t *testing.T) {
	st := &engine.State{Tensors: []engine.TensorView{
		{Names: []string{"y", "old"}, State: engine.TensorLive, Line: 3},       // 0: y rewrote old
		{Names: []string{"z"}, State: engine.TensorLive},                       // 1: one name
		{Names: []string{"y", "gone"}, State: engine.TensorStale},              // 2: not live
		{Names: []string{"p", "q"}, State: engine.TensorLive},                  // 3: not the call's
		{Names: []string{"old2", "z", "w"}, State: engine.TensorLive, Line: 9}, // 4
	}}
	rec := &traces.Record{Op: traces.OpCall, Out: []string{"y", "z"}}
	want := SharedOutputs(st, rec)
	if len(want) != 2 || want[0].Line != 3 || want[1].Line != 9 ||
		!slices.Equal(want[1].Mine, []string{"z"}) || !slices.Equal(want[1].Others, []string{"old2", "w"}) {
		t.Fatalf("SharedOutputs = %+v", want)
	}
	var may []int
	for i := range st.Tensors {
		if MayShare(&st.Tensors[i]) {
			may = append(may, i)
		}
	}
	if !slices.Equal(may, []int{0, 3, 4}) {
		t.Errorf("MayShare picks %v", may)
	}
	for _, c := range []struct {
		name       string
		candidates []int
		want       []SharedOutput
	}{
		{"may share", may, want},
		{"every index", []int{0, 1, 2, 3, 4}, want},
		{"out of range skipped", []int{-1, 0, 4, 5}, want},
		{"none can share", []int{1, 2, 3}, nil},
		{"no candidates", nil, nil},
	} {
		got := SharedOutputsAmong(st, rec, c.candidates)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
	if got := SharedOutputsAmong(st, &traces.Record{Op: traces.OpCall}, may); got != nil {
		t.Errorf("a call without outputs: %+v", got)
	}
}

// TestKindBitsFree: the history keeps a step's kinds as bits of a KindSet,
// the pseudo kinds on bits 30 and 31; every engine kind (a new one such as
// empty_cache included) must stay below them, or a breakpoint on it would
// stop on overwrites or re-records.
func TestKindBitsFree(t *testing.T) {
	for _, k := range engine.EventKinds() {
		if k >= KindOverwrite {
			t.Errorf("engine kind %s is %d, on the history's pseudo kinds' bits (%d and up)", k, k, KindOverwrite)
		}
		if got, ok := ParseKind(KindName(k)); !ok || got != k {
			t.Errorf("kind %s: parsed back as %v, %v", k, got, ok)
		}
	}
}
