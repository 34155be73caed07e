package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestLogLinesLocated: every line --log writes starts with the record's
// file:line, a re-record's reason and an error's stack trace included
// (issue 34 item 12: they came without one).
func TestLogLinesLocated(t *testing.T) {
	files, err := filepath.Glob("../../examples/*.cgt.jsonl")
	if err != nil || len(files) == 0 {
		t.Fatalf("examples: %v", err)
	}
	recorded, _ := filepath.Glob("../../examples/recorded/*.cgt.jsonl")
	multi := 0
	for _, f := range append(files, recorded...) {
		var out, errb bytes.Buffer
		run(context.Background(), []string{"run", "--log", "--json", f}, &out, &errb)
		lines := strings.Split(strings.TrimSuffix(errb.String(), "\n"), "\n")
		for i, l := range lines {
			if l == "" || strings.HasPrefix(l, "hint: ") {
				continue
			}
			if !strings.HasPrefix(l, f+":") {
				t.Errorf("%s: --log line %d has no file:line: %q", filepath.Base(f), i+1, l)
			}
			if i > 0 && strings.HasPrefix(l, f+":") && strings.Contains(l, "Re-recording function=") {
				multi++
			}
		}
	}
	if multi == 0 {
		t.Error("no example logged a re-record's reason: the test no longer sees a message of several lines")
	}
}
