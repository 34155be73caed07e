package traces

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// endless is an input that never ends, as /dev/zero: it counts what was
// read and, past limit, fails, so that a reader that would read it for
// ever fails the test instead of hanging it.
type endless struct {
	b     byte
	n     int64
	limit int64
}

var errReadOn = errors.New("read on past the limit")

func (e *endless) Read(p []byte) (int, error) {
	if e.n >= e.limit {
		return 0, errReadOn
	}
	for i := range p {
		p[i] = e.b
	}
	e.n += int64(len(p))
	return len(p), nil
}

// TestEndlessLineRefused checks that a line with no end (/dev/zero, after
// a header or as the header) is refused at the line limit and that the
// reading stops soon after, where it once skipped for ever (issue 31).
func TestEndlessLineRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		head string
		line int
	}{
		{"header", "", 1},
		{"record", `{"cgtviz": 1}` + "\n", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &endless{b: 0, limit: 1 << 30}
			ps := Check(io.MultiReader(strings.NewReader(tc.head), src), "zero")
			if len(ps) != 1 || ps[0].Line != tc.line || !strings.Contains(ps[0].Msg, "MaxLineBytes") || !strings.Contains(ps[0].Msg, "no end") {
				t.Fatalf("problems %v, want one at line %d: the line has no end", ps, tc.line)
			}
			if src.n > 2*maxSkipBytes {
				t.Errorf("read %d bytes of an endless line; the skip stops at %d", src.n, maxSkipBytes)
			}
		})
	}
}

// TestOpenContextStops checks that a read waiting on a FIFO with no
// writer, and one waiting on a pipe whose writer is quiet, end soon after
// ctx does.
func TestOpenContextStops(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := mkfifo(fifo); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	t.Run("open", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := OpenContext(ctx, fifo)
		if err == nil {
			t.Fatal("opened a FIFO with no writer")
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("the open took %v after ctx ended at 50ms", d)
		}
	})
	t.Run("index", func(t *testing.T) {
		// OpenIndex must not open a FIFO to find it is one: the open
		// would wait for a writer and take its data from SpoolIndex.
		done := make(chan error, 1)
		go func() {
			_, err := OpenIndex(context.Background(), fifo, false)
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, ErrNotIndexable) {
				t.Errorf("OpenIndex of a FIFO: %v, want ErrNotIndexable", err)
			}
		case <-time.After(5 * time.Second):
			// Let the open go, for the next test.
			if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
				w.Close()
			}
			t.Fatal("OpenIndex of a FIFO opened it, and waits for its writer")
		}
	})
	t.Run("read", func(t *testing.T) {
		// A writer that opens and writes the header, then nothing.
		go func() {
			w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
			if err != nil {
				return
			}
			w.Write([]byte(`{"cgtviz": 1}` + "\n"))
			time.Sleep(3 * time.Second)
			w.Close()
		}()
		ctx, cancel := context.WithCancel(context.Background())
		in, err := OpenContext(ctx, fifo)
		if err != nil {
			t.Fatal(err)
		}
		defer in.Close()
		rd, err := NewReader(in, in.Name())
		if err != nil {
			t.Fatal(err)
		}
		time.AfterFunc(50*time.Millisecond, cancel)
		start := time.Now()
		_, err = rd.Next()
		if err == nil || err == io.EOF || !strings.Contains(err.Error(), "context canceled") {
			t.Fatalf("Next: %v, want the read stopped by ctx", err)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("the read took %v after ctx ended at 50ms", d)
		}
	})
}

// TestFollowTruncated checks that following a file that is truncated, or
// replaced by a new one, stops with TruncatedError's message rather than
// reading on at the old offset (issue 31 item 8).
func TestFollowTruncated(t *testing.T) {
	head := `{"cgtviz": 1}` + "\n" + strings.Repeat(`{"op": "step"}`+"\n", 3)
	for _, replace := range []bool{false, true} {
		t.Run(fmt.Sprint("replace=", replace), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "t.cgt.jsonl")
			if err := os.WriteFile(path, []byte(head), 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			in, err := OpenFollow(ctx, path, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()
			rd, err := NewReader(in, path)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 3; i++ {
				if _, err := rd.Next(); err != nil {
					t.Fatal(err)
				}
			}
			// Shorter, then longer than before: the old offset now
			// falls inside the new text's first record.
			if replace {
				tmp := path + ".new"
				os.WriteFile(tmp, []byte(`{"cgtviz": 1}`+"\n"), 0o644)
				if err := os.Rename(tmp, path); err != nil {
					t.Fatal(err)
				}
			} else if err := os.WriteFile(path, []byte(`{"cgtviz": 1}`+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = rd.Next()
			want := "file truncated"
			if replace {
				want = "file replaced"
			}
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), ":5:") {
				t.Fatalf("after the file changed: %v, want %q at line 5", err, want)
			}
			if _, err := rd.Next(); err != io.EOF {
				t.Errorf("after the change was reported: %v, want io.EOF", err)
			}
		})
	}
}

