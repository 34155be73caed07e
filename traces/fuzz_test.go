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
	// The additions' edges, each after a header, so a mutation starts
	// close to them: extents near 2^63, strides without shape, every
	// config key, invocations and dtypes in odd places.
	for _, line := range []string{
		`{"op": "tensor", "name": "m", "shape": [2, 3], "init": "zeros"}` + "\n" +
			`{"op": "eager", "out": "v", "k": "view", "a": "m", "shape": [2, 2], "strides": [9223372036854775807, 1], "offset": 9223372036854775806}`,
		`{"op": "eager", "out": "v", "k": "view", "a": "m", "strides": [], "offset": 0}`,
		`{"op": "config", "warmup_runs": 0, "rerecord_limit": 1, "max_tensor_bytes": 1, "max_total_bytes": 1, "recompile_limit": 0, "automatic_dynamic_shapes": true, "assume_static_by_default": false, "support_input_mutation": true, "skip_dynamic_graphs": false, "dynamic_shape_warn_limit": 0}`,
		`{"op": "call", "fn": "f", "args": [], "invocation": 9223372036854775807}`,
		`{"op": "tensor", "name": "b", "shape": [1, 1, 1, 1, 1, 1, 1, 1], "dtype": "bool", "init": "arange"}`,
		`{"op": "def", "fn": "g", "params": ["x"], "body": [{"out": "x", "k": "fill", "shape": [1], "value": 1, "dtype": "int8"}], "returns": ["x"]}`,
	} {
		f.Add([]byte(`{"cgtviz": 1, "config": {"support_input_mutation": false}}` + "\n" + line + "\n"))
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
			if c, isCut := err.(*Cut); isCut {
				// A last line without its line ending that does not parse
				// is the trace's cut (what a crashed recording leaves):
				// nothing may follow it.
				if c.Line < 1 {
					t.Fatalf("cut at line %d", c.Line)
				}
				if _, err := rd.Next(); err != io.EOF {
					t.Fatalf("after the cut, Next gave %v, want io.EOF", err)
				}
				break
			}
			if err != nil {
				if _, isP := err.(*Problem); !isP {
					t.Fatalf("Next error is %T, want *Problem or *Cut", err)
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
