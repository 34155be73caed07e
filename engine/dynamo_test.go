package engine_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/traces"
)

// limitTrace calls two defs with parameters of new shapes of size-1 dims:
// each call needs a graph of its own (a dynamic dim never takes size 1).
const limitTrace = `{"cgtviz": 1}
{"op": "def", "fn": "f", "params": ["w"], "body": [{"out": "y", "k": "mul", "a": "w", "b": 2}], "returns": ["y"]}
{"op": "def", "fn": "g", "params": ["w"], "body": [{"out": "y", "k": "add", "a": "w", "b": 2}], "returns": ["y"]}
{"op": "param", "name": "p2", "shape": [1], "init": "ones"}
{"op": "param", "name": "p3", "shape": [1, 1], "init": "ones"}
{"op": "param", "name": "p4", "shape": [1, 1, 1], "init": "ones"}
{"op": "step"}
{"op": "call", "fn": "f", "args": ["p2"], "out": ["y"]}
{"op": "step"}
{"op": "call", "fn": "f", "args": ["p3"], "out": ["y"]}
{"op": "step"}
{"op": "call", "fn": "g", "args": ["p2"], "out": ["y"]}
{"op": "step"}
{"op": "call", "fn": "f", "args": ["p4"], "out": ["y"]}
{"op": "step"}
{"op": "call", "fn": "g", "args": ["p3"], "out": ["y"]}
`

// TestRecompileLimit checks Options.RecompileLimit and Options.SharedCode:
// the limit counts the graphs of one code object, each def's own by
// default, every def's together when they share one.
func TestRecompileLimit(t *testing.T) {
	tests := []struct {
		name  string
		opts  engine.Options
		eager []int // lines that run eagerly past the limit
	}{
		{"default limit 8", engine.Options{}, nil},
		{"limit 2 per def", engine.Options{RecompileLimit: 2}, []int{14}},
		{"limit 2 shared", engine.Options{RecompileLimit: 2, SharedCode: true}, []int{12, 14, 16}},
		{"limit 3 shared", engine.Options{RecompileLimit: 3, SharedCode: true}, []int{14, 16}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			steps, _ := runText(t, limitTrace, tc.opts)
			var eager []int
			for _, line := range slices.Sorted(maps.Keys(steps)) {
				s := steps[line]
				if s.Err != nil {
					t.Errorf("line %d: %s", s.Line, s.Err)
				}
				if s.Action == engine.ActionEager {
					if !hasEvent(s, engine.EvEager, "recompile_limit") {
						t.Errorf("line %d: eager without the recompile-limit event: %+v", s.Line, s.Events)
					}
					eager = append(eager, s.Line)
				} else if s.Op == traces.OpCall && s.Action != engine.ActionWarmup {
					t.Errorf("line %d: %s, want a warmup (every shape is new)", s.Line, s.Action)
				}
			}
			if !slices.Equal(eager, tc.eager) {
				t.Errorf("eager at lines %v, want %v", eager, tc.eager)
			}
		})
	}
}
