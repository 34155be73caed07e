package engine

import (
	"strings"
	"testing"

	"github.com/cgtviz/cgtviz/engine/device/sim"
	"github.com/cgtviz/cgtviz/traces"
)

// TestOverwrittenErrorNamesSourceAndFreer: the overwritten error's stack
// trace is the user's line that made the tensor when the trace has it,
// as PyTorch's is (issue 33 item 3), and the error says which call freed
// it (issue 34 item 8); without a src, the trace's line as before.
func TestOverwrittenErrorNamesSourceAndFreer(t *testing.T) {
	const trace = `{"cgtviz": 1, "name": "src overwritten"}
{"op": "def", "fn": "foo", "params": ["x"], "body": [{"out": "a", "k": "add", "a": "x", "b": 1}], "returns": ["a"]}
{"op": "def", "fn": "fee", "params": ["x"], "body": [{"out": "a", "k": "add", "a": "x", "b": 2}], "returns": ["a"]}
{"op": "tensor", "name": "inp", "shape": [4], "init": "rand", "seed": 1}
{"op": "call", "fn": "foo", "args": ["inp"], "out": ["out"], "src": {"file": "train.py", "line": 10, "fn": "main"}}
{"op": "call", "fn": "fee", "args": ["inp"], "out": ["out2"]}
{"op": "read", "name": "out"}
{"op": "call", "fn": "foo", "args": ["inp"], "out": ["out3"]}
{"op": "call", "fn": "fee", "args": ["inp"], "out": ["out4"]}
{"op": "read", "name": "out3"}
`
	tr, err := traces.ReadChecked(strings.NewReader(trace), "t.cgt.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(tr.Header, Options{Devices: sim.Devices(1), File: "t.cgt.jsonl"})
	if err != nil {
		t.Fatal(err)
	}
	var errs []string
	for i := range tr.Records {
		if s := e.Apply(&tr.Records[i]); s.Err != nil {
			errs = append(errs, s.Err.Error())
		}
	}
	if len(errs) != 2 {
		t.Fatalf("errors %q, want the two reads'", errs)
	}
	for _, want := range []string{`Stack trace: File "train.py", line 10, in main (t.cgt.jsonl:5, foo (warmup))`,
		"[cgtviz: it was freed at line 6, when the call of fee there began a new generation]"} {
		if !strings.Contains(errs[0], want) {
			t.Errorf("the first read's error lacks %q:\n%s", want, errs[0])
		}
	}
	for _, want := range []string{"Stack trace: t.cgt.jsonl:8, in foo", "[cgtviz: it was freed at line 9, when the call of fee there began a new generation]"} {
		if !strings.Contains(errs[1], want) {
			t.Errorf("the second read's error lacks %q:\n%s", want, errs[1])
		}
	}
}
