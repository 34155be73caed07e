package sessions

import (
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestLoadRefuses: session files that must not load, each with its cause in
// the message. The trace fingerprint catches another trace of the same
// length and a same-length edit; decoding is strict.
func TestLoadRefuses(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile(seeds[0])
	must(t, err)
	tracePath := filepath.Join(dir, "a.cgt.jsonl")
	must(t, os.WriteFile(tracePath, data, 0o644))
	s := open(t, tracePath, Options{Source: tracePath})
	must(t, s.Goto(5))
	good := filepath.Join(dir, "good.json")
	must(t, s.Save(good))
	saved, err := os.ReadFile(good)
	must(t, err)
	if _, err := Load(good, Options{}); err != nil {
		t.Fatalf("the saved session does not load: %v", err)
	}
	session := func(replace ...string) string { return strings.NewReplacer(replace...).Replace(string(saved)) }

	tests := []struct {
		name, content string
		trace         []byte // what the trace holds at load time; nil: as saved
		want          string
	}{
		{"same-length edit", string(saved), sameLengthEdit(t, data), "same size"},
		{"longer trace", string(saved), append(append([]byte{}, data...), "{\"op\": \"step\"}\n"...), "bytes then"},
		{"key case", session(`"position"`, `"Position"`), nil, `unknown key "Position"`},
		{"unknown key", session(`"position"`, `"speed": 1, "position"`), nil, `unknown key "speed"`},
		{"repeated key", session(`"position": 5`, `"position": 5, "position": 6`), nil, `key "position" given twice`},
		{"half a fingerprint", session(`"trace_sha256"`, `"trace_sha256_"`), nil, `unknown key "trace_sha256_"`},
		{"bookmark key case", `{"cgtviz_session": 1, "trace": "demo", "bookmarks": [{"Name": "x", "position": 1}]}`, nil, `bookmark 1: unknown key "Name"`},
		{"breakpoint unknown key", `{"cgtviz_session": 1, "trace": "demo", "breakpoints": [{"line": 3, "when": 1}]}`, nil, `breakpoint 1: unknown key "when"`},
		{"duplicate bookmark", `{"cgtviz_session": 1, "trace": "demo", "bookmarks": [{"name": "x", "position": 1}, {"name": "x", "position": 2}]}`, nil, `bookmark 2: the name "x" is taken`},
		{"not an object", `[1]`, nil, "want a JSON object"},
		{"a trace", string(data), nil, "this is a trace, not a saved session: open it with `cgtviz "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			trace := data
			if tc.trace != nil {
				trace = tc.trace
			}
			must(t, os.WriteFile(tracePath, trace, 0o644))
			p := filepath.Join(dir, "s.json")
			must(t, os.WriteFile(p, []byte(tc.content), 0o644))
			_, err := Load(p, Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// sameLengthEdit changes one digit of a trace, keeping its length.
func sameLengthEdit(t *testing.T, data []byte) []byte {
	out := append([]byte{}, data...)
	for i := len(out) - 1; i >= 0; i-- {
		if out[i] >= '1' && out[i] <= '8' {
			out[i]++
			return out
		}
	}
	t.Fatal("no digit to edit")
	return nil
}

// TestWriteFileAtomic: a failed write leaves the old file as it was and no
// temporary file beside it.
func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.svg")
	must(t, WriteFileAtomic(path, []byte("old"), 0o600))
	must(t, WriteFileAtomic(path, []byte("new"), 0o644))
	if got, _ := os.ReadFile(path); string(got) != "new" {
		t.Fatalf("file holds %q", got)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v: an existing file keeps its permissions", st.Mode().Perm())
	}
	// A file size limit (ulimit -f) cuts the write short. In a child
	// process: the limit is the whole process's, and in this one it also
	// cut the test framework's own log of opened files (-test.testlogfile),
	// failing the package at random ("can't write testlog.txt: file too
	// large").
	cmd := exec.Command(os.Args[0], "-test.run", "^TestWriteFileAtomicOverLimit$")
	cmd.Env = append(os.Environ(), "CGTVIZ_FSIZE_CHILD="+path)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the child writing over the file size limit: %v\n%s", err, out)
	}
	if got, _ := os.ReadFile(path); string(got) != "new" {
		t.Fatalf("after a failed write the file holds %d bytes, want the old 3", len(got))
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("%d files in the directory after a failed write, want 1", len(ents))
	}
	// An unwritable place.
	if err := WriteFileAtomic(filepath.Join(dir, "nodir", "x"), []byte("x"), 0o644); err == nil {
		t.Fatal("a write into a missing directory succeeded")
	}
}

// TestWriteFileAtomicOverLimit is TestWriteFileAtomic's child: with a
// file size limit of 1 KiB, a write of 4 KiB over the file
// CGTVIZ_FSIZE_CHILD names must fail (SIGXFSZ ignored, so that the write
// fails with EFBIG instead of killing the process). Alone it does nothing.
func TestWriteFileAtomicOverLimit(t *testing.T) {
	path := os.Getenv("CGTVIZ_FSIZE_CHILD")
	if path == "" {
		t.Skip("run by TestWriteFileAtomic in a child process")
	}
	var lim syscall.Rlimit
	must(t, syscall.Getrlimit(syscall.RLIMIT_FSIZE, &lim))
	sigIgnore(t)
	lim.Cur = 1024
	must(t, syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim))
	if err := WriteFileAtomic(path, make([]byte, 4096), 0o644); err == nil {
		t.Fatal("a write over the file size limit succeeded")
	}
}

// sigIgnore ignores SIGXFSZ for the rest of the test.
func sigIgnore(t *testing.T) {
	signal.Ignore(syscall.SIGXFSZ)
	t.Cleanup(func() { signal.Reset(syscall.SIGXFSZ) })
}
