package traces

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
)

const openTrace = `{"cgtviz": 1}
{"op": "def", "fn": "f", "params": ["x"], "body": [{"out": "y", "k": "add", "a": "x", "b": 1}], "returns": ["y"]}
{"op": "tensor", "name": "x", "shape": [4], "init": "rand", "seed": 1}
{"op": "call", "fn": "f", "args": ["x"], "out": ["y"]}
`

func gzipped(s string) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.Bytes()
}

func zstded(s string) []byte {
	var b bytes.Buffer
	w, _ := zstd.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.Bytes()
}

// TestOpen reads one trace stored every way an input may be, and the
// inputs that are not traces.
func TestOpen(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cut := gzipped(openTrace)
	tests := []struct {
		name, path string
		records    int
		err        string // part of the error; "" for none
	}{
		{"plain", write("t.cgt.jsonl", []byte(openTrace)), 3, ""},
		{"gzip", write("t.cgt.jsonl.gz", gzipped(openTrace)), 3, ""},
		{"gzip without its extension", write("gz.cgt.jsonl", gzipped(openTrace)), 3, ""},
		{"zstd", write("t.cgt.jsonl.zst", zstded(openTrace)), 3, ""},
		{"byte order mark", write("bom.cgt.jsonl", append([]byte("\xef\xbb\xbf"), openTrace...)), 3, ""},
		{"CRLF", write("crlf.cgt.jsonl", []byte(strings.ReplaceAll(openTrace, "\n", "\r\n"))), 3, ""},
		{"cut gzip", write("cut.cgt.jsonl.gz", cut[:len(cut)-10]), 0, "gzip: unexpected EOF"},
		{"directory", dir, 0, dir + ": is a directory, not a trace"},
		{"missing", filepath.Join(dir, "nope"), 0, filepath.Join(dir, "nope") + ": no such file or directory"},
		{"empty", write("empty", nil), 0, "empty file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := ReadPath(tc.path)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				var ps Problems
				if !errors.As(err, &ps) {
					t.Fatalf("error is %T, want Problems", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(tr.Records) != tc.records {
				t.Fatalf("%d records, want %d", len(tr.Records), tc.records)
			}
		})
	}
}

// TestOpenOffset: Size and Offset give a read's progress in stored bytes.
func TestOpenOffset(t *testing.T) {
	data := gzipped(openTrace)
	p := filepath.Join(t.TempDir(), "t.gz")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if in.Size() != int64(len(data)) {
		t.Fatalf("Size %d, want %d", in.Size(), len(data))
	}
	if _, err := ReadChecked(in, in.Name()); err != nil {
		t.Fatal(err)
	}
	if in.Offset() != int64(len(data)) {
		t.Fatalf("Offset %d after the whole input, want %d", in.Offset(), len(data))
	}
}

// TestOpenFollow: a followed file yields what is appended after it was
// opened, and ends after the idle time.
func TestOpenFollow(t *testing.T) {
	p := filepath.Join(t.TempDir(), "live.cgt.jsonl")
	lines := strings.SplitAfter(openTrace, "\n")
	if err := os.WriteFile(p, []byte(lines[0]+lines[1]), 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := OpenFollow(context.Background(), p, 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	go func() {
		f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer f.Close()
		for _, l := range lines[2:] {
			time.Sleep(50 * time.Millisecond)
			f.WriteString(l)
		}
	}()
	tr, err := ReadChecked(in, in.Name())
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Records) != 3 {
		t.Fatalf("%d records, want the 3 written while following", len(tr.Records))
	}
}

// TestOpenFollowCancel: cancelling ends a follow at once.
func TestOpenFollowCancel(t *testing.T) {
	p := filepath.Join(t.TempDir(), "live.cgt.jsonl")
	if err := os.WriteFile(p, []byte(openTrace), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	in, err := OpenFollow(ctx, p, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	time.AfterFunc(200*time.Millisecond, cancel)
	tr, err := ReadChecked(in, in.Name())
	if err != nil || len(tr.Records) != 3 {
		t.Fatalf("%v, %v", tr, err)
	}
}
