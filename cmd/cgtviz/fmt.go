package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

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
	if len(files) != 1 {
		fmt.Fprintf(stderr, "cgtviz fmt: want one trace, got %d\n", len(files))
		commandUsage(fs, stderr)
		return 2
	}
	path := files[0]
	t, err := traces.ReadFile(path)
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
	if err := replaceFile(path, buf.Bytes()); err != nil {
		fmt.Fprintf(stderr, "cgtviz fmt: %v\n", err)
		return 1
	}
	return 0
}

// replaceFile writes data to a temporary file next to path and renames it
// over path, so a crash leaves the old file or the new one, never half.
func replaceFile(path string, data []byte) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // fails harmlessly after the rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Chmod(info.Mode().Perm()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
