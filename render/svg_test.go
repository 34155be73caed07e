package render

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/cgtviz/cgtviz/engine"
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

func TestSVGBadDOT(t *testing.T) {
	if _, err := SVG(t.Context(), []byte("digraph { a -> }")); err == nil || !strings.Contains(err.Error(), "render: svg: parse dot:") {
		t.Fatalf("err = %v, want a parse error", err)
	}
	// A syntax error does not break Graphviz: the next render works.
	if _, err := SVG(t.Context(), []byte("digraph { a -> b }")); err != nil {
		t.Fatalf("render after a syntax error: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := SVG(ctx, []byte("digraph { a -> b }")); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled ctx: err = %v, want context.Canceled", err)
	}
}

// TestSVGLatched checks that once the wasm module has failed, SVG refuses
// at once with the first failure instead of calling into it again. The
// failure is injected: really breaking the module would break the other
// tests of this process, which is the point of the latch.
func TestSVGLatched(t *testing.T) {
	gv.mu.Lock()
	gv.failed = errors.New("layout and render: module closed with exit_code(1)")
	gv.mu.Unlock()
	defer func() {
		gv.mu.Lock()
		gv.failed = nil
		gv.mu.Unlock()
	}()
	for i := 0; i < 2; i++ {
		_, err := SVG(t.Context(), []byte("digraph { a -> b }"))
		want := "render: svg: graphviz is unavailable in this process after an earlier failure: layout and render: module closed with exit_code(1)"
		if err == nil || err.Error() != want || !errors.Is(err, ErrUnavailable) {
			t.Fatalf("call %d: err = %v, want %q", i, err, want)
		}
	}
}

func TestIsWasmFailure(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{errors.New("syntax error in line 1 near '}'"), false},
		{errors.New(`Layout type: "dot" not recognized`), false},
		{fmt.Errorf("render: %w", errors.New("module closed with exit_code(1)")), true},
		{errors.New("wasm error: out of bounds memory access"), true},
		{errors.New("failed to create graphviz context"), true},
		{errors.New("failed to read wasm memory"), true},
	}
	for _, tc := range tests {
		if got := isWasmFailure(tc.err); got != tc.want {
			t.Errorf("isWasmFailure(%q) = %v, want %v", tc.err, got, tc.want)
		}
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
