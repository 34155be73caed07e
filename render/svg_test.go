package render

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/render/graphviztest"
)

func TestSVGCounts(t *testing.T) {
	tests := []struct {
		name         string
		st           *engine.State
		opts         TreeOptions
		nodes, edges int
	}{
		// 3 graph nodes + 1 start point + the legend; one edge per graph node.
		{"hand", handState(), TreeOptions{}, 3 + 1 + 1, 3},
		{"hand with step", handState(), TreeOptions{StepAction: StepReplayed, StepNode: 0}, 3 + 1 + 1, 3},
		{"subtree", handState(), TreeOptions{Subtree: true, Root: 1}, 1 + 1 + 1, 1},
		// 2 warmups + 2 start points (two devices) + the legend; one
		// dashed edge per warmup.
		{"warmups", warmState(), TreeOptions{}, 2 + 2 + 1, 2},
		{"binary 100", bigState(100), TreeOptions{RankDir: "LR"}, 100 + 1 + 1, 100},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dot, err := TreeDOT(tc.st, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			svg, err := SVG(t.Context(), dot)
			if err != nil {
				t.Fatal(err)
			}
			nodes, edges, _ := svgCounts(t, svg)
			if nodes != tc.nodes || edges != tc.edges {
				t.Errorf("SVG has %d nodes and %d edges, want %d and %d", nodes, edges, tc.nodes, tc.edges)
			}
		})
	}
}

func TestSVGConcurrent(t *testing.T) {
	dots := make([][]byte, 4)
	for i, st := range []*engine.State{handState(), warmState(), bigState(60), escapeState()} {
		d, err := TreeDOT(st, TreeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		dots[i] = d
	}
	want := make([][]byte, len(dots))
	for i, d := range dots {
		svg, err := SVG(t.Context(), d)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = svg
	}
	const workers = 16
	got := make([][]byte, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			got[w], errs[w] = SVG(context.Background(), dots[w%len(dots)])
		}()
	}
	close(start)
	wg.Wait()
	for w := 0; w < workers; w++ {
		if errs[w] != nil {
			t.Errorf("goroutine %d: %v", w, errs[w])
			continue
		}
		if !bytes.Equal(got[w], want[w%len(dots)]) {
			t.Errorf("goroutine %d: SVG differs from the sequential render", w)
		}
	}
}

func TestMain(m *testing.M) { os.Exit(graphviztest.Main(m)) }

func TestSVGBadDOT(t *testing.T) {
	_, err := SVG(t.Context(), []byte("digraph { a -> }"))
	var gerr *GraphvizError
	if !errors.As(err, &gerr) || gerr.Code != 1 || !strings.HasPrefix(err.Error(), "render: svg: cgtviz-graphviz: parse dot:") {
		t.Fatalf("err = %v, want a parse error from cgtviz-graphviz, exit 1", err)
	}
	// Each render is a process of its own: the next one works.
	if _, err := SVG(t.Context(), []byte("digraph { a -> b }")); err != nil {
		t.Fatalf("render after a syntax error: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := SVG(ctx, []byte("digraph { a -> b }")); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled ctx: err = %v, want context.Canceled", err)
	}
}

// fakeGraphviz writes a shell script standing in for cgtviz-graphviz and
// points $CGTVIZ_GRAPHVIZ at it.
func fakeGraphviz(t *testing.T, script string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), GraphvizName)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(GraphvizEnv, p)
	return p
}

