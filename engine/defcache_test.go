package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/cgtviz/cgtviz/engine/device/sim"
	"github.com/cgtviz/cgtviz/traces"
)

// TestDefByLineKeyReused runs a trace whose reader hands the line key of
// "call f0" to "call f1", and f1's to f0's, once its memo is remade
// (byLineMax distinct lines later): the defs take one and two params, so a
// call given the other's def by its key fails on its arity. The cache by
// line key must find each call's own def (by its name) and the run go
// through without an error, each call running its own function.
func TestDefByLineKeyReused(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"cgtviz": 1}` + "\n")
	b.WriteString(`{"op": "def", "fn": "f0", "params": ["x"], "body": [{"out": "y", "k": "add", "a": "x", "b": 1}], "returns": ["y"]}` + "\n")
	b.WriteString(`{"op": "def", "fn": "f1", "params": ["x", "z"], "body": [{"out": "y", "k": "add", "a": "x", "b": "z"}], "returns": ["y"]}` + "\n")
	b.WriteString(`{"op": "tensor", "name": "x", "shape": [4], "init": "ones"}` + "\n")
	b.WriteString(`{"op": "call", "fn": "f0", "args": ["x"], "out": ["y"]}` + "\n")
	b.WriteString(`{"op": "call", "fn": "f1", "args": ["x", "x"], "out": ["y"]}` + "\n")
	// Keys 1 to 3 are the tensor and the calls; the memo, full at its
	// 16,385th line, is remade there, so the calls below are 2 and 3.
	for i := 0; i < byLineMax-2; i++ {
		fmt.Fprintf(&b, `{"op": "note", "text": "n%d"}`+"\n", i)
	}
	b.WriteString(`{"op": "call", "fn": "f1", "args": ["x", "x"], "out": ["y"]}` + "\n")
	b.WriteString(`{"op": "call", "fn": "f0", "args": ["x"], "out": ["y"]}` + "\n")
	rd, err := traces.NewReader(strings.NewReader(b.String()), "t")
	if err != nil {
		t.Fatal(err)
	}
	_, err = RunReader(context.Background(), rd, Options{Devices: sim.Devices(1)}, func(s *Step) bool {
		if s.Err != nil {
			t.Errorf("line %d: %v", s.Line, s.Err)
		}
		if s.Op == traces.OpCall {
			for _, ev := range s.Events {
				if ev.Fn != "" && ev.Fn != s.Fn {
					t.Errorf("line %d: call %s has an event of %s", s.Line, s.Fn, ev.Fn)
				}
			}
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
}
