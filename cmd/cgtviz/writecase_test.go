package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeCase runs one case of a command that writes a file (export,
// report): args may name the output as OUT (OUT.dot, OUT.html), which
// becomes a file of dir named after the case. It checks the exit status
// and wantErr, that a failed run wrote no file and that a written file
// left stdout empty, and returns what was written (the file, else stdout),
// or nil with ok false when the run was meant to fail.
func writeCase(t *testing.T, cmd func(context.Context, []string, io.Writer, io.Writer) int, what, dir, name string, tcArgs []string, code int, wantErr string) (got []byte, ok bool) {
	t.Helper()
	out := filepath.Join(dir, strings.ReplaceAll(name, " ", "_"))
	var file string
	args := make([]string, len(tcArgs))
	for j, a := range tcArgs {
		if strings.HasPrefix(a, "OUT") {
			file = out + strings.TrimPrefix(a, "OUT")
			a = file
		}
		args[j] = a
	}
	var stdout, stderr bytes.Buffer
	c := cmd(context.Background(), args, &stdout, &stderr)
	if c != code {
		t.Fatalf("exit %d, want %d; stderr:\n%s", c, code, stderr.String())
	}
	if wantErr != "" && !strings.Contains(stderr.String(), wantErr) {
		t.Errorf("stderr lacks %q:\n%s", wantErr, stderr.String())
	}
	if code != 0 {
		if file != "" {
			if _, err := os.Stat(file); err == nil {
				t.Errorf("a failed %s wrote %s", what, file)
			}
		}
		return nil, false
	}
	if file == "" {
		return stdout.Bytes(), true
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout not empty with -o FILE: %.200q", stdout.String())
	}
	return b, true
}
