package traces

import (
	"io"
	"strings"
	"testing"
)

// TestCut: a trace whose last line has no line ending and is JSON broken
// off at its end (a recording that stopped mid-write) is cut, not wrong:
// the records before it check, and the cut names its line. Anything else
// wrong on that line is a problem as before.
func TestCut(t *testing.T) {
	const head = `{"cgtviz": 1}
{"op": "def", "fn": "f", "params": ["x"], "body": [{"out": "y", "k": "add", "a": "x", "b": 1}], "returns": ["y"]}
{"op": "tensor", "name": "x", "shape": [4], "init": "rand", "seed": 1}
{"op": "call", "fn": "f", "args": ["x"], "out": ["y"]}
`
	tests := []struct {
		name    string
		text    string
		records int    // records CheckedReader hands out
		cut     int    // the cut's line (0: none)
		problem string // a problem's text (empty: none)
	}{
		{"cut mid-record", head + `{"op": "call", "fn": "f", "ar`, 3, 5, ""},
		{"cut after a key", head + `{"op": "del", "names": ["y"]`, 3, 5, ""},
		{"cut inside a string", head + `{"op": "no`, 3, 5, ""},
		{"whole last line without its line ending", head + `{"op": "del", "names": ["y"]}`, 4, 0, ""},
		{"broken off but ended", head + `{"op": "call", "fn": "f", "ar` + "\n", 0, 0, ":5:"},
		{"wrong before its end", head + `{"op": "del", "names": ["y"]]`, 0, 0, ":5:"},
		{"a problem before the cut", head + `{"op": "read", "name": "zz"}` + "\n" + `{"op": "del"`, 0, 6, "zz"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cr, err := NewCheckedReader(strings.NewReader(tc.text), "t.cgt.jsonl")
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for {
				_, err = cr.Next()
				if err != nil {
					break
				}
				n++
			}
			if tc.problem == "" {
				if err != io.EOF {
					t.Fatalf("Next: %v, want io.EOF", err)
				}
				if n != tc.records {
					t.Errorf("%d records, want %d", n, tc.records)
				}
			} else if err == io.EOF || !strings.Contains(err.Error(), tc.problem) {
				t.Fatalf("Next: %v, want a problem naming %q", err, tc.problem)
			}
			c := cr.Cut()
			switch {
			case tc.cut == 0 && c != nil:
				t.Errorf("cut at %v, want none", c)
			case tc.cut != 0 && c == nil && tc.problem == "":
				t.Errorf("no cut, want one at line %d", tc.cut)
			case c != nil && c.Line != tc.cut:
				t.Errorf("cut at line %d, want %d", c.Line, tc.cut)
			}
			if c != nil && !strings.Contains(c.Error(), "t.cgt.jsonl:5: the trace ends mid-record") {
				t.Errorf("cut says %q", c.Error())
			}
			// Check agrees: the cut is no problem.
			ps := Check(strings.NewReader(tc.text), "t.cgt.jsonl")
			if (len(ps) == 0) != (tc.problem == "") {
				t.Errorf("Check: %v", ps)
			}
		})
	}
}

// TestHeaderUnended: the meta object's "journal" key says the recording did
// not end; its absence, null or false, or a meta that is not an object, do
// not.
func TestHeaderUnended(t *testing.T) {
	for _, tc := range []struct {
		meta string
		want bool
	}{
		{``, false},
		{`{}`, false},
		{`{"torch": "2.11.0"}`, false},
		{`{"journal": "written as the program ran; the recording did not end"}`, true},
		{`{"journal": true}`, true},
		{`{"journal": {"calls": 3}}`, true},
		{`{"journal": null}`, false},
		{`{"journal": false}`, false},
		{`{"journal": ""}`, true}, // (present: the recorder wrote it)
		{`[1, 2]`, false},
		{`{"journal": `, false},
	} {
		if got := (Header{Meta: []byte(tc.meta)}).Unended(); got != tc.want {
			t.Errorf("meta %s: Unended %v, want %v", tc.meta, got, tc.want)
		}
	}
}
