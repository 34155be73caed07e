package sessions

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cgtviz/cgtviz/traces"
)

// TestIndexedSameAsInMemory runs every example in a session read on demand
// (traces.Index) and in one held in memory, forward, back and by random
// jumps, and requires the same states and steps; and the Records of both
// to agree on lines, lookups by line and functions.
func TestIndexedSameAsInMemory(t *testing.T) {
	paths, _ := filepath.Glob("../examples/*.cgt.jsonl")
	if len(paths) < 10 {
		t.Fatalf("%d examples", len(paths))
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			mem := open(t, path, Options{})
			ix, err := traces.OpenIndex(context.Background(), path, false)
			if err != nil {
				t.Fatal(err)
			}
			defer ix.Close()
			ix.Wait()
			s, err := NewRecords(Indexed(ix), Options{Source: path})
			if err != nil {
				t.Fatal(err)
			}
			if s.Len() != mem.Len() {
				t.Fatalf("%d records runnable, want %d", s.Len(), mem.Len())
			}
			a, b := s.Records(), mem.Records()
			if !reflect.DeepEqual(a.Defs(), b.Defs()) || a.Shown() != b.Shown() || !reflect.DeepEqual(a.Header(), b.Header()) {
				t.Fatalf("records differ: defs %v/%v, shown %d/%d", a.Defs(), b.Defs(), a.Shown(), b.Shown())
			}
			for i := 0; i < a.Shown(); i++ {
				if a.Line(i) != b.Line(i) || a.RecordAtLine(a.Line(i)) != b.RecordAtLine(b.Line(i)) {
					t.Fatalf("record %d: line %d/%d", i, a.Line(i), b.Line(i))
				}
			}
			positions := []int{s.Len(), 0, s.Len() / 2, s.Len() - 1, 1, s.Len() / 3, s.Len()}
			for _, p := range positions {
				p = max(0, min(p, s.Len()))
				if err := s.Goto(p); err != nil {
					t.Fatal(err)
				}
				if err := mem.Goto(p); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(canonical(s.State()), canonical(mem.State())) {
					t.Fatalf("at %d the indexed session's state differs", p)
				}
				if p > 0 {
					x, y := s.StepAt(p-1), mem.StepAt(p-1)
					if x.Action != y.Action || x.Node != y.Node || x.ErrText() != y.ErrText() || !reflect.DeepEqual(x.Events, y.Events) {
						t.Fatalf("step %d differs: %+v / %+v", p-1, x, y)
					}
				}
			}
		})
	}
}

// TestHorizon: what a session says holds it at Len.
func TestHorizon(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"clean.cgt.jsonl": "{\"cgtviz\": 1}\n{\"op\": \"step\"}\n",
		"bad.cgt.jsonl":   "{\"cgtviz\": 1}\n{\"op\": \"step\"}\n{\"op\": \"read\", \"name\": \"nope\"}\n{\"op\": \"step\"}\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name   string
		path   string // "" for a trace in memory
		follow bool
		want   string
	}{
		{"in memory", "", false, ""},
		{"clean, indexed", "clean.cgt.jsonl", false, ""},
		{"a problem", "bad.cgt.jsonl", false, "stopped before line 3, which does not check: "},
		{"followed", "clean.cgt.jsonl", true, "waiting for more records (following the trace)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s *Session
			if tc.path == "" {
				s = open(t, seeds[0], Options{})
			} else {
				ix, err := traces.OpenIndex(context.Background(), filepath.Join(dir, tc.path), tc.follow)
				if err != nil {
					t.Fatal(err)
				}
				defer ix.Close()
				if !tc.follow {
					ix.Wait()
				} else {
					for ix.Checked() < 1 {
						time.Sleep(5 * time.Millisecond)
					}
				}
				if s, err = NewRecords(Indexed(ix), Options{}); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Goto(s.Len()); err != nil {
				t.Fatal(err)
			}
			if got := s.Horizon(); (tc.want == "" && got != "") || !strings.HasPrefix(got, tc.want) {
				t.Errorf("Horizon() = %q, want %q", got, tc.want)
			}
		})
	}
}
