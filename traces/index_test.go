package traces

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestIndexSameRecords indexes every example and a few made-up files and
// requires the records parsed on demand to be the ones ReadPath reads, the
// problems to be Check's, and Checked to stop before the first problem.
func TestIndexSameRecords(t *testing.T) {
	dir := t.TempDir()
	made := map[string]string{
		"blank.cgt.jsonl": "{\"cgtviz\": 1}\n\n{\"op\": \"tensor\", \"name\": \"x\", \"shape\": [4]}\n\n\n{\"op\": \"step\"}\n{\"op\": \"del\", \"name\": \"x\"}",
		"crlf.cgt.jsonl":  "{\"cgtviz\": 1}\r\n{\"op\": \"tensor\", \"name\": \"x\", \"shape\": [4]}\r\n{\"op\": \"step\"}\r\n",
		"config.cgt.jsonl": "{\"cgtviz\": 1}\n{\"op\": \"config\", \"max_tensor_bytes\": 64}\n" +
			"{\"op\": \"tensor\", \"name\": \"x\", \"shape\": [4]}\n{\"op\": \"tensor\", \"name\": \"y\", \"shape\": [1000]}\n{\"op\": \"step\"}\n",
		"unbound.cgt.jsonl": "{\"cgtviz\": 1}\n{\"op\": \"step\"}\n{\"op\": \"step\"}\n{\"op\": \"read\", \"name\": \"x\"}\n{\"op\": \"step\"}\n{\"op\": \"nope\"}\n{\"op\": \"step\"}\n",
	}
	paths, _ := filepath.Glob("../examples/*.cgt.jsonl")
	for name, text := range made {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			ix, err := OpenIndex(context.Background(), path, false)
			if err != nil {
				t.Fatal(err)
			}
			defer ix.Close()
			ix.Wait()
			want := CheckFile(path)
			pr := ix.Progress()
			if !pr.Done || pr.Err != nil {
				t.Fatalf("progress %+v after Wait", pr)
			}
			if !reflect.DeepEqual(pr.Problems, want) && !(len(want) == 0 && len(pr.Problems) == 0) {
				t.Fatalf("problems %v, want %v", pr.Problems, want)
			}
			rd, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer rd.Close()
			r, err := NewReader(rd, path)
			if err != nil {
				t.Fatal(err)
			}
			i := 0
			for ; ; i++ {
				rec, err := r.Next()
				if err != nil && err.Error() == "EOF" {
					break
				}
				got, gerr := ix.Record(i)
				if (err == nil) != (gerr == nil) || (err != nil && err.Error() != gerr.Error()) {
					t.Fatalf("record %d: error %v, want %v", i, gerr, err)
				}
				if err == nil && !reflect.DeepEqual(sansKey(*got), sansKey(rec)) {
					t.Fatalf("record %d: %+v, want %+v", i, *got, rec)
				}
				if ix.Line(i) != rec.Line || ix.RecordAtLine(rec.Line) != i {
					t.Fatalf("record %d: line %d (at line %d: %d), want %d", i, ix.Line(i), rec.Line, ix.RecordAtLine(rec.Line), rec.Line)
				}
			}
			if ix.Len() != i {
				t.Fatalf("%d records indexed, want %d", ix.Len(), i)
			}
			wantChecked := i
			if len(want) > 0 {
				wantChecked = ix.RecordAtLine(want[0].Line)
			}
			if ix.Checked() != wantChecked {
				t.Fatalf("checked %d, want %d (problems %v)", ix.Checked(), wantChecked, want)
			}
		})
	}
}

// TestIndexRefuses: inputs that cannot be read at random, and bad headers.
func TestIndexRefuses(t *testing.T) {
	dir := t.TempDir()
	gz := filepath.Join(dir, "t.cgt.jsonl.gz")
	os.WriteFile(gz, []byte{0x1f, 0x8b, 8, 0}, 0o644)
	bad := filepath.Join(dir, "bad.cgt.jsonl")
	os.WriteFile(bad, []byte("{\"cgtviz\": 9}\n"), 0o644)
	for _, tc := range []struct{ path, want string }{
		{Stdin, ErrNotIndexable.Error()},
		{gz, ErrNotIndexable.Error()},
		{dir, ErrNotIndexable.Error()},
		{filepath.Join(dir, "absent"), "no such file"},
		{bad, "bad.cgt.jsonl:1"},
	} {
		_, err := OpenIndex(context.Background(), tc.path, false)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("OpenIndex(%s): %v, want %q", tc.path, err, tc.want)
		}
	}
}

