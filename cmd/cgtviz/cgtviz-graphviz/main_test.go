package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		stdin    string
		maxInput int // 0: the default
		code     int
		wantOut  []string
		wantErr  string
		emptyOut bool
	}{
		{name: "svg", stdin: "digraph { a -> b }", wantOut: []string{"<svg", `<title>a&#45;&gt;b</title>`}},
		{name: "svg asked", args: []string{"-T", "svg"}, stdin: `digraph { "x \"y\"" }`, wantOut: []string{"<svg", "x &quot;y&quot;"}},
		{name: "utf-8 label", stdin: `digraph { n [label="#0 föö ✓"] }`, wantOut: []string{"#0 föö ✓"}},
		{name: "syntax error", stdin: "digraph { a -> }", code: 1, wantErr: "cgtviz-graphviz: parse dot: ", emptyOut: true},
		{name: "not dot", stdin: "\x7fELF\x00\x01", code: 1, wantErr: "cgtviz-graphviz: ", emptyOut: true},
		{name: "empty input", stdin: "", code: 1, wantErr: "cgtviz-graphviz: ", emptyOut: true},
		{name: "too big", stdin: "digraph { a -> b }", maxInput: 8, code: 1, wantErr: "the graph on stdin is over 8 bytes", emptyOut: true},
		{name: "bad format", args: []string{"-T", "png"}, stdin: "digraph {}", code: 2, wantErr: "-T png: want svg", emptyOut: true},
		{name: "argument", args: []string{"tree.dot"}, code: 2, wantErr: `unexpected argument "tree.dot": the graph comes on standard input`, emptyOut: true},
		{name: "bad flag", args: []string{"-x"}, code: 2, wantErr: "flag provided but not defined: -x", emptyOut: true},
		{name: "help", args: []string{"-h"}, wantErr: "usage: cgtviz-graphviz", emptyOut: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.maxInput > 0 {
				old := maxInput
				maxInput = tc.maxInput
				defer func() { maxInput = old }()
			}
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tc.args, strings.NewReader(tc.stdin), &stdout, &stderr)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tc.code, stderr.String())
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("stdout lacks %q:\n%.2000s", w, stdout.String())
				}
			}
			if tc.wantErr != "" && !strings.Contains(stderr.String(), tc.wantErr) {
				t.Errorf("stderr lacks %q: %s", tc.wantErr, stderr.String())
			}
			if tc.emptyOut && stdout.Len() > 0 {
				t.Errorf("stdout not empty: %.200q", stdout.String())
			}
		})
	}
}

// TestRunCancelled checks that a cancelled context renders nothing.
func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr bytes.Buffer
	if code := run(ctx, nil, strings.NewReader("digraph { a -> b }"), &stdout, &stderr); code != 1 || stdout.Len() > 0 {
		t.Fatalf("exit %d, stdout %d bytes, want 1 and nothing; stderr: %s", code, stdout.Len(), stderr.String())
	}
	if !strings.Contains(stderr.String(), "context canceled") {
		t.Errorf("stderr: %s", stderr.String())
	}
}
