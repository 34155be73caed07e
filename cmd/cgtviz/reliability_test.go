package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	tea "charm.land/bubbletea/v2"

	"github.com/cgtviz/cgtviz/sessions"
	"github.com/cgtviz/cgtviz/traces"
	"github.com/cgtviz/cgtviz/ui"
)

// hostileTrace is a trace whose every free string (the header's name, a
// note, an expected error) is s: JSON-quoted, so that any bytes may be
// given.
func hostileTrace(s string) []byte {
	q, _ := json.Marshal(s)
	return []byte(fmt.Sprintf(`{"cgtviz": 1, "name": %s}
{"op": "def", "fn": "f", "params": ["x"], "returns": ["y"], "body": [{"out": "y", "k": "add", "a": "x", "b": 1}]}
{"op": "tensor", "name": "a", "shape": [2], "init": "ones"}
{"op": "note", "text": %s}
{"op": "call", "fn": "f", "args": ["a"], "out": ["b"]}
{"op": "expect", "error": %s}
{"op": "step"}
`, q, q, q))
}

// sgrSeq is a Select Graphic Rendition sequence, the only escape the UI's
// styles write into the screen's text.
var sgrSeq = regexp.MustCompile("\x1b\\[[0-9;:]*m")

// terminalSafe returns what in out could drive a terminal: a C0 control
// other than newline and tab, DEL, or a C1 control (U+0080 to U+009F);
// "" when there is none. Invalid UTF-8 is left to the terminal, which
// shows it as a replacement character.
func terminalSafe(out string) string {
	for i, r := range out {
		if (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || (r >= 0x80 && r <= 0x9f && utf8.ValidString(out[i:i+utf8.RuneLen(r)])) {
			lo := max(0, i-40)
			return fmt.Sprintf("%U at byte %d: %q", r, i, out[lo:min(len(out), i+40)])
		}
	}
	return ""
}

// checkHostile runs every command that prints trace text on the hostile
// trace of s, and the TUI's screen on it, and fails when a control
// character from it reaches the output (issue 31 item 7).
func checkHostile(t *testing.T, s string) {
	dir := t.TempDir()
	path := filepath.Join(dir, "hostile.cgt.jsonl")
	if err := os.WriteFile(path, hostileTrace(s), 0o644); err != nil {
		t.Fatal(err)
	}
	if ps := traces.CheckFile(path); len(ps) > 0 {
		// Still a hostile input: its problems are printed.
		t.Logf("the trace does not check: %v", ps[0])
	}
	for _, args := range [][]string{
		{"check", path},
		{"run", path},
		{"run", "--json", path},
		{"run", "--log", path},
		{"fmt", path},
		{"export", path, "-o", "-"},
		{"snapshot", path, "-o", filepath.Join(dir, "s.pickle")},
	} {
		var stdout, stderr bytes.Buffer
		run(context.Background(), args, &stdout, &stderr)
		for name, out := range map[string]string{"stdout": stdout.String(), "stderr": stderr.String()} {
			if bad := terminalSafe(out); bad != "" {
				t.Errorf("cgtviz %s: %s has %s", strings.Join(args[:len(args)-1], " "), name, bad)
			}
		}
	}
	tr, err := traces.ReadPath(path)
	if err != nil {
		return // the commands above printed its problems
	}
	sess, err := sessions.New(tr, sessions.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	m := ui.New(sess, ui.Options{Color: false})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	for pos := 0; pos <= sess.Len(); pos++ {
		if err := sess.Goto(pos); err != nil {
			t.Fatal(err)
		}
		v := m.View()
		if bad := terminalSafe(sgrSeq.ReplaceAllString(v.Content, "")); bad != "" {
			t.Fatalf("the TUI's screen at %d has %s", pos, bad)
		}
		if bad := terminalSafe(v.WindowTitle); bad != "" {
			t.Fatalf("the TUI's window title has %s", bad)
		}
	}
}

var hostileSeeds = []string{
	"\x1b]0;pwned\a",
	"\x1b[2J\x1b[H\x00bell\a\x7f",
	"csi \u009b31m and osc \u009d0;x\u009c",
	"new\nline\ttab\rreturn",
	"\xff\xfe invalid",
}

// TestHostileStrings is checkHostile on the escapes of issue 31: a window
// title set from the trace's name, ESC, BEL and NUL on run's trace: line.
func TestHostileStrings(t *testing.T) {
	for _, s := range hostileSeeds {
		t.Run(fmt.Sprintf("%q", s), func(t *testing.T) { checkHostile(t, s) })
	}
}

// FuzzHostileStrings is checkHostile on any string.
func FuzzHostileStrings(f *testing.F) {
	for _, s := range hostileSeeds {
		f.Add(s)
	}
	f.Fuzz(checkHostile)
}

// TestMessagesFileLine checks that the TUI says a trace's problems as the
// other commands do, file:line: msg, for a plain file and for a gzip one,
// and that run prints nothing on stdout for a trace refused at its first
// record (issue 31 item 9).
func TestMessagesFileLine(t *testing.T) {
	dir := t.TempDir()
	bad := []byte(`{"cgtviz": 1}` + "\n" + `{"op": "stp"}` + "\n")
	plain := filepath.Join(dir, "bad.cgt.jsonl")
	gz := filepath.Join(dir, "bad.cgt.jsonl.gz")
	os.WriteFile(plain, bad, 0o644)
	os.WriteFile(gz, compress(t, "gz", bad), 0o644)
	for _, path := range []string{plain, gz} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"tui", path}, &stdout, &stderr)
		want := path + `:2: unknown op "stp"`
		if code != 2 || !strings.HasPrefix(stderr.String(), want) {
			t.Errorf("tui %s: exit %d, stderr %q; want 2 and %q first", filepath.Base(path), code, stderr.String(), want)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"run", plain}, &stdout, &stderr); code != 2 || stdout.Len() != 0 {
		t.Errorf("run: exit %d, stdout %q; want 2 and nothing on stdout", code, stdout.String())
	}
	// A session whose trace is /dev/zero: refused at once, not read for
	// ever (item 5).
	if _, err := os.Stat("/dev/zero"); err == nil {
		sess := filepath.Join(dir, "s.json")
		os.WriteFile(sess, []byte(`{"cgtviz_session": 1, "trace": "/dev/zero", "position": 0}`+"\n"), 0o644)
		stdout.Reset()
		stderr.Reset()
		done := make(chan int, 1)
		go func() { done <- run(context.Background(), []string{"open", sess}, &stdout, &stderr) }()
		select {
		case code := <-done:
			if code != 2 || !strings.Contains(stderr.String(), "/dev/zero") {
				t.Errorf("open of a session on /dev/zero: exit %d, stderr %q", code, stderr.String())
			}
		case <-time.After(20 * time.Second):
			t.Fatal("open of a session on /dev/zero did not end")
		}
	}
}

