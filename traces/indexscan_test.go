package traces

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestIndexScanSameRecords: Scan gives, from any record on, the records
// and problems Record gives, whatever the chunking (a config change, blank
// lines, repeated lines the memo serves, a bad line, a chunk boundary).
func TestIndexScanSameRecords(t *testing.T) {
	var b strings.Builder
	b.WriteString("{\"cgtviz\": 1}\n{\"op\": \"tensor\", \"name\": \"x\", \"shape\": [4]}\n\n")
	for i := range 30000 {
		if i == 15000 {
			b.WriteString("{\"op\": \"config\", \"max_tensor_bytes\": 64}\n")
		}
		b.WriteString("{\"op\": \"step\"}\n{\"op\": \"read\", \"name\": \"x\"}\n")
	}
	b.WriteString("{\"op\": \"tensor\", \"name\": \"y\", \"shape\": [1000]}\n{\"op\": \"nope\"}\n{\"op\": \"step\"}\n")
	paths, _ := filepath.Glob("../examples/recorded/*.cgt.jsonl")
	p := filepath.Join(t.TempDir(), "scan.cgt.jsonl")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range append(paths, p) {
		ix, err := OpenIndex(context.Background(), path, false)
		if err != nil {
			t.Fatal(err)
		}
		ix.Wait()
		n := ix.Len()
		for _, from := range []int{0, 1, n / 2, n - 1} {
			next := from
			err := ix.Scan(from, n, func(i int, rec *Record, err error) bool {
				if i != next {
					t.Fatalf("%s from %d: record %d, want %d", path, from, i, next)
				}
				next++
				want, werr := ix.Record(i)
				if (err == nil) != (werr == nil) || (err != nil && err.Error() != werr.Error()) {
					t.Fatalf("%s record %d: error %v, want %v", path, i, err, werr)
				}
				if !reflect.DeepEqual(sansKey(*rec), sansKey(*want)) {
					t.Fatalf("%s record %d: %+v, want %+v", path, i, *rec, *want)
				}
				return true
			})
			if err != nil || next != n {
				t.Fatalf("%s from %d: ended at %d of %d, %v", path, from, next, n, err)
			}
		}
		ix.Close()
	}
}
