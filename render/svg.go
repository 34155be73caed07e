package render

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/goccy/go-graphviz"
)

// gv is the process's one Graphviz instance. go-graphviz runs Graphviz as a
// single WebAssembly module shared by the whole process: concurrent calls
// corrupt it (goccy/go-graphviz#117), so mu serialises every call, and once
// the module fails at the wasm level it never works again, so the first
// such failure is kept in failed and reported from then on.
var gv struct {
	mu     sync.Mutex
	once   sync.Once
	g      *graphviz.Graphviz
	failed error
}

// ErrUnavailable is wrapped by SVG's errors once Graphviz has failed in a way
// that leaves its module unusable for the rest of the process.
var ErrUnavailable = errors.New("graphviz is unavailable in this process after an earlier failure")

// wasmFailures are the messages of failures that leave the wasm module
// broken: after them even graphviz.New fails.
var wasmFailures = []string{
	"module closed",
	"out of bounds",
	"failed to create graphviz context",
	"wasm error",
	"failed to read wasm memory",
}

// isWasmFailure reports whether err means the wasm module is broken (as
// opposed to a bad input such as a DOT syntax error, after which Graphviz
// keeps working).
func isWasmFailure(err error) bool {
	msg := err.Error()
	for _, m := range wasmFailures {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}

// SVG lays out dot with Graphviz's dot engine and returns the picture as
// SVG. Calls are serialised process-wide. A DOT syntax error is returned
// as such and later calls work; a wasm-level failure makes this and every
// later call fail with ErrUnavailable. Layout time is not bounded by ctx
// (go-graphviz does not honour it mid-layout): ctx is checked before
// starting, and callers bound the work by bounding the graph
// (TreeOptions.MaxNodes).
func SVG(ctx context.Context, dot []byte) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("render: svg: %w", err)
	}
	gv.mu.Lock()
	defer gv.mu.Unlock()
	if gv.failed != nil {
		return nil, fmt.Errorf("render: svg: %w: %v", ErrUnavailable, gv.failed)
	}
	gv.once.Do(func() {
		g, err := graphviz.New(context.Background())
		if err != nil {
			gv.failed = fmt.Errorf("start graphviz: %w", err)
			return
		}
		gv.g = g
	})
	if gv.failed != nil {
		return nil, fmt.Errorf("render: svg: %w: %v", ErrUnavailable, gv.failed)
	}
	out, err := renderLocked(ctx, dot)
	if err != nil {
		if isWasmFailure(err) {
			gv.failed = err
		}
		return nil, fmt.Errorf("render: svg: %w", err)
	}
	return out, nil
}

// renderLocked parses and renders dot; gv.mu must be held. A panic inside
// the bindings is turned into an error (and counts as a wasm failure: the
// module's state is unknown afterwards) so bad input never crashes the
// caller.
func renderLocked(ctx context.Context, dot []byte) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("wasm error: graphviz panicked: %v", r)
		}
	}()
	graph, err := graphviz.ParseBytes(dot)
	if err != nil {
		return nil, fmt.Errorf("parse dot: %w", err)
	}
	defer func() {
		if cerr := graph.Close(); cerr != nil && err == nil {
			out, err = nil, fmt.Errorf("close graph: %w", cerr)
		}
	}()
	// Render into memory: RenderFilename with a relative path closes the
	// module for good (goccy/go-graphviz#115).
	var buf bytes.Buffer
	if err := gv.g.Render(ctx, graph, graphviz.SVG, &buf); err != nil {
		return nil, fmt.Errorf("layout and render: %w", err)
	}
	return buf.Bytes(), nil
}