// TestIndexFollowTruncated checks that a followed index stops at a
// truncation, says so in its problems, and no longer reads records at the
// old offsets.
func TestIndexFollowTruncated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.cgt.jsonl")
	text := `{"cgtviz": 1}` + "\n" + strings.Repeat(`{"op": "step"}`+"\n", 4)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	ix, err := OpenIndex(context.Background(), path, true)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	waitFor(t, func() bool { return ix.Len() == 4 })
	if err := os.WriteFile(path, []byte(`{"cgtviz": 1}`+"\n"+`{"op": "note", "text": "new"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ix.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the followed index did not stop at the truncation")
	}
	pr := ix.Progress()
	if len(pr.Problems) != 1 || !strings.Contains(pr.Problems[0].Msg, "file truncated") {
		t.Fatalf("problems %v, want the truncation", pr.Problems)
	}
	if ix.Len() != 4 {
		t.Errorf("%d records after the truncation, want the 4 before it", ix.Len())
	}
	if _, err := ix.Record(3); err == nil || !strings.Contains(err.Error(), "file truncated") {
		t.Errorf("record 3 after the truncation: %v, want the truncation", err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition never held")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSpoolIndex checks that a gzip file and a FIFO, which cannot be read
// at random, are indexed through a spool with the records ReadPath reads,
// and that a FIFO is opened once: its first writer's data is read.
func TestSpoolIndex(t *testing.T) {
	dir := t.TempDir()
	text := []byte(`{"cgtviz": 1, "name": "spool"}` + "\n" + `{"op": "tensor", "name": "x", "shape": [4], "init": "zeros"}` + "\n\n" + `{"op": "step"}` + "\n" + `{"op": "note", "text": "end"}` + "\n")
	plain := filepath.Join(dir, "t.cgt.jsonl")
	os.WriteFile(plain, text, 0o644)
	want, err := ReadPath(plain)
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(text)
	zw.Close()
	gzPath := filepath.Join(dir, "t.cgt.jsonl.gz")
	os.WriteFile(gzPath, gz.Bytes(), 0o644)
	fifo := filepath.Join(dir, "fifo")
	haveFIFO := mkfifo(fifo) == nil
	for _, path := range []string{gzPath, fifo} {
		if path == fifo && !haveFIFO {
			continue
		}
		t.Run(filepath.Base(path), func(t *testing.T) {
			if path == fifo {
				// One writer, which writes the trace and closes: a
				// second open would wait for a second writer for ever.
				go func() {
					w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
					if err != nil {
						return
					}
					w.Write(text)
					w.Close()
				}()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			ix, err := SpoolIndex(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			defer ix.Close()
			ix.Wait()
			if ctx.Err() != nil {
				t.Fatal("the spool never ended")
			}
			if pr := ix.Progress(); len(pr.Problems) > 0 || pr.Err != nil || ix.Len() != len(want.Records) {
				t.Fatalf("progress %+v, want %d records and no problem", pr, len(want.Records))
			}
			if ix.Header().Name != "spool" {
				t.Errorf("header %+v", ix.Header())
			}
			for i := range want.Records {
				rec, err := ix.Record(i)
				if err != nil {
					t.Fatal(err)
				}
				w := want.Records[i]
				if rec.Line != w.Line || rec.Op != w.Op || rec.Name != w.Name || rec.Text != w.Text || !reflect.DeepEqual(rec.Shape, w.Shape) {
					t.Errorf("record %d: %+v, want %+v", i, *rec, w)
				}
			}
		})
	}
}

// TestPrintable checks the cleaner of trace text.
func TestPrintable(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain name", "plain name"},
		{"\x1b]0;pwned\a", `\x1b]0;pwned\a`},
		{"a\x00b\x7fc", `a\x00b\x7fc`},
		{"csi\u009b31m", `csi\u009b31m`},
		{"line\nbreak\ttab", `line\nbreak\ttab`},
		{"bad \xff utf8", "bad \uFFFD utf8"},
		{"ünïcödé ✓", "ünïcödé ✓"},
	} {
		if got := Printable(tc.in); got != tc.want {
			t.Errorf("Printable(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzPrintable checks that nothing Printable returns can drive a
// terminal: no C0, DEL or C1 control, valid UTF-8, and clean text kept as
// it is.
func FuzzPrintable(f *testing.F) {
	for _, s := range []string{"", "x", "\x1b[2J", "\u009b", "\xc2", "\xff\xfe", "ok ✓"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := Printable(s)
		if !utf8.ValidString(out) {
			t.Fatalf("Printable(%q) = %q: invalid UTF-8", s, out)
		}
		for _, r := range out {
			if isControl(r) {
				t.Fatalf("Printable(%q) = %q: holds %U", s, out, r)
			}
		}
		if printableAlready(s) != (out == s) && out != s {
			t.Fatalf("Printable(%q) = %q changed a clean string", s, out)
		}
	})
}
