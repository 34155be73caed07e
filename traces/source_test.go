package traces

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// regexpSrc matches a record's src (the test traces' srcs hold no braces).
var regexpSrc = regexp.MustCompile(`, "src": \{[^}]*\}`)

// srcTrace has a "src" on each record that may carry one (issue 33 item
// 3), in the canonical form the writer gives.
const srcTrace = `{"cgtviz": 1}
{"op": "def", "fn": "f", "params": ["x"], "body": [{"out": "y", "k": "add", "a": "x", "b": 1}], "returns": ["y"], "src": {"file": "model.py", "line": 12, "fn": "forward"}}
{"op": "param", "name": "w", "shape": [4], "init": "rand", "seed": 1, "src": {"file": "/home/u/train.py", "line": 5, "fn": "<module>"}}
{"op": "tensor", "name": "x", "shape": [4], "init": "rand", "seed": 2, "src": {"file": "train.py", "line": 70}}
{"op": "call", "fn": "f", "args": ["x"], "out": ["y"], "invocation": 1, "src": {"file": "train.py", "line": 73, "fn": "step"}}
{"op": "read", "name": "y", "src": {"file": "train.py", "line": 74, "fn": "step"}}
{"op": "empty_cache", "src": {"file": "train.py", "line": 80, "fn": "<module>"}}
`

// TestSource: src decodes into Record.Src on def, param, tensor, call,
// read and empty_cache, round-trips through the writer byte for byte, and a trace without
// it reads as before (Src nil).
func TestSource(t *testing.T) {
	tr, err := Read(strings.NewReader(srcTrace), "t")
	if err != nil {
		t.Fatal(err)
	}
	want := []*Source{
		{File: "model.py", Line: 12, Fn: "forward"},
		{File: "/home/u/train.py", Line: 5, Fn: "<module>"},
		{File: "train.py", Line: 70},
		{File: "train.py", Line: 73, Fn: "step"},
		{File: "train.py", Line: 74, Fn: "step"},
		{File: "train.py", Line: 80, Fn: "<module>"},
	}
	for i, rec := range tr.Records {
		if rec.Src == nil || *rec.Src != *want[i] {
			t.Errorf("record %d (%s): src %v, want %v", i, rec.Op, rec.Src, want[i])
		}
	}
	if got := want[3].String(); got != "train.py:73 (in step)" {
		t.Errorf("String: %q", got)
	}
	var buf bytes.Buffer
	if err := Write(&buf, tr.Header, tr.Records); err != nil {
		t.Fatal(err)
	}
	if buf.String() != srcTrace {
		t.Errorf("written:\n%s\nwant:\n%s", buf.String(), srcTrace)
	}
	// Without src: the same records, Src nil, and written without it.
	old := regexpSrc.ReplaceAllString(srcTrace, "")
	tr, err = Read(strings.NewReader(old), "t")
	if err != nil {
		t.Fatal(err)
	}
	for i, rec := range tr.Records {
		if rec.Src != nil {
			t.Errorf("record %d: src %v in a trace without one", i, rec.Src)
		}
	}
	buf.Reset()
	if err := Write(&buf, tr.Header, tr.Records); err != nil {
		t.Fatal(err)
	}
	if buf.String() != old {
		t.Errorf("written:\n%s\nwant:\n%s", buf.String(), old)
	}
}

// TestSourceRefused: what a src must be, each refusal named.
func TestSourceRefused(t *testing.T) {
	const head = `{"cgtviz": 1}
{"op": "tensor", "name": "x", "shape": [4], "init": "rand", "seed": 2}
`
	long := strings.Repeat("a", MaxSrcFileLen+1)
	tests := []struct{ rec, want string }{
		{`{"op": "read", "name": "x", "src": {"file": "", "line": 3}}`, "src: file is empty"},
		{`{"op": "read", "name": "x", "src": {"file": "a.py", "line": 0}}`, "src: line is 0, want 1 or more"},
		{`{"op": "read", "name": "x", "src": {"file": "a.py", "line": -4}}`, "src: line is -4, want 1 or more"},
		{`{"op": "read", "name": "x", "src": {"line": 3}}`, `src: missing "file"`},
		{`{"op": "read", "name": "x", "src": {"file": "a.py"}}`, `src: missing "line"`},
		{`{"op": "read", "name": "x", "src": {"file": "a.py", "line": 3, "col": 2}}`, `src: unknown field "col"`},
		{`{"op": "read", "name": "x", "src": {"file": 7, "line": 3}}`, `src: field "file"`},
		{`{"op": "read", "name": "x", "src": {"file": "a.py", "line": 2.5}}`, `src: field "line"`},
		{`{"op": "read", "name": "x", "src": "a.py:3"}`, `field "src": want an object`},
		{`{"op": "read", "name": "x", "src": {"file": "a\u001b]0;x\u0007.py", "line": 3}}`, "holds a control character"},
		{`{"op": "read", "name": "x", "src": {"file": "a.py", "line": 3, "fn": "f\n"}}`, "src: fn"},
		{`{"op": "read", "name": "x", "src": {"file": "` + long + `", "line": 3}}`, "MaxSrcFileLen"},
		{`{"op": "del", "names": ["x"], "src": {"file": "a.py", "line": 3}}`, `unknown field "src"`},
		{`{"op": "expect", "src": {"file": "a.py", "line": 3}}`, `unknown field "src"`},
	}
	for _, tc := range tests {
		ps := Check(strings.NewReader(head+tc.rec+"\n"), "t")
		if len(ps) != 1 || !strings.Contains(ps[0].Msg, tc.want) || ps[0].Line != 3 {
			t.Errorf("%s:\n  problems %v, want one at line 3 saying %q", tc.rec, ps, tc.want)
		}
	}
}

// TestSourceGoodTrace: the good trace with src checks clean (it is a
// seed of the fuzzers, as every testdata trace is).
func TestSourceGoodTrace(t *testing.T) {
	path := filepath.Join("testdata", "good", "src.cgt.jsonl")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(`"src": {`)) {
		t.Fatalf("%s holds no src", path)
	}
	if ps := CheckFile(path); len(ps) != 0 {
		t.Errorf("problems: %v", ps)
	}
}
