package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
)

// cliCase is one command line: its stdin, exit status and parts of its
// output (stdout, stderr) that must and must not be there.
type cliCase struct {
	name             string
	args             []string
	stdin            []byte // nil: stdin is not replaced
	code             int
	stdout, stderr   string // parts that must be there
	notStderr        string // a part stderr must not have
	wantFile, noFile string // a file that must (must not) exist after
}

func runCases(t *testing.T, tests []cliCase) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.stdin != nil {
				withStdin(t, tc.stdin)
			}
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tc.args, &stdout, &stderr)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout: %.2000s\nstderr: %.2000s", code, tc.code, stdout.String(), stderr.String())
			}
			if !strings.Contains(stdout.String(), tc.stdout) {
				t.Errorf("stdout lacks %q:\n%.2000s", tc.stdout, stdout.String())
			}
			if !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("stderr lacks %q:\n%.2000s", tc.stderr, stderr.String())
			}
			if tc.notStderr != "" && strings.Contains(stderr.String(), tc.notStderr) {
				t.Errorf("stderr has %q:\n%.2000s", tc.notStderr, stderr.String())
			}
			if tc.wantFile != "" {
				if _, err := os.Stat(tc.wantFile); err != nil {
					t.Errorf("no %s: %v", tc.wantFile, err)
				}
			}
			if tc.noFile != "" {
				if _, err := os.Stat(tc.noFile); err == nil {
					t.Errorf("%s exists", tc.noFile)
				}
			}
		})
	}
}

// withStdin makes os.Stdin a pipe that gives data, for one test: "-" and
// /dev/stdin then read a real pipe, which cannot seek.
func withStdin(t *testing.T, data []byte) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		w.Write(data)
		w.Close()
	}()
	old := os.Stdin
	os.Stdin = r
	t.Cleanup(func() {
		os.Stdin = old
		r.Close()
	})
}

func compress(t *testing.T, kind string, data []byte) []byte {
	var b bytes.Buffer
	switch kind {
	case "gz":
		w := gzip.NewWriter(&b)
		w.Write(data)
		w.Close()
	case "zst":
		w, err := zstd.NewWriter(&b)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(data)
		w.Close()
	}
	return b.Bytes()
}

