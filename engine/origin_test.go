package engine_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/traces"
)

// pendingTrace records a forward, then calls it again in a new invocation
// while its backward is pending: the path is still recording, so the
// second forward records as the first's child, though no graph break made
// it (another invocation).
const pendingTrace = `{"cgtviz": 1}
{"op": "def", "fn": "fwd", "mode": "forward", "params": ["x"], "body": [{"out": "y", "k": "mul", "a": "x", "b": "x"}], "returns": ["y"]}
{"op": "def", "fn": "bwd", "mode": "backward", "params": ["g"], "body": [{"out": "h", "k": "mul", "a": "g", "b": 2}], "returns": ["h"]}
{"op": "tensor", "name": "x", "shape": [4, 4], "init": "ones"}
{"op": "call", "fn": "fwd", "args": ["x"], "out": ["y"], "invocation": 1}
{"op": "call", "fn": "bwd", "args": ["y"], "out": ["g"], "invocation": 1}
{"op": "del", "names": ["y", "g"]}
{"op": "call", "fn": "fwd", "args": ["x"], "out": ["y2"], "invocation": 2}
{"op": "call", "fn": "fwd", "args": ["x"], "out": ["y3"], "invocation": 3}
`

// originsOf runs a trace and returns, by line, the Origin of its record or
// warmup event.
func originsOf(t *testing.T, tr *traces.Trace) map[int]*engine.Origin {
	t.Helper()
	out := map[int]*engine.Origin{}
	_, err := engine.RunTrace(context.Background(), tr, engine.Options{Devices: simDevices(1), Check: true}, func(s *engine.Step) bool {
		if s.Err != nil {
			t.Errorf("line %d: %v", s.Line, s.Err)
		}
		for _, ev := range s.Events {
			if ev.Kind == engine.EvRecord || ev.Kind == engine.EvWarmup {
				if ev.Origin == nil {
					t.Errorf("line %d: %s without an Origin", s.Line, ev.Kind)
				}
				out[s.Line] = ev.Origin
			}
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestOrigin checks the facts a warmup or a recording carries beyond its
// cause (issue 34 item 7): the compiled graph (Dynamo's compile, a new
// size of a dynamic graph), the call before it on the path and whether
// that call ran in the same invocation, and a backward's forward.
func TestOrigin(t *testing.T) {
	pending, err := traces.Read(strings.NewReader(pendingTrace), "pending.cgt.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	read := func(p string) *traces.Trace {
		tr, err := traces.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	gb := read("../examples/recorded/graph_break.cgt.jsonl")
	mlp := read("../examples/recorded/train_mlp.cgt.jsonl")
	dyn := read("../examples/s36-rank-change-dynamic.cgt.jsonl")
	s24 := read("../examples/s24-pending-backward.cgt.jsonl")
	tests := []struct {
		name string
		tr   *traces.Trace
		line int
		want engine.Origin
	}{
		{"first warmup starts the path", gb, 7, engine.Origin{Compile: 1, Size: 1, Shapes: [][]int{{8, 32}}, First: true, ForwardNode: -1}},
		{"resume function warms up in the same invocation", gb, 14, engine.Origin{Compile: 1, Size: 1, Shapes: [][]int{{8, 32}}, First: true, ForwardNode: -1,
			Prev: &engine.PrevCall{Line: 7, Fn: "Gate_0", Node: -1, Invocations: true, SameInvocation: true}}},
		{"new root, the function's first recording", gb, 19, engine.Origin{Compile: 1, Size: 1, Shapes: [][]int{{8, 32}}, First: true, ForwardNode: -1}},
		{"resume function recorded in the same invocation", gb, 24, engine.Origin{Compile: 1, Size: 1, Shapes: [][]int{{8, 32}}, First: true, ForwardNode: -1,
			Prev: &engine.PrevCall{Line: 19, Fn: "Gate_0", Node: 0, Invocations: true, SameInvocation: true}}},
		{"backward in its forward's invocation", mlp, 28, engine.Origin{Compile: 1, Size: 1, Shapes: [][]int{{32, 10}}, First: true,
			Prev:     &engine.PrevCall{Line: 23, Fn: "MLP_0", Node: 0, Invocations: true, SameInvocation: true},
			Backward: true, Forward: "MLP_0", ForwardNode: 0}},
		{"backward of a warmup, no invocations", s24, 9, engine.Origin{Compile: 1, Size: 1, Shapes: [][]int{{4, 4}}, First: true,
			Prev:     &engine.PrevCall{Line: 7, Fn: "fwd", Node: -3},
			Backward: true, Forward: "fwd", ForwardNode: -3}},
		{"a recompile with dynamic shapes", dyn, 18, engine.Origin{Compile: 2, Dynamic: true, Size: 1, Shapes: [][]int{{3, 3}}, First: true, ForwardNode: -1}},
		{"a new size of the dynamic graph", dyn, 27, engine.Origin{Compile: 2, Dynamic: true, Size: 2, Shapes: [][]int{{2, 2}}, First: true, ForwardNode: -1}},
		{"recording path in another invocation", pending, 9, engine.Origin{Compile: 1, Size: 1, Shapes: [][]int{{4, 4}}, ForwardNode: -1,
			Prev: &engine.PrevCall{Line: 8, Fn: "fwd", Node: 0, Invocations: true}}},
	}
	runs := map[*traces.Trace]map[int]*engine.Origin{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if runs[tc.tr] == nil {
				runs[tc.tr] = originsOf(t, tc.tr)
			}
			got := runs[tc.tr][tc.line]
			if got == nil || !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("line %d: Origin\n%s\nwant\n%s", tc.line, originText(got), originText(&tc.want))
			}
		})
	}
}

func originText(o *engine.Origin) string {
	if o == nil {
		return "nil"
	}
	s := fmt.Sprintf("%+v", *o)
	if o.Prev != nil {
		s += fmt.Sprintf(" prev %+v", *o.Prev)
	}
	return s
}

// TestOriginLog checks the --log lines that phrase an Origin: what the
// cause leaves out, said only where the facts say it (a call of another
// invocation that found the path recording keeps the bare cause).
func TestOriginLog(t *testing.T) {
	pending, err := traces.Read(strings.NewReader(pendingTrace), "pending.cgt.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		file string
		tr   *traces.Trace
		line int
		want string
	}{
		{"../examples/recorded/graph_break.cgt.jsonl", nil, 14, "Running warmup of function 1 (a graph after a graph break in Gate_0, in the same invocation as line 7)"},
		{"../examples/recorded/graph_break.cgt.jsonl", nil, 19, "Recording function 0 of graph recording id 0 (new root: the first recording of Gate_0, for input shape [8,32])"},
		{"../examples/recorded/graph_break.cgt.jsonl", nil, 24, "(child of graph 0: path is recording; a graph after a graph break in Gate_0, in the same invocation as line 19)"},
		{"../examples/recorded/train_mlp.cgt.jsonl", nil, 16, "Running warmup of function 1 (the backward of MLP_0)"},
		{"../examples/recorded/train_mlp.cgt.jsonl", nil, 28, "(child of graph 0: path is recording; the backward of MLP_0 (#0))"},
		{"../examples/s12-shapes-are-functions.cgt.jsonl", nil, 15, "(new root: a new compiled graph of f (compile 2) for input shapes [40,40], [40,40], dynamic shapes)"},
		{"../examples/s36-rank-change-dynamic.cgt.jsonl", nil, 24, "Running warmup of function 2 (input shape [2,2], a new size of the dynamic compiled graph 2 of f)"},
		{"../examples/s36-rank-change-dynamic.cgt.jsonl", nil, 27, "(new root: input shape [2,2], a new size of the dynamic compiled graph 2 of f)"},
		{"pending", pending, 9, "Recording function 0 of graph recording id 1 (child of graph 0: path is recording)\n"},
	}
	logs := map[string]string{}
	for _, tc := range tests {
		if _, ok := logs[tc.file]; !ok {
			tr := tc.tr
			if tr == nil {
				if tr, err = traces.ReadFile(tc.file); err != nil {
					t.Fatal(err)
				}
			}
			var b strings.Builder
			if _, err := engine.RunTrace(context.Background(), tr, engine.Options{Devices: simDevices(1)}, func(s *engine.Step) bool {
				for _, ev := range s.Events {
					if l := engine.LogLine("t", ev); l != "" {
						b.WriteString(l + "\n")
					}
				}
				return true
			}); err != nil {
				t.Fatal(err)
			}
			logs[tc.file] = b.String()
		}
		prefix := fmt.Sprintf("t:%d: [__cudagraphs] ", tc.line)
		found := false
		for _, l := range strings.SplitAfter(logs[tc.file], "\n") {
			found = found || strings.HasPrefix(l, prefix) && strings.Contains(l, tc.want)
		}
		if !found {
			t.Errorf("%s: no line %d with %q in\n%s", tc.file, tc.line, tc.want, logs[tc.file])
		}
	}
}
