// Command modelgen writes a synthetic training loop of a GPT-2-like
// transformer at any size (traces/gen.WriteModel): the traces of
// BENCHMARKS.md's table by model size.
//
//	go run ./tools/modelgen -layers 24 -width 1024 -o gpt2-medium.cgt.jsonl   # 355M
//	go run ./tools/modelgen -layers 12 -width 768 -o gpt2-small.cgt.jsonl     # 124M
//	go run ./tools/modelgen -layers 24 -width 1792 -o 1b.cgt.jsonl            # 1.0B
//
// The output is written whole or not at all.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/cgtviz/cgtviz/traces/gen"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("modelgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var m gen.Model
	fs.IntVar(&m.Layers, "layers", 24, "transformer blocks")
	fs.IntVar(&m.Width, "width", 1024, "the model's width")
	fs.IntVar(&m.Steps, "steps", 10, "training steps")
	fs.IntVar(&m.Evals, "evals", 3, "inference calls after training")
	fs.IntVar(&m.Batch, "batch", 4, "sequences a step")
	fs.IntVar(&m.Seq, "seq", 256, "tokens a sequence")
	fs.StringVar(&m.DType, "dtype", "float32", "the parameters' dtype")
	out := fs.String("o", "-", "output `file` (- for standard output)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 0 {
		fmt.Fprintln(stderr, "modelgen: takes no arguments")
		return 2
	}
	var b bytes.Buffer
	if err := gen.WriteModel(&b, m); err != nil {
		fmt.Fprintln(stderr, "modelgen:", err)
		return 2
	}
	if *out == "-" {
		if _, err := stdout.Write(b.Bytes()); err != nil {
			fmt.Fprintln(stderr, "modelgen:", err)
			return 1
		}
		return 0
	}
	tmp, err := os.CreateTemp(filepath.Dir(*out), ".modelgen-*")
	if err == nil {
		_, err = tmp.Write(b.Bytes())
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp.Name(), *out)
		}
		if err != nil {
			os.Remove(tmp.Name())
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "modelgen:", err)
		return 1
	}
	return 0
}