// TestSVGChild checks how SVG reports each way the child can end: what it
// wrote on success, its stderr and status on failure, a signal, and ctx
// ending a render that takes too long (the child is killed).
func TestSVGChild(t *testing.T) {
	tests := []struct {
		name    string
		script  string
		timeout time.Duration
		want    string // stdout on success
		code    int    // GraphvizError.Code; 0 for success or another error
		wantErr string
		is      error
	}{
		{name: "success", script: `cat >/dev/null; printf '<svg/>'`, want: "<svg/>"},
		{name: "reads its stdin", script: `tr a-z A-Z`, want: "DIGRAPH { A -> B }"},
		{name: "failure", script: `echo 'cgtviz-graphviz: parse dot: syntax error in line 1' >&2; exit 1`, code: 1,
			wantErr: "render: svg: cgtviz-graphviz: parse dot: syntax error in line 1"},
		{name: "silent failure", script: `exit 3`, code: 3, wantErr: "exit status 3, nothing on stderr"},
		{name: "killed", script: `kill -9 $$`, code: -1, wantErr: "killed by a signal"},
		{name: "too slow", script: `exec sleep 30`, timeout: 200 * time.Millisecond, is: context.DeadlineExceeded},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := fakeGraphviz(t, tc.script)
			ctx := t.Context()
			if tc.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.timeout)
				defer cancel()
			}
			out, err := SVG(ctx, []byte("digraph { a -> b }"))
			if tc.want != "" {
				if err != nil || string(out) != tc.want {
					t.Fatalf("SVG = %q, %v; want %q", out, err, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("SVG = %q, want an error", out)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Fatalf("err = %v, want %v", err, tc.is)
			}
			if tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("err = %q, want it to contain %q", err, tc.wantErr)
			}
			var gerr *GraphvizError
			if tc.code != 0 {
				if !errors.As(err, &gerr) || gerr.Code != tc.code || gerr.Path != path {
					t.Errorf("err = %#v, want a *GraphvizError with code %d and path %s", err, tc.code, path)
				}
			}
		})
	}
}

// TestFindGraphviz checks where cgtviz-graphviz is looked for, and that
// its absence is an error that says how to build it and that DOT needs
// nothing.
func TestFindGraphviz(t *testing.T) {
	onPath := t.TempDir()
	exe := filepath.Join(onPath, GraphvizName)
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	tests := []struct {
		name      string
		env, path string
		want      string
		wantErr   []string
	}{
		{name: "env", env: exe, path: empty, want: exe},
		{name: "env names nothing", env: filepath.Join(empty, "gone"), path: onPath, wantErr: []string{"$CGTVIZ_GRAPHVIZ is", "gone"}},
		{name: "on PATH", path: onPath, want: exe},
		{name: "nowhere", path: empty, wantErr: []string{GraphvizName + " not found: it renders SVG; build it with `make build`", "$PATH", "make build", "./cmd/cgtviz/cgtviz-graphviz", "-o FILE.dot"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if self, err := os.Executable(); err == nil && tc.env == "" {
				if _, err := os.Stat(filepath.Join(filepath.Dir(self), GraphvizName)); err == nil {
					t.Skipf("a %s lies beside the test binary: it comes before PATH", GraphvizName)
				}
			}
			t.Setenv(GraphvizEnv, tc.env)
			t.Setenv("PATH", tc.path)
			got, err := FindGraphviz()
			if tc.wantErr == nil {
				if err != nil || got != tc.want {
					t.Fatalf("FindGraphviz() = %q, %v; want %q", got, err, tc.want)
				}
				return
			}
			if !errors.Is(err, ErrNoGraphviz) {
				t.Fatalf("FindGraphviz() = %q, %v; want ErrNoGraphviz", got, err)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err %q lacks %q", err, w)
				}
			}
			// SVG says the same, and writes nothing.
			if _, serr := SVG(t.Context(), []byte("digraph {}")); !errors.Is(serr, ErrNoGraphviz) {
				t.Errorf("SVG: err = %v, want ErrNoGraphviz", serr)
			}
		})
	}
}

// BenchmarkSVG2000 lays out and renders a 2,000-node tree, the default
// node limit (target: under 3 s an SVG).
func BenchmarkSVG2000(b *testing.B) {
	dot, err := TreeDOT(bigState(2000), TreeOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := SVG(context.Background(), dot); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTreeDOT2000 measures building the DOT text alone.
func BenchmarkTreeDOT2000(b *testing.B) {
	st := bigState(2000)
	for b.Loop() {
		if _, err := TreeDOT(st, TreeOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
