package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cgtviz/cgtviz/render"
	"github.com/cgtviz/cgtviz/tools/golden"
)

// seedA is the demo trace. Line 32 is the call of fee that records #2
// after a checkpoint (its expect, line 33, says checkpoints 1); line 7 is
// foo's first call, a warmup.
const seedA = "../../examples/seed-a-checkpoint.cgt.jsonl"

func TestRunExport(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.cgt.jsonl")
	if err := os.WriteFile(bad, []byte("{\"cgtviz\": 1}\n{\"op\": \"call\", \"fn\": \"nope\", \"args\": []}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string // "OUT" is replaced by a file in a fresh directory
		code int
		// want are substrings of the output file (or of stdout with -o -);
		// wantErr of stderr.
		want    []string
		notWant []string
		wantErr string
	}{
		{name: "tree at the end", args: []string{seedA, "-o", "OUT.dot"}, want: []string{
			"digraph cgt {", `d0_n0 [label="#0 foo`, `d0_n2 [label="#2 fee`, "seed A: del a", "CUDAGraph tree after line 41", "line 41: read",
		}},
		{name: "flags after and before the trace", args: []string{"--rankdir", "LR", seedA, "--max-nodes", "3", "-o", "OUT.dot"}, want: []string{"rankdir=LR"}},
		{name: "checkpoint step by line", args: []string{seedA, "--line", "32", "-o", "OUT.dot"}, want: []string{
			"line 32: call fee: record #2 after a checkpoint", "this step: recorded", "checkpoint restored",
		}},
		{name: "line of a non-call record", args: []string{seedA, "--line", "33", "-o", "OUT.dot"}, want: []string{"line 33: expect"}},
		{name: "header line: nothing run", args: []string{seedA, "--line", "1", "-o", "OUT.dot"}, want: []string{"CUDAGraph tree at the start"}, notWant: []string{"d0_n0", "records"}},
		{name: "warmup step", args: []string{seedA, "--step", "6", "-o", "OUT.dot"}, want: []string{"line 7: call foo: warmup", "this step: warmed", "warmup -1 foo"}},
		{name: "subtree", args: []string{seedA, "--node", "2", "-o", "OUT.dot"}, want: []string{"subtree of #2", "d0_n2 ["}, notWant: []string{"d0_n0 [", "d0_n1 ["}},
		{name: "node graph", args: []string{seedA, "--graph", "--node", "0", "-o", "OUT.dot"}, want: []string{"digraph dot {", "CUDA graph of #0 foo", "KERNEL"}},
		{name: "svg from the extension", args: []string{seedA, "-o", "OUT.svg"}, want: []string{"<svg", `class="node"`}},
		{name: "svg to stdout", args: []string{seedA, "--format", "svg", "-o", "-"}, want: []string{"<svg"}},
		{name: "dot to stdout", args: []string{seedA, "-o", "-"}, want: []string{"digraph cgt {"}},
		{name: "help", args: []string{"-h"}, want: []string{"-max-nodes N", "-node ID\n"}},
		{name: "node not a number", args: []string{seedA, "--node", "x", "-o", "OUT"}, code: 2, wantErr: `invalid value "x" for flag -node: not a graph id: "x"`},
		{name: "negative node", args: []string{seedA, "--node", "-3", "-o", "OUT"}, code: 2, wantErr: "--node -3: graph ids count from 0"},

		{name: "no trace", args: []string{"-o", "OUT"}, code: 2, wantErr: "cgtviz export: no trace given"},
		{name: "two traces", args: []string{seedA, seedA, "-o", "OUT"}, code: 2, wantErr: "cgtviz export: one trace at a time"},
		{name: "no output", args: []string{seedA}, code: 2, wantErr: "cgtviz export: no output file"},
		{name: "line and step", args: []string{seedA, "--line", "3", "--step", "2", "-o", "OUT"}, code: 2, wantErr: "--line and --step both given"},
		{name: "line zero", args: []string{seedA, "--line", "0", "-o", "OUT"}, code: 2, wantErr: "--line 0: lines count from 1"},
		{name: "line past the end", args: []string{seedA, "--line", "99", "-o", "OUT"}, code: 2, wantErr: "--line 99: out of range: ../../examples/seed-a-checkpoint.cgt.jsonl has lines 1 to 41"},
		{name: "step past the end", args: []string{seedA, "--step", "41", "-o", "OUT"}, code: 2, wantErr: "--step 41: ../../examples/seed-a-checkpoint.cgt.jsonl has 40 records"},
		{name: "graph without node", args: []string{seedA, "--graph", "-o", "OUT"}, code: 2, wantErr: "--graph needs --node ID"},
		{name: "bad format", args: []string{seedA, "--format", "png", "-o", "OUT"}, code: 2, wantErr: "--format png: want dot or svg"},
		{name: "bad rankdir", args: []string{seedA, "--rankdir", "XY", "-o", "OUT"}, code: 2, wantErr: "--rankdir XY: want TB or LR"},
		{name: "zero max nodes", args: []string{seedA, "--max-nodes", "0", "-o", "OUT"}, code: 2, wantErr: "--max-nodes 0: want at least 1"},
		{name: "unknown flag", args: []string{seedA, "--colour", "-o", "OUT"}, code: 2, wantErr: "cgtviz export: flag provided but not defined: -colour"},
		{name: "missing node", args: []string{seedA, "--node", "9", "-o", "OUT"}, code: 2, wantErr: "--node 9: device 0 has no node #9 at this point (it has 3)"},
		{name: "node not yet recorded", args: []string{seedA, "--line", "15", "--node", "1", "-o", "OUT"}, code: 2, wantErr: "--node 1: device 0 has no node #1 at this point (it has 1)"},
		{name: "missing device", args: []string{seedA, "--device", "1", "-o", "OUT"}, code: 2, wantErr: "--device 1: the trace has 1 device(s)"},
		{name: "missing trace", args: []string{filepath.Join(dir, "none.cgt.jsonl"), "-o", "OUT"}, code: 2, wantErr: "none.cgt.jsonl"},
		{name: "bad trace", args: []string{bad, "-o", "OUT"}, code: 2, wantErr: bad + ":2: "},
		{name: "over the node limit", args: []string{seedA, "--max-nodes", "2", "-o", "OUT"}, code: 1,
			wantErr: "cgtviz export: tree has 3 nodes; over the limit of 2: export a subtree with --node ID or raise --max-nodes"},
		{name: "unwritable output", args: []string{seedA, "-o", filepath.Join(dir, "no", "such", "dir.dot")}, code: 1, wantErr: "cgtviz export: write "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := writeCase(t, runExport, "export", dir, tc.name, tc.args, tc.code, tc.wantErr)
			if !ok {
				return
			}
			for _, w := range tc.want {
				if !bytes.Contains(got, []byte(w)) {
					t.Errorf("output lacks %q:\n%s", w, got)
				}
			}
			for _, w := range tc.notWant {
				if bytes.Contains(got, []byte(w)) {
					t.Errorf("output has %q:\n%s", w, got)
				}
			}
		})
	}
}