// TestInputs: every command reads a trace from a pipe, "-", gzip and zstd,
// and takes a byte order mark (issue 17, items 2 and 6).
func TestInputs(t *testing.T) {
	dir := t.TempDir()
	s07, err := os.ReadFile("../../examples/s07-chain-handoff.cgt.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	gz := filepath.Join(dir, "s07.cgt.jsonl.gz")
	zst := filepath.Join(dir, "s07.cgt.jsonl.zst")
	bom := filepath.Join(dir, "bom.cgt.jsonl")
	for p, data := range map[string][]byte{gz: compress(t, "gz", s07), zst: compress(t, "zst", s07), bom: append([]byte("\xef\xbb\xbf"), s07...)} {
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const ok = "expectations: 4 passed, 0 failed"
	runCases(t, []cliCase{
		{name: "run -", args: []string{"run", "-"}, stdin: s07, stdout: ok},
		// A pipe without "-" is read too (issue 34 item 12).
		{name: "run pipe", args: []string{"run"}, stdin: s07, stdout: ok},
		{name: "check pipe", args: []string{"check"}, stdin: s07, stdout: "<stdin>: ok (15 records)"},
		{name: "fmt pipe", args: []string{"fmt"}, stdin: s07, stdout: `{"cgtviz": 1`},
		{name: "export pipe", args: []string{"export", "-o", "-"}, stdin: s07, stdout: "digraph"},
		{name: "run gzip pipe", args: []string{"run", "-"}, stdin: compress(t, "gz", s07), stdout: ok},
		{name: "run gz", args: []string{"run", gz}, stdout: ok},
		{name: "run zst", args: []string{"run", zst}, stdout: ok},
		{name: "run BOM", args: []string{"run", bom}, stdout: ok},
		{name: "check -", args: []string{"check", "-"}, stdin: s07, stdout: "<stdin>: ok (15 records)"},
		{name: "check zst", args: []string{"check", zst}, stdout: zst + ": ok (15 records)"},
		{name: "fmt -", args: []string{"fmt", "-"}, stdin: s07, stdout: `{"cgtviz": 1`},
		{name: "fmt -w -", args: []string{"fmt", "-w", "-"}, code: 2, stderr: "-w rewrites a file"},
		{name: "fmt -w gz", args: []string{"fmt", "-w", gz}, code: 2, stderr: "compressed"},
		{name: "export -", args: []string{"export", "-", "-o", "-"}, stdin: s07, stdout: "digraph"},
		{name: "export gz", args: []string{"export", gz, "-o", "-"}, stdout: "digraph"},
		{name: "snapshot -", args: []string{"snapshot", "-o", filepath.Join(dir, "s.pickle"), "-"}, stdin: s07, stdout: "allocator snapshot", wantFile: filepath.Join(dir, "s.pickle")},
		{name: "cut gzip", args: []string{"run", "-"}, stdin: compress(t, "gz", s07)[:100], code: 2, stderr: "gzip: unexpected EOF"},
		{name: "directory", args: []string{"run", dir}, code: 2, stderr: dir + ": is a directory, not a trace"},
		{name: "/dev/null", args: []string{"check", "/dev/null"}, code: 2, stderr: "/dev/null:1: empty file"},
	})
}

// TestRules: the position and flag rules are one in every command, and
// flag errors exit 2 without naming the trace (issue 17, items 3, 5, 6).
func TestRules(t *testing.T) {
	dir := t.TempDir()
	const s07 = "../../examples/s07-chain-handoff.cgt.jsonl"
	png := filepath.Join(dir, "x.png")
	runCases(t, []cliCase{
		{name: "snapshot --line past the end", args: []string{"snapshot", "--line", "999999999", "-o", "-", s07}, code: 2, stderr: "--line 999999999: out of range: " + s07 + " has lines 1 to 16"},
		{name: "export --line past the end", args: []string{"export", "--line", "999999999", "-o", "-", s07}, code: 2, stderr: "--line 999999999: out of range: " + s07 + " has lines 1 to 16"},
		{name: "snapshot --line 0", args: []string{"snapshot", "--line", "0", "-o", "-", s07}, code: 2, stderr: "--line 0: lines count from 1"},
		{name: "export --line 0", args: []string{"export", "--line", "0", "-o", "-", s07}, code: 2, stderr: "--line 0: lines count from 1"},
		{name: "export --run-on bogus", args: []string{"export", "--run-on", "bogus", "-o", "-", s07}, code: 2, stderr: "--run-on bogus: want", notStderr: s07},
		{name: "snapshot --device bogus", args: []string{"snapshot", "--device", "bogus", "-o", "-", s07}, code: 2, stderr: "--device bogus: want", notStderr: s07},
		{name: "export bad flag value", args: []string{"export", "--step", "x", "-o", "-", s07}, code: 2, stderr: "invalid value", notStderr: s07},
		{name: "export .png", args: []string{"export", s07, "-o", png}, code: 2, stderr: "not .png", noFile: png},
		{name: "export .gv", args: []string{"export", s07, "-o", filepath.Join(dir, "x.gv")}, wantFile: filepath.Join(dir, "x.gv")},
		{name: "export format clash", args: []string{"export", s07, "--format", "svg", "-o", filepath.Join(dir, "x.dot")}, code: 2, stderr: "choose one"},
		{name: "export unwritable", args: []string{"export", s07, "-o", filepath.Join(dir, "no", "x.dot")}, code: 1, stderr: "write " + filepath.Join(dir, "no", "x.dot")},
		{name: "version extra", args: []string{"version", "extra"}, code: 2, stderr: "takes no arguments"},
		{name: "open a trace", args: []string{"open", s07}, code: 2, stderr: "this is a trace, not a saved session: open it with `cgtviz " + s07 + "`"},
		{name: "run --log says the place once", args: []string{"run", "--log", "../../examples/s08-overwritten-errors.cgt.jsonl"}, code: 0, stdout: "s08-overwritten-errors.cgt.jsonl:7: [__cudagraphs] eager s: Error"},
		{name: "TUI flags before the trace: help", args: []string{"-h"}, stdout: "-handoff rule"},
		{name: "TUI bad flag value before the trace", args: []string{"-handoff", "bogus", s07}, code: 2, stderr: `unknown handoff rule "bogus"`, notStderr: s07 + ":"},
		{name: "run bad trace: problems first", args: []string{"run", "../../traces/testdata/bad/funcs.cgt.jsonl"}, code: 2, stderr: "funcs.cgt.jsonl:"},
	})
}

// TestExportUnderFileLimit: an export cut short by a file size limit
// (ulimit -f) leaves neither a truncated file nor a temporary one, and an
// existing file as it was (issue 17, item 3). The export runs in a child
// process (TestExportUnderFileLimitChild): the limit is the whole
// process's, and in this one it also cut the test framework's own log of
// opened files (-test.testlogfile), failing the package at random.
func TestExportUnderFileLimit(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "x.dot")
	if err := os.WriteFile(out, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestExportUnderFileLimitChild$")
	cmd.Env = append(os.Environ(), "CGTVIZ_FSIZE_CHILD="+out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the export under a 512-byte file limit: %v\n%s", err, b)
	}
	if got, _ := os.ReadFile(out); string(got) != "old" {
		t.Fatalf("the old file now holds %d bytes", len(got))
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("%d files left, want only the old one", len(ents))
	}
}

// TestExportUnderFileLimitChild is TestExportUnderFileLimit's child: the
// export to the file CGTVIZ_FSIZE_CHILD names under a 512-byte file size
// limit (SIGXFSZ ignored, so that the write fails with EFBIG instead of
// killing the process) must exit 1. Alone it does nothing.
func TestExportUnderFileLimitChild(t *testing.T) {
	out := os.Getenv("CGTVIZ_FSIZE_CHILD")
	if out == "" {
		t.Skip("run by TestExportUnderFileLimit in a child process")
	}
	signal.Ignore(syscall.SIGXFSZ)
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Fatal(err)
	}
	lim.Cur = 512
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"export", "../../examples/seed-a-checkpoint.cgt.jsonl", "-o", out}, &stdout, &stderr); code != 1 {
		t.Fatalf("exit %d under a 512-byte file limit, want 1; stderr: %s", code, stderr.String())
	}
}

