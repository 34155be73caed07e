package traces

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// addSeeds adds the good and bad traces as seeds, besides the corpus
// under testdata/fuzz.
func addSeeds(f *testing.F) {
	files, _ := filepath.Glob("testdata/*/*.cgt.jsonl")
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

// FuzzReader feeds any bytes to the reader: it must not panic, must end,
// and every record it accepts must survive a canonical write and read.
func FuzzReader(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		rd, err := NewReader(bytes.NewReader(data), "fuzz")
		if err != nil {
			if _, ok := err.(*Problem); !ok {
				t.Fatalf("NewReader error is %T, want *Problem", err)
			}
			return
		}
		var ok []Record
		for i := 0; ; i++ {
			if i > len(data)+1 {
				t.Fatalf("more records than lines")
			}
			rec, err := rd.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				if _, isP := err.(*Problem); !isP {
					t.Fatalf("Next error is %T, want *Problem", err)
				}
				continue
			}
			ok = append(ok, rec)
		}
		var buf bytes.Buffer
		if err := Write(&buf, rd.Header(), ok); err != nil {
			t.Fatalf("writing accepted records: %v", err)
		}
		_, back, err := readRecords(&buf, "rewrite")
		if err != nil {
			t.Fatalf("reading the rewrite: %v\n%s", err, buf.String())
		}
		if len(back) != len(ok) {
			t.Fatalf("rewrite has %d records, want %d", len(back), len(ok))
		}
	})
}

// FuzzCheck feeds any bytes to the checker: it must not panic, must end,
// and must report at most MaxProblems+1 problems, each with the file name.
func FuzzCheck(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		ps := Check(bytes.NewReader(data), "fuzz")
		if len(ps) > MaxProblems+1 {
			t.Fatalf("%d problems, want at most %d", len(ps), MaxProblems+1)
		}
		for _, p := range ps {
			if p.File != "fuzz" || p.Msg == "" {
				t.Fatalf("bad problem %+v", p)
			}
		}
	})
}
