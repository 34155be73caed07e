//go:build linux

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// graphvizPkgs are the packages whose init compiles Graphviz's WebAssembly
// module (go-graphviz) or that run it (wazero): cgtviz must link neither.
var graphvizPkgs = []string{"github.com/goccy/go-graphviz", "github.com/tetratelabs/wazero"}

// TestGraphvizNotLinked checks with go list that cgtviz, plain and with the
// cuda tag, does not link go-graphviz, whose package init costs every
// process that links it (issue 17, item 7), and that cgtviz-graphviz does:
// the check sees the packages where they are.
func TestGraphvizNotLinked(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command here (a test binary carried to another machine)")
	}
	tests := []struct {
		name string
		args []string
		want bool // the Graphviz packages are among the dependencies
	}{
		{"cgtviz", []string{"."}, false},
		{"cgtviz with cuda", []string{"-tags", "cuda", "."}, false},
		{"cgtviz-graphviz", []string{"./cgtviz-graphviz"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := exec.Command("go", append([]string{"list", "-deps"}, tc.args...)...).CombinedOutput()
			if err != nil {
				t.Fatalf("go list -deps %s: %v\n%s", strings.Join(tc.args, " "), err, out)
			}
			deps := strings.Fields(string(out))
			for _, p := range graphvizPkgs {
				found := false
				for _, d := range deps {
					if d == p || strings.HasPrefix(d, p+"/") {
						found = true
						break
					}
				}
				if found != tc.want {
					t.Errorf("%s links %s: %v, want %v", tc.name, p, found, tc.want)
				}
			}
		})
	}
}

// TestStartupWritesNoGraphvizCache runs the real command line (this test
// binary acting as cgtviz) with $TMPDIR an empty folder: a command that
// renders nothing through Graphviz must leave $TMPDIR/go-graphviz, where
// go-graphviz's init caches its compiled module, absent; export to SVG
// renders through cgtviz-graphviz, the child that pays it instead.
func TestStartupWritesNoGraphvizCache(t *testing.T) {
	work := t.TempDir()
	trace := filepath.Join(work, "t.cgt.jsonl")
	seed, err := os.ReadFile(seedA)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(trace, seed, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		args  []string
		cache bool   // $TMPDIR/go-graphviz exists afterwards
		out   string // a file the command writes, in work
		want  string // what that file (or else stdout) holds
	}{
		// Each row starts the test binary (under -race in make test): the
		// commands of the issue, and DOT export; go list above covers
		// every other command of the same binary.
		{name: "version", args: []string{"version"}, want: "cgtviz"},
		{name: "run", args: []string{"run", trace}, want: "counters:"},
		{name: "check", args: []string{"check", trace}},
		{name: "export dot", args: []string{"export", trace, "-o", "t.dot"}, out: "t.dot", want: "digraph cgt {"},
		{name: "export svg", args: []string{"export", trace, "-o", "t.svg"}, cache: true, out: "t.svg", want: "<svg"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			cmd := exec.Command(os.Args[0], tc.args...)
			cmd.Dir = work
			cmd.Env = append(cleanEnv(), asMainEnv+"=1", "TMPDIR="+tmp)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("cgtviz %s: %v\nstderr: %s", strings.Join(tc.args, " "), err, stderr.String())
			}
			got := stdout.Bytes()
			if tc.out != "" {
				if got, err = os.ReadFile(filepath.Join(work, tc.out)); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Contains(got, []byte(tc.want)) {
				t.Errorf("output lacks %q: %.300s", tc.want, got)
			}
			checkGraphvizCache(t, tmp, tc.cache)
		})
	}
}

// TestStartupTUI opens the TUI on the demo with $TMPDIR an empty folder:
// its start leaves no Graphviz cache; its export (e) renders through
// cgtviz-graphviz, which does.
func TestStartupTUI(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no end-to-end run")
	}
	dir, tmp := t.TempDir(), t.TempDir()
	term := startTUI(t, dir, []string{"TMPDIR=" + tmp})
	term.expect("1 Tree")
	checkGraphvizCache(t, tmp, false)
	term.keys("e")
	term.expect("cgtviz-tree-line0.svg")
	term.keys("q")
	term.exited()
	svg, err := os.ReadFile(filepath.Join(dir, "cgtviz-tree-line0.svg"))
	if err != nil || !bytes.Contains(svg, []byte("<svg")) {
		t.Errorf("the TUI's export: %.200q, %v", svg, err)
	}
	checkGraphvizCache(t, tmp, true)
}

// checkGraphvizCache checks whether go-graphviz's module cache lies in tmp.
func checkGraphvizCache(t *testing.T, tmp string, want bool) {
	t.Helper()
	_, err := os.Stat(filepath.Join(tmp, "go-graphviz"))
	if got := err == nil; got != want {
		t.Errorf("$TMPDIR/go-graphviz exists: %v, want %v", got, want)
	}
}
