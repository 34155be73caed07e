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
// a trace means. It holds a def's statements' fast path (decodeStmtFast)
// to decodeStrict the same way, on each line as a statement: what the
// fast path accepts, decodeStrict accepts, with the same statement.
func FuzzDecoders(f *testing.F) {
	addSeeds(f)
	for _, s := range []string{
		`{"op":"call","fn":"f","args":["x"],"out":["y"]}`,
		`{"op":"call","fn":"f","args":["x"],"out":"y"}`,
		`{"OP":"step"}`, `{"op":"step"} x`, `{"op":"st\u0065p"}`, `{"op":"step",}`,
		`{"shape":[1e3]}`, `{"seed":9223372036854775808}`, `{"op":1}`, `[]`, `null`,
		`{"op":"step","op":"del"}`, `{"b":"\ud800"}`, `{"values":[1,2,NaN]}`,
		`{"out": "y", "k": "add", "a": "x", "b": 1}`,
		`{"out": "y", "k": "view", "a": "x", "shape": [2, 2], "strides": [2, 1], "offset": 0}`,
		`{"out": "y", "k": "fill", "shape": [3], "value": 1.5, "dtype": "float16"}`,
		`{"OUT": "y"}`, `{"o\u0075t": "y"}`, `{"out": "y", "extra": 1}`, `{"out": 1}`,
		`{"offset": 1.5}`, `{"b": {"out": 1}}`, `{"out": "a\"b", "k": "add"}`, `{"value": 1e400}`,
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
			var fastS, stdS rawStmt
			if decodeStmtFast(line, &fastS) {
				if m := decodeStrict(line, &stdS, "body"); m != "" {
					t.Fatalf("%q: the statement's fast path accepts it, decodeStrict says %s", line, m)
				}
				if !reflect.DeepEqual(fastS, stdS) {
					t.Fatalf("%q: the statement's fast path decodes\n%+v\ndecodeStrict\n%+v", line, fastS, stdS)
				}
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

// TestStmtKeysKnown checks stmtKeysKnown's names against rawStmt's
// fields: a name there that rawStmt lacks would let an unknown field
// through.
func TestStmtKeysKnown(t *testing.T) {
	typ := reflect.TypeFor[rawStmt]()
	for i := range typ.NumField() {
		name := typ.Field(i).Tag.Get("json")
		if !stmtKeysKnown([]byte(`{"` + name + `": 0}`)) {
			t.Errorf("field %q of rawStmt is not taken by stmtKeysKnown", name)
		}
	}
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{`{"out": "y", "k": "add", "a": "x", "b": 1}`, true},
		{`{"out": "y", "shape": [1, 2], "b": "out"}`, true},
		{`{"out": "y", "extra": 1}`, false},
		{`{"out": "y", "b": {"extra": 1}}`, true}, // the decoder refuses the value
		{`{"o\u0075t": "y"}`, false},
		{`{"Out": "y"}`, false},
		{`["out"]`, false},
		{`"out"`, false},
		{`{"out": "y`, false},
	} {
		if got := stmtKeysKnown([]byte(tc.in)); got != tc.want {
			t.Errorf("stmtKeysKnown(%s) = %v, want %v", tc.in, got, tc.want)
		}
	}
	if n := typ.NumField(); n != 9 {
		t.Errorf("rawStmt has %d fields, stmtKeysKnown knows 9: update both", n)
	}
}
