package traces

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

func TestProblemString(t *testing.T) {
	tests := []struct {
		p    Problem
		want string
	}{
		{Problem{File: "t.cgt.jsonl", Line: 3, Msg: "bad"}, "t.cgt.jsonl:3: bad"},
		{Problem{File: "t.cgt.jsonl", Line: 3, Col: 7, Msg: "bad"}, "t.cgt.jsonl:3:7: bad"},
		{Problem{File: "t.cgt.jsonl", Msg: "too many errors"}, "t.cgt.jsonl: too many errors"},
	}
	for _, tc := range tests {
		if got := tc.p.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
		if got := (&tc.p).Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
	ps := Problems{{File: "a", Line: 1, Msg: "x"}, {File: "a", Line: 2, Msg: "y"}}
	if got := ps.Error(); got != "a:1: x\na:2: y" {
		t.Errorf("Problems.Error() = %q", got)
	}
}

// firstProblem reads a trace to the end and returns the first problem.
func firstProblem(t *testing.T, trace string) string {
	t.Helper()
	rd, err := NewReader(strings.NewReader(trace), "t.cgt.jsonl")
	if err != nil {
		return err.Error()
	}
	for {
		_, err := rd.Next()
		if err == io.EOF {
			return ""
		}
		if err != nil {
			var p *Problem
			if !errors.As(err, &p) {
				t.Fatalf("Next returned %T, want *Problem", err)
			}
			return p.String()
		}
	}
}

func TestReaderRefusals(t *testing.T) {
	const h = `{"cgtviz": 1}` + "\n"
	tests := []struct {
		name, trace, want string
	}{
		{"huge shape", h + `{"op": "tensor", "name": "x", "shape": [1099511627776, 1099511627776], "init": "zeros"}`,
			"t.cgt.jsonl:2: tensor x: shape [1099511627776, 1099511627776] is over max_tensor_bytes (4 GiB)"},
		{"max int dims", h + `{"op": "tensor", "name": "x", "shape": [9223372036854775807, 9223372036854775807, 2, 2], "init": "zeros"}`,
			"t.cgt.jsonl:2: tensor x: shape [9223372036854775807, 9223372036854775807, 2, 2] is over max_tensor_bytes (4 GiB)"},
		{"zero dim makes it empty", h + `{"op": "tensor", "name": "x", "shape": [1099511627776, 0], "init": "zeros"}`, ""},
		{"exactly the limit", `{"cgtviz": 1, "config": {"max_tensor_bytes": 16}}` + "\n" + `{"op": "tensor", "name": "x", "shape": [2, 2], "init": "zeros"}`, ""},
		{"over the limit by one element", `{"cgtviz": 1, "config": {"max_tensor_bytes": 16}}` + "\n" + `{"op": "tensor", "name": "x", "shape": [5], "init": "zeros"}`,
			"t.cgt.jsonl:2: tensor x: shape [5] is over max_tensor_bytes (16 bytes)"},
		{"syntax column", h + `{"op": "step",}`, "t.cgt.jsonl:2:15: invalid JSON: invalid character '}' looking for beginning of object key string"},
		{"escaped key is the same key", h + `{"o\u0070": "step"}`, ""},
		{"escaped duplicate", h + `{"op": "step", "o\u0070": "step"}`, `t.cgt.jsonl:2: field "op" appears twice`},
		{"meta is free-form", `{"cgtviz": 1, "meta": {"OP": 1, "OP": 2, "x": {"Name": []}}}` + "\n" + `{"op": "step"}`, ""},
		{"meta must be an object", `{"cgtviz": 1, "meta": [1]}`, "t.cgt.jsonl:1: header: meta: want an object, got a list"},
		{"crlf and blank lines", h + "\r\n\r\n" + `{"op": "step"}` + "\r\n" + `{"op": "stp"}` + "\r\n",
			`t.cgt.jsonl:5: unknown op "stp" (ops: def, tensor, param, call, eager, del, step, read, expect, note, config, reset, skipped_backward, saved, empty_cache)`},
		{"saved needs of", h + `{"op": "saved", "name": "s"}`, `t.cgt.jsonl:2: saved s: missing "of"`},
		{"saved of a bad name", h + `{"op": "saved", "name": "s", "of": "a b"}`, `t.cgt.jsonl:2: saved s: of "a b" is not a valid name (use letters, digits, _, . and -)`},
		{"static past the params", h + `{"op": "def", "fn": "f", "params": ["x"], "body": [], "returns": ["x"], "static": [1]}`,
			`t.cgt.jsonl:2: def f: static 1 is not a param's position (0 to 0)`},
		{"static unsorted", h + `{"op": "def", "fn": "f", "params": ["x", "y"], "body": [], "returns": ["x"], "static": [1, 0]}`,
			`t.cgt.jsonl:2: def f: static must list positions in increasing order, each once`},
		{"static of ints", h + `{"op": "def", "fn": "f", "params": ["x"], "body": [], "returns": ["x"], "static": ["x"]}`,
			`t.cgt.jsonl:2: def f: field "static": want a list of ints, got a string`},
		{"no newline at end", h + `{"op": "read"}`, `t.cgt.jsonl:2: read: missing "name"`},
		{"null is absent", h + `{"op": "call", "fn": "f", "args": [], "out": null}`, ""},
		{"huge number", h + `{"op": "expect", "nodes": 1e999}`, `t.cgt.jsonl:2: expect: field "nodes": want an integer, got 1e999`},
		{"string b", h + `{"op": "eager", "out": "y", "k": "add", "a": "x", "b": "1"}`, ""},
		{"scalar shape", h + `{"op": "tensor", "name": "s", "shape": [], "init": "values", "values": [3]}`, ""},
		{"header not first", "\n" + h, `t.cgt.jsonl:1: line 1 is blank: it must be the header, e.g. {"cgtviz": 1}`},
		{"header bad json", `{"cgtviz": 1`, "t.cgt.jsonl:1:12: header: invalid JSON: unexpected end of JSON input"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := firstProblem(t, tc.trace); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestReaderRecords(t *testing.T) {
	trace := `{"cgtviz": 1, "name": "n", "devices": 2, "config": {"rerecord_limit": 0}, "meta": {"a": 1}}

{"op": "tensor", "name": "x", "shape": [2], "init": "values", "values": [0.5, -1], "device": 1}
{"op": "eager", "out": "y", "k": "mul", "a": "x", "b": 2}
{"op": "expect", "error": null, "node": {"parent_fn": null}}
`
	rd, err := NewReader(strings.NewReader(trace), "t")
	if err != nil {
		t.Fatal(err)
	}
	h := rd.Header()
	wantCfg := DefaultConfig()
	wantCfg.RerecordLimit = 0
	wantCfg.Set = map[string]bool{"rerecord_limit": true}
	if h.Version != 1 || h.Name != "n" || h.Devices != 2 || !reflect.DeepEqual(h.Config, wantCfg) || string(h.Meta) != `{"a": 1}` {
		t.Errorf("header = %+v", h)
	}
	want := []Record{
		{Line: 3, Op: OpTensor, Name: "x", Shape: []int{2}, Init: InitValues, Values: []float64{0.5, -1}, Device: 1},
		{Line: 4, Op: OpEager, Stmt: &Stmt{Out: "y", K: "mul", A: "x", B: Operand{Num: 2, IsNum: true}}},
		{Line: 5, Op: OpExpect, Expect: &Expect{HasError: true, Node: &ExpectNode{HasParentFn: true}}},
	}
	for i, w := range want {
		got, err := rd.Next()
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if !reflect.DeepEqual(sansKey(got), w) {
			t.Errorf("record %d:\n got %#v\nwant %#v", i, got, w)
		}
	}
	if _, err := rd.Next(); err != io.EOF {
		t.Errorf("after the last record: %v, want io.EOF", err)
	}
}

// longLineTrace yields a header, then a note line with n bytes of text,
// then a bad record, without holding the long line in memory.
func longLineTrace(n int64) io.Reader {
	return io.MultiReader(
		strings.NewReader(`{"cgtviz": 1}`+"\n"+`{"op": "note", "text": "`),
		io.LimitReader(repeatByte('a'), n),
		strings.NewReader("\"}\n{\"op\": \"stp\"}\n"),
	)
}

type repeatByte byte

func (r repeatByte) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

// TestReaderLongLine checks that a line over MaxLineBytes is refused with
// its number, and that reading goes on with the next line.
func TestReaderLongLine(t *testing.T) {
	rd, err := NewReader(longLineTrace(3*MaxLineBytes), "t")
	if err != nil {
		t.Fatal(err)
	}
	_, err = rd.Next()
	if err == nil || err.Error() != "t:2: line is longer than 4 MiB (MaxLineBytes)" {
		t.Fatalf("long line: got %v", err)
	}
	if cap(rd.buf) > MaxLineBytes+64<<10 {
		t.Errorf("reader buffered %d bytes for one line", cap(rd.buf))
	}
	_, err = rd.Next()
	if err == nil || !strings.HasPrefix(err.Error(), `t:3: unknown op "stp"`) {
		t.Fatalf("line after the long one: got %v", err)
	}
	// Just under the limit is fine.
	rd, err = NewReader(longLineTrace(MaxLineBytes-100), "t")
	if err != nil {
		t.Fatal(err)
	}
	if rec, err := rd.Next(); err != nil || len(rec.Text) != MaxLineBytes-100 {
		t.Fatalf("line under the limit: %v", err)
	}
}

func TestReaderMaxRecords(t *testing.T) {
	rd, err := NewReader(strings.NewReader(`{"cgtviz": 1}`+"\n"+strings.Repeat(`{"op": "step"}`+"\n", 5)), "t")
	if err != nil {
		t.Fatal(err)
	}
	rd.maxRecords = 3
	var errs []string
	for {
		_, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	if want := []string{"t:5: more than 3 records (MaxRecords)"}; !reflect.DeepEqual(errs, want) {
		t.Errorf("got %q, want %q", errs, want)
	}
}

type failingReader struct{ n int }

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n > 0 {
		f.n = 0
		return copy(p, `{"cgtviz": 1}`+"\n"+`{"op": "step"}`+"\n"), nil
	}
	return 0, errors.New("disk on fire")
}

func TestReaderIOError(t *testing.T) {
	ps := Check(&failingReader{n: 1}, "t")
	if len(ps) != 1 || ps[0].String() != "t:3: read error: disk on fire" {
		t.Errorf("got %v", ps)
	}
}

func TestReaderNestingBoundary(t *testing.T) {
	nest := func(n int) string {
		return `{"op": "note", "text": ` + strings.Repeat("[", n-1) + strings.Repeat("]", n-1) + "}"
	}
	h := `{"cgtviz": 1}` + "\n"
	if got := firstProblem(t, h+nest(MaxNesting)); !strings.Contains(got, `want a string, got a list`) {
		t.Errorf("at the limit: %q", got)
	}
	if got := firstProblem(t, h+nest(MaxNesting+1)); !strings.Contains(got, "MaxNesting") {
		t.Errorf("over the limit: %q", got)
	}
	// A deep nesting inside a string is not nesting.
	if got := firstProblem(t, h+`{"op": "note", "text": "`+strings.Repeat("[{", 100)+`"}`); got != "" {
		t.Errorf("brackets in a string: %q", got)
	}
}

// sansKey is r without its reader's line key (Record.LineKey), a cache
// hint that records equal in meaning need not share: a record read again
// (an Index, a second reader) or built in code has another or none.
func sansKey(r Record) Record {
	r.memoKey = 0
	return r
}
