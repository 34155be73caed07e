package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
)

// TestComplete: what the completion scripts get for each kind of word.
func TestComplete(t *testing.T) {
	t.Chdir("../../examples")
	tests := []struct {
		name   string
		before []string
		cur    string
		want   []string // all of these, in order
		not    string   // and not this
	}{
		{"commands", nil, "ex", []string{"export"}, "run"},
		{"commands and traces", nil, "s0", []string{"s01-warmup-record-replay.cgt.jsonl"}, "export"},
		{"TUI flags", nil, "-ha", []string{"-handoff"}, "--handoff"},
		{"root flags", nil, "--v", []string{"--version"}, ""},
		{"command flags", []string{"run"}, "--f", []string{"--follow", "--follow-timeout"}, "--json"},
		{"flag value", []string{"run", "--handoff"}, "", []string{"preserve", "raise"}, ""},
		{"TUI flag value", []string{"-device"}, "c", []string{"cuda"}, "sim"},
		{"export --format", []string{"export", "x.cgt.jsonl", "--format"}, "", []string{"dot", "svg"}, ""},
		{"bool flag takes no value", []string{"run", "--json"}, "s07", []string{"s07-chain-handoff.cgt.jsonl"}, ""},
		{"directories", []string{"check"}, "rec", []string{"recorded/"}, ""},
		{"traces only", []string{"check"}, "", []string{"seed-a-checkpoint.cgt.jsonl"}, "examples.go"},
		{"-o takes any file", []string{"export", "t", "-o"}, "exa", []string{"examples.go"}, ""},
		{"shells", []string{"completion"}, "", []string{"bash", "fish", "zsh"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := complete(tc.before, tc.cur)
			i := 0
			for _, g := range got {
				if i < len(tc.want) && g == tc.want[i] {
					i++
				}
			}
			if i < len(tc.want) {
				t.Errorf("complete(%q, %q) = %q, want %q among them", tc.before, tc.cur, got, tc.want)
			}
			if tc.not != "" && slices.Contains(got, tc.not) {
				t.Errorf("complete(%q, %q) = %q, has %q", tc.before, tc.cur, got, tc.not)
			}
		})
	}
}

// TestCompletionScripts: each shell's script comes out and a bad shell is
// refused.
func TestCompletionScripts(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish"} {
		var out bytes.Buffer
		if code := run(context.Background(), []string{"completion", sh}, &out, &out); code != 0 || !strings.Contains(out.String(), "cgtviz __complete") {
			t.Errorf("completion %s: exit %d\n%s", sh, code, out.String())
		}
	}
	var out bytes.Buffer
	if code := run(context.Background(), []string{"completion", "tcsh"}, &out, &out); code != 2 {
		t.Errorf("completion tcsh: exit %d, want 2", code)
	}
}
