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

// TestRunShowsNotesOfTraceWithoutCalls: a recording that could record no
// call says why only in its notes (cudagraphs made outside the trees, a
// torch cgtrace cannot wrap); run's summary then shows them, where it
// would show a bare empty tree, and --log shows every note at its line.
// A trace with calls keeps its summary as it was.
func TestRunShowsNotesOfTraceWithoutCalls(t *testing.T) {
	dir := t.TempDir()
	quiet := filepath.Join(dir, "quiet.cgt.jsonl")
	text := `{"cgtviz": 1, "name": "q"}` + "\n"
	for i := 1; i <= 10; i++ { // (the summary shows 8)
		text += `{"op": "note", "text": "graph ` + string(rune('0'+i%10)) + ` outside the trees"}` + "\n"
	}
	if err := os.WriteFile(quiet, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"run", quiet}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"no compiled calls in " + quiet + "; its notes say:\n  line 2: graph 1 outside the trees\n",
		"  line 9: graph 8 outside the trees\n  (and 2 more)\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q in\n%s", want, out.String())
		}
	}
	out.Reset()
	if code := run(context.Background(), []string{"run", "--log", quiet}, &out, &errb); code != 0 {
		t.Fatalf("--log: exit %d: %s", code, errb.String())
	}
	if want := quiet + ":11: note: graph 0 outside the trees\n"; !strings.Contains(out.String(), want) {
		t.Errorf("--log lacks %q in\n%s", want, out.String())
	}

	busy := filepath.Join(dir, "busy.cgt.jsonl")
	text = `{"cgtviz": 1, "name": "b"}` + "\n" + `{"op": "def", "fn": "f", "params": ["x"], "body": [{"out": "y", "k": "add", "a": "x", "b": 1}], "returns": ["y"]}` + "\n" +
		`{"op": "tensor", "name": "x", "shape": [4], "init": "rand", "seed": 1}` + "\n" +
		`{"op": "note", "text": "a note"}` + "\n" + `{"op": "call", "fn": "f", "args": ["x"], "out": ["o"]}` + "\n"
	if err := os.WriteFile(busy, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if code := run(context.Background(), []string{"run", busy}, &out, &errb); code != 0 {
		t.Fatalf("busy: exit %d: %s", code, errb.String())
	}
	if strings.Contains(out.String(), "no compiled calls") {
		t.Errorf("a trace with calls got the notes' summary:\n%s", out.String())
	}
}