// TestRunFollow: run --follow prints records written after it started, and
// ends after --follow-timeout with the summary.
func TestRunFollow(t *testing.T) {
	data, err := os.ReadFile("../../examples/s07-chain-handoff.cgt.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	p := filepath.Join(t.TempDir(), "live.cgt.jsonl")
	if err := os.WriteFile(p, []byte(strings.Join(lines[:3], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	go func() {
		f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer f.Close()
		for _, l := range lines[3:] {
			time.Sleep(20 * time.Millisecond)
			f.WriteString(l)
		}
	}()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"run", "--follow", "--follow-timeout", "700ms", p}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "expectations: 4 passed, 0 failed") {
		t.Fatalf("the followed run missed records:\n%s", stdout.String())
	}
}

// TestProgress: the bar's frames, and no bar where stderr is not a
// terminal.
func TestProgress(t *testing.T) {
	tests := []struct {
		off, size int64
		want      string
	}{
		{0, 100e6, "run [>                             ]   0% 0.0/100.0 MB"},
		{50e6, 100e6, "run [===============>              ]  50% 50.0/100.0 MB"},
		{100e6, 100e6, "run [==============================] 100% 100.0/100.0 MB"},
		{3e6, -1, "run 3.0 MB read"},
	}
	for _, tc := range tests {
		if got := progressLine("run", tc.off, tc.size, time.Second); !strings.HasPrefix(got, tc.want) {
			t.Errorf("progressLine(%d, %d) = %q, want %q...", tc.off, tc.size, got, tc.want)
		}
	}
	var stderr bytes.Buffer
	stop := startProgress(io.Discard, &stderr, "run", fixedOffset{})
	time.Sleep(3 * progressEvery)
	stop()
	if stderr.Len() != 0 {
		t.Errorf("a bar on a stderr that is not a terminal: %q", stderr.String())
	}
}

type fixedOffset struct{}

func (fixedOffset) Offset() int64 { return 1 }
func (fixedOffset) Size() int64   { return 2 }
