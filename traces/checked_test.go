package traces

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestCheckedReader holds the one-pass reader to Check and Reader on every
// test trace: a clean trace yields exactly the records Reader does; a bad
// one yields the records before its first problem, then exactly the
// problems Check reports.
func TestCheckedReader(t *testing.T) {
	files, err := filepath.Glob("testdata/*/*.cgt.jsonl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no test traces: %v", err)
	}
	for _, path := range files {
		t.Run(path, func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			want := Check(bytes.NewReader(data), path)
			cr, err := NewCheckedReader(bytes.NewReader(data), path)
			if err != nil {
				if len(want) != 1 || err.Error() != want[0].String() {
					t.Fatalf("NewCheckedReader: %v, Check: %v", err, want)
				}
				return
			}
			var got []Record
			var probs Problems
			for {
				rec, err := cr.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					if !errors.As(err, &probs) {
						t.Fatalf("Next: %T %v, want Problems", err, err)
					}
					continue
				}
				got = append(got, rec)
			}
			if !reflect.DeepEqual([]Problem(probs), want) && !(len(probs) == 0 && len(want) == 0) {
				t.Fatalf("problems:\n%v\nCheck:\n%v", probs, Problems(want))
			}
			if len(want) > 0 {
				// Only records before the first problem's line came out.
				for _, r := range got {
					if want[0].Line > 0 && r.Line >= want[0].Line {
						t.Fatalf("record of line %d handed out after the problem at line %d", r.Line, want[0].Line)
					}
				}
				return
			}
			rd, err := NewReader(bytes.NewReader(data), path)
			if err != nil {
				t.Fatal(err)
			}
			var all []Record
			for {
				rec, err := rd.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				all = append(all, rec)
			}
			if !reflect.DeepEqual(got, all) {
				t.Fatalf("CheckedReader gave %d records, Reader %d", len(got), len(all))
			}
			if cr.Records() != len(all) {
				t.Fatalf("Records() = %d, want %d", cr.Records(), len(all))
			}
		})
	}
}
