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
