package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestRunReport(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.cgt.jsonl")
	if err := os.WriteFile(bad, []byte("{\"cgtviz\": 1}\n{\"op\": \"call\", \"fn\": \"nope\", \"args\": []}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string // "OUT" is replaced by a file in a fresh directory
		code    int
		want    []string // in the page (the file, or stdout with -o -)
		wantErr string
	}{
		{name: "page", args: []string{seedA, "-o", "OUT.html"}, want: []string{"<!DOCTYPE html>", `<section id="summary">`, "seed A: del a", `id="n-d0-2"`, "</html>"}},
		{name: "stdout", args: []string{"-o", "-", seedA}, want: []string{"<!DOCTYPE html>", `id="log-table"`}},
		{name: "flags after the trace", args: []string{seedA, "--max-rows", "3", "--max-nodes", "2", "-o", "OUT.htm"}, want: []string{"The log shows 3 of ", "more than the 2 a page draws"}},
		{name: "handoff raise", args: []string{"--handoff", "raise", seedA, "-o", "OUT.html"}, want: []string{"<!DOCTYPE html>"}},
		{name: "help", args: []string{"-h"}, want: []string{"usage: cgtviz report", "-max-rows N"}},
		{name: "no output", args: []string{seedA}, code: 2, wantErr: "cgtviz report: no output file"},
		{name: "no trace", args: []string{"-o", "OUT.html"}, code: 2, wantErr: "want one TRACE, got 0"},
		{name: "two traces", args: []string{seedA, seedA, "-o", "OUT.html"}, code: 2, wantErr: "want one TRACE, got 2"},
		{name: "not html", args: []string{seedA, "-o", "OUT.svg"}, code: 2, wantErr: "the page is HTML; name it .html"},
		{name: "zero rows", args: []string{seedA, "--max-rows", "0", "-o", "OUT.html"}, code: 2, wantErr: "--max-rows 0: want at least 1"},
		{name: "zero nodes", args: []string{seedA, "--max-nodes", "0", "-o", "OUT.html"}, code: 2, wantErr: "--max-nodes 0: want at least 1"},
		{name: "missing trace", args: []string{filepath.Join(dir, "none.cgt.jsonl"), "-o", "OUT.html"}, code: 2, wantErr: "none.cgt.jsonl"},
		{name: "bad trace", args: []string{bad, "-o", "OUT.html"}, code: 2, wantErr: bad + ":2: "},
		{name: "unwritable output", args: []string{seedA, "-o", filepath.Join(dir, "no", "such", "r.html")}, code: 1, wantErr: "cgtviz report: write "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := writeCase(t, func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
				return run(ctx, append([]string{"report"}, args...), stdout, stderr)
			}, "report", dir, tc.name, tc.args, tc.code, tc.wantErr)
			if !ok {
				return
			}
			for _, w := range tc.want {
				if !bytes.Contains(got, []byte(w)) {
					t.Errorf("output lacks %q", w)
				}
			}
		})
	}
}

// TestReportKeepsOldPage checks that a report that fails leaves the page
// it would have replaced as it was.
func TestReportKeepsOldPage(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "r.html")
	if err := os.WriteFile(page, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.cgt.jsonl")
	if err := os.WriteFile(bad, []byte("{\"cgtviz\": 1}\n{\"op\": \"nope\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"report", bad, "-o", page}, &stdout, &stderr); code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	if b, _ := os.ReadFile(page); string(b) != "old" {
		t.Errorf("the old page became %.100q", b)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if code := run(ctx, []string{"report", seedA, "-o", page}, &stdout, &stderr); code == 0 {
		t.Error("a cancelled report succeeded")
	}
	if b, _ := os.ReadFile(page); string(b) != "old" {
		t.Errorf("a cancelled report changed the page: %.100q", b)
	}
}