// peakHeap runs f and returns the most heap it had in use at once, as a
// sampler sees it every millisecond (HeapInuse, after a collection
// first so that what came before does not count).
func peakHeap(f func()) uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var peak uint64
	var mu sync.Mutex
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var ms runtime.MemStats
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			runtime.ReadMemStats(&ms)
			mu.Lock()
			peak = max(peak, ms.HeapInuse)
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	f()
	close(stop)
	<-done
	if peak < base {
		return 0
	}
	return peak - base
}

// writeSteps writes a trace of n step records to path, the shape of issue
// 31's measurements (14 MB at 1M records).
func writeSteps(path string, n int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	chunk := bytes.Repeat([]byte(`{"op": "step"}`+"\n"), 4096)
	if _, err := f.Write([]byte(`{"cgtviz": 1}` + "\n")); err != nil {
		return err
	}
	for n > 0 {
		k := min(n, 4096)
		if _, err := f.Write(chunk[:k*15]); err != nil {
			return err
		}
		n -= k
	}
	return f.Close()
}

// TestCommandsBoundedMemory checks that export, fmt and snapshot stream a
// trace rather than hold it: on 200,000 step records (300 MB when each
// record was held, at 1.5 KB) their heap stays under 64 MB (issue 31
// item 2). BenchmarkPeakMemory measures 1M and 3M records.
func TestCommandsBoundedMemory(t *testing.T) {
	n := 200_000
	path := filepath.Join(t.TempDir(), "steps.cgt.jsonl")
	if err := writeSteps(path, n); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	for _, args := range [][]string{
		{"export", path, "-o", out + ".dot"},
		{"fmt", path},
		{"snapshot", path, "-o", out + ".pickle"},
	} {
		var stdout, stderr bytes.Buffer
		code := -1
		peak := peakHeap(func() { code = run(context.Background(), args, &nopWriter{}, &stderr) })
		if code != 0 {
			t.Fatalf("%v: exit %d: %s%s", args, code, stdout.String(), stderr.String())
		}
		if peak > 64<<20 {
			t.Errorf("cgtviz %s on %d records: %d MB of heap at the peak, want under 64", args[0], n, peak>>20)
		}
	}
}

// nopWriter discards what is written, as a terminal that is not looked at.
type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }

// TestRunFollowTruncated truncates a trace that run --follow is following
// and requires run to stop and say so at the line after the last it read,
// rather than read on at the old offset (issue 31 item 8).
func TestRunFollowTruncated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.cgt.jsonl")
	if err := os.WriteFile(path, []byte(`{"cgtviz": 1}`+"\n"+strings.Repeat(`{"op": "step"}`+"\n", 3)), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	time.AfterFunc(300*time.Millisecond, func() {
		os.WriteFile(path, []byte(`{"cgtviz": 1}`+"\n"), 0o644)
	})
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"run", "--follow", path}, &stdout, &stderr)
	if want := path + ":5: file truncated"; code != 2 || !strings.HasPrefix(stderr.String(), want) {
		t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr.String(), want)
	}
	if ctx.Err() != nil {
		t.Error("run --follow did not notice the truncation")
	}
}
