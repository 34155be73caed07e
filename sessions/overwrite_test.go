package sessions

import "testing"

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
