package golden

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB that keeps the failure instead of stopping.
type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.msg = format
	panic(r)
}
func (r *recorder) Fatal(args ...any) { r.msg = "fatal"; panic(r) }

func check(t *testing.T, path string, got []byte) (msg string) {
	r := &recorder{TB: t}
	defer func() {
		if p := recover(); p != nil && p != any(r) {
			panic(p)
		}
		msg = r.msg
	}()
	Check(r, path, got)
	return ""
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.golden")
	if err := os.WriteFile(path, []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if msg := check(t, path, []byte("one\ntwo\n")); msg != "" {
		t.Errorf("equal content failed: %s", msg)
	}
	if msg := check(t, path, []byte("one\nthree\n")); !strings.Contains(msg, "line %d differs") {
		t.Errorf("a changed line: %q", msg)
	}
	if msg := check(t, filepath.Join(dir, "missing"), []byte("x")); !strings.Contains(msg, "-update to create it") {
		t.Errorf("a missing file: %q", msg)
	}
	if msg := check(t, path, []byte{0, 1}); !strings.Contains(msg, "bytes, want") {
		t.Errorf("binary content: %q", msg)
	}
}
