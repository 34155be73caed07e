package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunVersionNote: run's report names a recording PyTorch other than
// 2.11 in one line, beside the handoff line, and says nothing for 2.11 or
// for a trace that names no version.
func TestRunVersionNote(t *testing.T) {
	data, err := os.ReadFile("../../examples/s07-chain-handoff.cgt.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	withVersion := func(name, v string) string {
		d := data
		if v != "" {
			d = bytes.Replace(data, []byte(`"meta": {`), []byte(`"meta": {"torch": "`+v+`", `), 1)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, d, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name, version string
		flags         []string
		want          string // the note line; "" for none
	}{
		{"2.14", "2.14.0", nil, "note: recorded on torch 2.14.0; cgtviz models 2.11's decisions (the handoff rule follows 2.14.0: preserve)"},
		{"2.12 raises", "2.12.1", nil, "note: recorded on torch 2.12.1; cgtviz models 2.11's decisions (the handoff rule follows 2.12.1: raise)"},
		{"2.14 with a flag", "2.14.0", []string{"--handoff", "raise"}, "note: recorded on torch 2.14.0; cgtviz models 2.11's decisions (the handoff rule is --handoff's: raise)"},
		{"2.11", "2.11.0+cu130", nil, ""},
		{"no version", "", nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := withVersion(strings.ReplaceAll(tc.name, " ", "_")+".cgt.jsonl", tc.version)
			var out, errb bytes.Buffer
			run(context.Background(), append(append([]string{"run"}, tc.flags...), p), &out, &errb)
			var notes []string
			for i, l := range strings.Split(out.String(), "\n") {
				if strings.HasPrefix(l, "note: recorded on torch") {
					notes = append(notes, l)
					if i > 2 {
						t.Errorf("the note is line %d of the report, want it in the head:\n%s", i+1, out.String())
					}
				}
			}
			switch {
			case tc.want == "" && len(notes) > 0:
				t.Errorf("a note for %q: %q", tc.version, notes)
			case tc.want != "" && (len(notes) != 1 || notes[0] != tc.want):
				t.Errorf("notes %q, want %q\n%s", notes, tc.want, out.String())
			}
		})
	}
}
