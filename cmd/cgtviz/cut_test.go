package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCutTrace: a trace a crashed recording left (its last line broken off)
// checks with exit 0, check saying it is cut, and run runs the records
// before it and says so at the end.
func TestCutTrace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cut.cgt.jsonl")
	if err := os.WriteFile(path, []byte(cleanTrace+`{"op": "call", "fn": "f", "args": ["x"], "ou`), 0o644); err != nil {
		t.Fatal(err)
	}
	const said = "cut.cgt.jsonl:5: the trace ends mid-record (cut: the recording stopped, e.g. the program crashed); the 3 records before it are checked"
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"check", path}, &out, &errb); code != 0 {
		t.Fatalf("check: exit %d\n%s%s", code, out.String(), errb.String())
	}
	if !strings.Contains(errb.String(), said) || !strings.Contains(out.String(), "ok (3 records)") {
		t.Errorf("check said:\n%s%s", out.String(), errb.String())
	}
	out.Reset()
	errb.Reset()
	if code := run(context.Background(), []string{"run", path}, &out, &errb); code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, out.String(), errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if last := lines[len(lines)-1]; !strings.HasSuffix(last, said) {
		t.Errorf("run's last line is %q, want the cut\n%s", last, out.String())
	}
	if !strings.Contains(out.String(), "call f            warmup") {
		t.Errorf("run did not run the records before the cut:\n%s", out.String())
	}
}

// TestUnendedTrace: a trace whose header says its recording did not end
// (cgtrace's journal, left by a program that died between two writes: no
// line cut) checks with exit 0, check and run saying the recording did not
// end; the same trace without that key, or cut as well, says nothing more
// than before.
func TestUnendedTrace(t *testing.T) {
	const journal = `{"cgtviz": 1, "devices": 1, "meta": {"torch": "2.11.0", "journal": "written as the program ran; the recording did not end"}}
`
	body := strings.SplitN(cleanTrace, "\n", 2)[1]
	dir := t.TempDir()
	for _, tc := range []struct {
		name, text string
		unended    bool
	}{
		{"unended", journal + body, true},
		{"ended", `{"cgtviz": 1, "devices": 1, "meta": {"torch": "2.11.0"}}` + "\n" + body, false},
		{"journal-null", `{"cgtviz": 1, "devices": 1, "meta": {"journal": null}}` + "\n" + body, false},
		{"cut", journal + body + `{"op": "ca`, false}, // (the cut says it)
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name+".cgt.jsonl")
			if err := os.WriteFile(path, []byte(tc.text), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, cmd := range []string{"check", "run"} {
				var out, errb bytes.Buffer
				if code := run(context.Background(), []string{cmd, path}, &out, &errb); code != 0 {
					t.Fatalf("%s: exit %d\n%s%s", cmd, code, out.String(), errb.String())
				}
				said := strings.Contains(out.String()+errb.String(), "the recording did not end")
				if said != tc.unended {
					t.Errorf("%s said the recording did not end: %v, want %v\n%s%s", cmd, said, tc.unended, out.String(), errb.String())
				}
				if tc.name == "cut" && !strings.Contains(out.String()+errb.String(), "the trace ends mid-record") {
					t.Errorf("%s did not say the trace is cut\n%s%s", cmd, out.String(), errb.String())
				}
			}
		})
	}
}