// TestIndexFollow appends records to a file being followed and waits for
// each to be indexed.
func TestIndexFollow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "live.cgt.jsonl")
	if err := os.WriteFile(path, []byte("{\"cgtviz\": 1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ix, err := OpenIndex(context.Background(), path, true)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for n := 1; n <= 3; n++ {
		// Half a line first: it must not be indexed until its newline.
		f.WriteString(`{"op": "st`)
		time.Sleep(150 * time.Millisecond)
		if ix.Len() != n-1 {
			t.Fatalf("half a line indexed: %d records, want %d", ix.Len(), n-1)
		}
		f.WriteString("ep\"}\n")
		deadline := time.Now().Add(5 * time.Second)
		for ix.Checked() < n && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if ix.Checked() != n {
			t.Fatalf("after %d appended records: %d checked", n, ix.Checked())
		}
		if rec, err := ix.Record(n - 1); err != nil || rec.Op != OpStep || rec.Line != n+1 {
			t.Fatalf("record %d: %+v, %v", n-1, rec, err)
		}
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	if !ix.Progress().Done {
		t.Error("the pass did not end at Close")
	}
}

// FuzzIndex indexes arbitrary text and requires what Reader reads of it:
// the same records and problems, line by line, and the problems of Check;
// never a panic.
func FuzzIndex(f *testing.F) {
	// Small seeds: with whole examples (2-3 KB) as seeds the fuzzer stalled
	// here after a dozen runs, where these give hundreds a second.
	f.Add([]byte("{\"cgtviz\": 1}\n{\"op\": \"def\", \"fn\": \"f\", \"params\": [\"x\"], \"body\": [{\"out\": \"y\", \"k\": \"add\", \"a\": \"x\", \"b\": 1}], \"returns\": [\"y\"]}\n{\"op\": \"tensor\", \"name\": \"x\", \"shape\": [4]}\n{\"op\": \"call\", \"fn\": \"f\", \"args\": [\"x\"], \"out\": [\"o\"]}\n{\"op\": \"read\", \"name\": \"q\"}\n"))
	f.Add([]byte("{\"cgtviz\": 1}\n\n\n{\"op\": \"step\"}\r\n{\"op\": \"config\", \"max_tensor_bytes\": 8}\n{\"op\": \"tensor\", \"name\": \"x\", \"shape\": [4]}\n"))
	f.Add([]byte("{\"cgtviz\": 1}\n{\"op\": "))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "f.cgt.jsonl")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		ix, err := OpenIndex(context.Background(), path, false)
		if err != nil {
			return // a bad header or a compressed file: nothing indexed
		}
		defer ix.Close()
		ix.Wait()
		r, err := NewReader(bytes.NewReader(data), path)
		if err != nil {
			t.Fatalf("the index read a header the reader refuses: %v", err)
		}
		for i := 0; ; i++ {
			rec, err := r.Next()
			if err == io.EOF || IsCut(err) { // (a cut trace's records are the ones before it)
				if ix.Len() != i {
					t.Fatalf("%d records indexed, the reader has %d", ix.Len(), i)
				}
				break
			}
			if i >= ix.Len() {
				t.Fatalf("the reader has record %d, the index %d", i, ix.Len())
			}
			got, gerr := ix.Record(i)
			if (err == nil) != (gerr == nil) {
				t.Fatalf("record %d: index error %v, reader error %v", i, gerr, err)
			}
			if err == nil && !reflect.DeepEqual(sansKey(*got), sansKey(rec)) {
				t.Fatalf("record %d: %+v, want %+v", i, *got, rec)
			}
		}
		if got, want := ix.Progress().Problems, Check(bytes.NewReader(data), path); len(got) != len(want) {
			t.Fatalf("problems %v, want %v", got, want)
		}
	})
}
