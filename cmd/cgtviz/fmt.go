package main

import (
	"bytes"
	"context"
	"errors"
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
	t, err := readTrace(path)
	if err != nil {
		var ps traces.Problems
		if errors.As(err, &ps) {
			for _, p := range ps {
				fmt.Fprintln(stderr, p.String())
			}
		} else {
			fmt.Fprintf(stderr, "cgtviz fmt: %v\n", err)
		}
		return 2
	}
	var buf bytes.Buffer
	if err := t.Write(&buf); err != nil {
		fmt.Fprintf(stderr, "cgtviz fmt: %s: %v\n", path, err)
		return 1
	}
	if !*write {
		if _, err := stdout.Write(buf.Bytes()); err != nil {
			fmt.Fprintf(stderr, "cgtviz fmt: %v\n", err)
			return 1
		}
		return 0
	}
	if err := sessions.WriteFileAtomic(path, buf.Bytes(), 0o644); err != nil {
		fmt.Fprintf(stderr, "cgtviz fmt: %v\n", err)
		return 1
	}
	return 0
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
