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

// TestLogNamesUserLine: --log names the user's line of a step whose record
// carries one, before the step's own lines (issue 33 item 3).
func TestLogNamesUserLine(t *testing.T) {
	const f = "../../traces/testdata/good/src.cgt.jsonl"
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"run", "--log", f}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	want := f + ":5: [__cudagraphs] from train.py:73 (in step)\n" + f + ":5: [__cudagraphs] Running warmup of function 0\n"
	if !strings.Contains(out.String(), want) {
		t.Errorf("--log lacks\n%s in\n%s", want, out.String())
	}
}
