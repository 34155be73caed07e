// Command scalegen writes the traces of the scaling table (BENCHMARKS.md,
// tools/scale-table.sh): a program whose tree has -nodes graph nodes, run
// for -records records in all. Each node is its own compiled function
// (def f0 ... fN-1, one root each: a warmup, then a recording), all on one
// input; then the program runs round robin, a step and a call each time,
// every call a replay: a model with many graphs at steady state.
//
//	go run ./tools/scalegen -records 1000000 -nodes 1000 -o t.cgt.jsonl
//
// The output is written whole or not at all (a temporary file renamed over
// -o), and streamed: a trace of any length takes the memory of its first
// few lines. A trace too short for its tree (5 records a node) is refused.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/cgtviz/cgtviz/traces"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("scalegen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	records := fs.Int("records", 1_000_000, "records in the trace, header not counted")
	nodes := fs.Int("nodes", 10, "graph nodes the tree grows to")
	out := fs.String("o", "-", "output `file` (- for standard output)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 0 || *nodes < 1 {
		fmt.Fprintln(stderr, "scalegen: want -nodes 1 or more and no arguments")
		return 2
	}
	setup, loop, err := texts(*nodes)
	if err != nil {
		fmt.Fprintf(stderr, "scalegen: %v\n", err)
		return 1
	}
	if min := setupRecords(*nodes); *records < min {
		fmt.Fprintf(stderr, "scalegen: %d nodes take %d records to grow; -records %d is fewer\n", *nodes, min, *records)
		return 2
	}
	if *out == "-" {
		if err := write(stdout, setup, loop, *nodes, *records); err != nil {
			fmt.Fprintf(stderr, "scalegen: %v\n", err)
			return 1
		}
		return 0
	}
	if err := writeFile(*out, func(w io.Writer) error { return write(w, setup, loop, *nodes, *records) }); err != nil {
		fmt.Fprintf(stderr, "scalegen: %v\n", err)
		return 1
	}
	return 0
}

// setupRecords is how many records grow a tree of n nodes: the input, n
// defs, and for each def a step and a call twice (warmup, recording).
func setupRecords(n int) int { return 1 + n + 4*n }

// texts returns the trace's first lines (header, defs, the input, the
// calls that grow the tree) and the lines of one round of the steady
// state (a step and a call of each function), as the project's writer
// writes them.
func texts(n int) (setup, loop [][]byte, err error) {
	name := func(i int) string { return fmt.Sprintf("f%d", i) }
	b := traces.NewBuilder(fmt.Sprintf("scale: %d nodes", n))
	for i := 0; i < n; i++ {
		b.Def(name(i), []string{"x"}, []string{"y"}, traces.S("y", "add", "x", float64(i%7+1)))
	}
	b.TensorSeed("x", []int{256}, 1)
	for i := 0; i < n; i++ {
		b.Step().Call(name(i), []string{"x"}, "y") // warmup
		b.Step().Call(name(i), []string{"x"}, "y") // recording
	}
	if setup, err = lines(b.Trace()); err != nil {
		return nil, nil, err
	}
	r := traces.NewBuilder("round")
	for i := 0; i < n; i++ {
		r.Step().Call(name(i), []string{"x"}, "y")
	}
	if loop, err = lines(r.Trace()); err != nil {
		return nil, nil, err
	}
	return setup, loop[1:], nil // the round's own header goes
}

func lines(tr *traces.Trace) ([][]byte, error) {
	var buf bytes.Buffer
	if err := tr.Write(&buf); err != nil {
		return nil, err
	}
	return bytes.SplitAfter(bytes.TrimSuffix(buf.Bytes(), []byte("\n")), []byte("\n")), nil
}

// write writes the setup, then rounds of the loop until records records
// (the setup's header not counted).
func write(w io.Writer, setup, loop [][]byte, n, records int) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	for _, l := range setup {
		bw.Write(l)
	}
	if len(setup) > 0 && !bytes.HasSuffix(setup[len(setup)-1], []byte("\n")) {
		bw.WriteByte('\n')
	}
	for i, k := len(setup)-1, 0; i < records; i, k = i+1, (k+1)%len(loop) {
		bw.Write(bytes.TrimSuffix(loop[k], []byte("\n")))
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// writeFile writes path whole or not at all.
func writeFile(path string, fill func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".scalegen-*")
	if err != nil {
		return err
	}
	err = fill(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		return errors.Join(err, os.Remove(f.Name()))
	}
	return nil
}
