package traces

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	gojson "github.com/goccy/go-json"
)

// FuzzDecoders holds the fast decoder (goccy/go-json) to encoding/json's
// verdict on every line: both accept it or both refuse it, and what they
// accept decodes to the same record. The reader trusts the fast one's
// success, so a line one accepts and the other refuses would change what
// a trace means.
func FuzzDecoders(f *testing.F) {
	addSeeds(f)
	for _, s := range []string{
		`{"op":"call","fn":"f","args":["x"],"out":["y"]}`,
		`{"op":"call","fn":"f","args":["x"],"out":"y"}`,
		`{"OP":"step"}`, `{"op":"step"} x`, `{"op":"st\u0065p"}`, `{"op":"step",}`,
		`{"shape":[1e3]}`, `{"seed":9223372036854775808}`, `{"op":1}`, `[]`, `null`,
		`{"op":"step","op":"del"}`, `{"b":"\ud800"}`, `{"values":[1,2,NaN]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, line := range bytes.Split(data, []byte{'\n'}) {
			var fast, std rawRecord
			errFast := gojson.Unmarshal(line, &fast)
			errStd := json.Unmarshal(line, &std)
			if (errFast == nil) != (errStd == nil) {
				t.Fatalf("%q: go-json error %v, encoding/json error %v", line, errFast, errStd)
			}
			if errFast == nil && !reflect.DeepEqual(fast, std) {
				t.Fatalf("%q: go-json decodes\n%+v\nencoding/json\n%+v", line, fast, std)
			}
		}
	})
}

// benchLines are the records of a replay-heavy training loop, as written.
var benchLines = [][]byte{
	[]byte(`{"op": "step"}`),
	[]byte(`{"op": "call", "fn": "foo", "args": ["inp"], "out": ["a", "b"]}`),
	[]byte(`{"op": "del", "names": ["a"]}`),
	[]byte(`{"op": "call", "fn": "fee", "args": ["b"], "out": ["out"]}`),
	[]byte(`{"op": "tensor", "name": "inp", "shape": [256], "init": "rand", "seed": 7}`),
}

// BenchmarkDecodeStd and BenchmarkDecodeGoJSON decode the same record
// lines with encoding/json and with goccy/go-json, in one run for the
// ratio behind the reader's choice.
func BenchmarkDecodeStd(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		var r rawRecord
		if err := json.Unmarshal(benchLines[i%len(benchLines)], &r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeGoJSON(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		var r rawRecord
		if err := gojson.Unmarshal(benchLines[i%len(benchLines)], &r); err != nil {
			b.Fatal(err)
		}
	}
}