// TestExportSVGGolden checks export's SVG byte for byte against goldens
// (go test -update rewrites them): the pictures cgtviz-graphviz renders as a
// child are those cgtviz rendered in-process before it (issue 17, item 7).
func TestExportSVGGolden(t *testing.T) {
	tests := []struct {
		golden string
		args   []string
	}{
		{"seed-a.svg", []string{seedA}},
		{"seed-a-line32-lr.svg", []string{seedA, "--line", "32", "--rankdir", "LR"}},
		{"seed-a-node2-graph.svg", []string{seedA, "--node", "2", "--graph"}},
	}
	for _, tc := range tests {
		t.Run(tc.golden, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append(tc.args, "--format", "svg", "-o", "-")
			if code := runExport(t.Context(), args, &stdout, &stderr); code != 0 {
				t.Fatalf("cgtviz export %s: exit %d\n%s", strings.Join(args, " "), code, stderr.String())
			}
			golden.Check(t, filepath.Join("testdata", "export", tc.golden), stdout.Bytes())
		})
	}
}

// TestExportNoGraphviz checks that export to SVG without cgtviz-graphviz
// fails with the way to build it, writes nothing, and that DOT still works.
func TestExportNoGraphviz(t *testing.T) {
	t.Setenv(render.GraphvizEnv, "")
	t.Setenv("PATH", t.TempDir())
	if self, err := os.Executable(); err == nil {
		if _, err := os.Stat(filepath.Join(filepath.Dir(self), render.GraphvizName)); err == nil {
			t.Skipf("a %s lies beside the test binary", render.GraphvizName)
		}
	}
	dir := t.TempDir()
	tests := []struct {
		out     string
		code    int
		wantErr []string
	}{
		{out: "tree.svg", code: 1, wantErr: []string{"cgtviz export: render: svg: cgtviz-graphviz not found: it renders SVG; build it with `make build`", "make build", "-o FILE.dot needs no Graphviz"}},
		{out: "tree.dot"},
	}
	for _, tc := range tests {
		t.Run(tc.out, func(t *testing.T) {
			out := filepath.Join(dir, tc.out)
			var stdout, stderr bytes.Buffer
			code := runExport(t.Context(), []string{seedA, "-o", out}, &stdout, &stderr)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s", code, tc.code, stderr.String())
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
				}
			}
			_, err := os.Stat(out)
			if exists := err == nil; exists != (tc.code == 0) {
				t.Errorf("%s exists: %v after exit %d", out, exists, code)
			}
		})
	}
}
