// Command cgtviz-graphviz lays out one Graphviz DOT graph and writes it as
// SVG: DOT on standard input, the picture on standard output.
//
// Usage:
//
//	cgtviz-graphviz [-T svg] < tree.dot > tree.svg
//
// cgtviz runs it as a child process for every picture it renders (export
// to .svg, the TUI's e and :export), and only then. Graphviz comes from
// github.com/goccy/go-graphviz, which compiles its WebAssembly build of
// Graphviz in a package init: every process that links it pays for that
// at start (about 0.7 s and 5.9 MB written to $TMPDIR/go-graphviz the
// first time, 0.03 s after), whatever it does. Living in its own
// executable, that cost falls on the renders alone, never on `cgtviz
// version`, `run`, `check` or the TUI's start.
//
// Exit status: 0 with the picture on stdout; 1 when the DOT does not parse
// or Graphviz fails, the cause on stderr; 2 for a bad flag or argument.
// One process renders one graph, so a failure of the WebAssembly module
// ends with it and never reaches the next render.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/goccy/go-graphviz"
)

// maxInput bounds the DOT read from stdin, so that a runaway writer cannot
// exhaust memory: cgtviz's largest tree (--max-nodes at its default of
// 2,000) is well under a megabyte of DOT.
var maxInput = 256 << 20

// formats are the output formats -T accepts, by Graphviz's names.
var formats = map[string]graphviz.Format{"svg": graphviz.SVG}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the whole program, testable: it returns the exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("cgtviz-graphviz", flag.ContinueOnError)
	fs.SetOutput(stderr)
	format := fs.String("T", "svg", "output `format` (svg)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: cgtviz-graphviz [-T svg] < graph.dot > graph.svg\n\nLays out the DOT graph on stdin with Graphviz's dot and writes the picture to stdout.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "cgtviz-graphviz: unexpected argument %q: the graph comes on standard input\n", fs.Arg(0))
		return 2
	}
	f, ok := formats[*format]
	if !ok {
		fmt.Fprintf(stderr, "cgtviz-graphviz: -T %s: want svg\n", *format)
		return 2
	}
	dot, err := io.ReadAll(io.LimitReader(stdin, int64(maxInput)+1))
	if err != nil {
		fmt.Fprintf(stderr, "cgtviz-graphviz: read stdin: %v\n", err)
		return 1
	}
	if len(dot) > maxInput {
		fmt.Fprintf(stderr, "cgtviz-graphviz: the graph on stdin is over %d bytes\n", maxInput)
		return 1
	}
	out, err := render(ctx, dot, f)
	if err != nil {
		fmt.Fprintf(stderr, "cgtviz-graphviz: %v\n", err)
		return 1
	}
	if _, err := stdout.Write(out); err != nil {
		fmt.Fprintf(stderr, "cgtviz-graphviz: write stdout: %v\n", err)
		return 1
	}
	return 0
}

// render parses dot and lays it out with Graphviz's dot engine. A panic in
// the bindings becomes an error, so that bad input ends in a message and
// exit 1, not a crash.
func render(ctx context.Context, dot []byte, format graphviz.Format) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("graphviz panicked: %v", r)
		}
	}()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	g, err := graphviz.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("start graphviz: %w", err)
	}
	defer g.Close()
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
	// module (goccy/go-graphviz#115), and a whole picture lets run report
	// a failure before writing anything.
	var buf bytes.Buffer
	if err := g.Render(ctx, graph, format, &buf); err != nil {
		return nil, fmt.Errorf("layout and render: %w", err)
	}
	return buf.Bytes(), nil
}
