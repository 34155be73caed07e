package main

import (
	"bytes"
	"context"
	"os"
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

// TestReportNamesDefSource: the report's table of compiled functions says
// where each is defined, from its def record's src (issue 33 item 3).
func TestReportNamesDefSource(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r.html")
	var so, se bytes.Buffer
	if code := run(context.Background(), []string{"report", "../../traces/testdata/good/src.cgt.jsonl", "-o", out}, &so, &se); code != 0 {
		t.Fatalf("exit %d: %s", code, se.String())
	}
	page, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "model.py:12 (in forward)") {
		t.Error("the report does not name forward_0's definition, model.py:12 (in forward)")
	}
}
