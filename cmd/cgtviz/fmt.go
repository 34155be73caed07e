package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/cgtviz/cgtviz/examples"
	"github.com/cgtviz/cgtviz/sessions"
	"github.com/cgtviz/cgtviz/traces"
)

// runFmt rewrites a trace in canonical form, to stdout or, with -w, in
// place. A trace that does not check is refused: canonical form is only
// defined for what the reader accepts, and fmt must never lose a line.
func runFmt(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("fmt")
	write := fs.Bool("w", false, "write the result to the trace file instead of stdout")
	files, code, done := parseArgs(fs, args, stdout, stderr)
	if done {
		return code
	}
	files = orStdin(files)
	if len(files) != 1 {
		fmt.Fprintf(stderr, "cgtviz fmt: want one trace, got %d\n", len(files))
		commandUsage(fs, stderr)
		return 2
	}
	path := files[0]
	if *write && (path == traces.Stdin || path == examples.DemoSource) {
		fmt.Fprintf(stderr, "cgtviz fmt: -w rewrites a file; %s is not one (leave out -w to write to stdout)\n", path)
		return 2
	}
	if *write && isCompressed(path) {
		fmt.Fprintf(stderr, "cgtviz fmt: -w would write text into the compressed %s: leave out -w and compress stdout\n", path)
		return 2
	}
	// Streamed, record by record, never held: into a temporary file,
	// which becomes the trace (-w) or goes to stdout once the whole trace
	// has checked, so that a trace refused at its last line prints
	// nothing and overwrites nothing.
	format := func(w io.Writer) error { return formatTrace(ctx, path, w) }
	var err error
	if *write {
		err = sessions.WriteFileAtomicFrom(path, 0o644, format)
	} else {
		err = formatToStdout(stdout, format)
	}
	switch {
	case err == nil:
		return 0
	case interrupted(ctx, stderr, "fmt"):
		return exitInterrupted
	case traces.IsProblems(err):
		printProblems(stderr, "cgtviz fmt: ", err)
		return 2
	}
	fmt.Fprintf(stderr, "cgtviz fmt: %v\n", err)
	return 1
}

// formatTrace checks the trace at path and writes it in canonical form to
// w, as it streams. The error is the trace's problems (traces.Problems)
// or w's.
func formatTrace(ctx context.Context, path string, w io.Writer) error {
	in, err := openInputCtx(ctx, path)
	if err != nil {
		return traces.Problems{problemOf(err, path)}
	}
	defer in.Close()
	cr, err := traces.NewCheckedReader(in, in.Name())
	if err != nil {
		return traces.Problems{problemOf(err, in.Name())}
	}
	tw := traces.NewWriter(w)
	if err := tw.WriteHeader(cr.Header()); err != nil {
		return err
	}
	for {
		rec, err := cr.Next()
		if err == io.EOF {
			return tw.Flush()
		}
		if err != nil {
			return err
		}
		if err := tw.WriteRecord(rec); err != nil {
			return err
		}
	}
}

// formatToStdout runs format into a temporary file (unlinked at once) and
// copies that to stdout when format succeeds.
func formatToStdout(stdout io.Writer, format func(io.Writer) error) error {
	tmp, err := os.CreateTemp("", "cgtviz-fmt-*.cgt.jsonl")
	if err != nil {
		return fmt.Errorf("temporary file: %w", err)
	}
	defer tmp.Close()
	removed := os.Remove(tmp.Name()) == nil
	if !removed {
		defer os.Remove(tmp.Name())
	}
	if err := format(tmp); err != nil {
		return err
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("temporary file: %w", err)
	}
	if _, err := io.Copy(stdout, tmp); err != nil {
		return fmt.Errorf("write stdout: %w", err)
	}
	return nil
}

// isCompressed reports whether the file at path starts as gzip or zstd.
func isCompressed(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 4)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	return bytes.HasPrefix(head, []byte{0x1f, 0x8b}) || bytes.HasPrefix(head, []byte{0x28, 0xb5, 0x2f, 0xfd})
}
