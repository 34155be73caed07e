package engine_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/cgtviz/cgtviz/engine"
)

// freedTrace frees, at line 17's new generation, a replay output (y, the
// node's cached object) and a warmup output (z, the object the warmup
// returned), then uses each.
const freedTrace = `{"cgtviz": 1}
{"op": "def", "fn": "f", "params": ["x"], "body": [{"out": "y", "k": "mul", "a": "x", "b": 2}], "returns": ["y"]}
{"op": "def", "fn": "g", "params": ["x"], "body": [{"out": "z", "k": "add", "a": "x", "b": 1}], "returns": ["z"]}
{"op": "def", "fn": "h", "params": ["x"], "body": [{"out": "w", "k": "mul", "a": "x", "b": 3}], "returns": ["w"]}
{"op": "def", "fn": "k", "params": ["x"], "body": [{"out": "w", "k": "neg", "a": "x"}], "returns": ["w"]}
{"op": "def", "fn": "m", "params": ["x"], "body": [{"out": "w", "k": "abs", "a": "x"}], "returns": ["w"]}
{"op": "tensor", "name": "x", "shape": [4], "init": "values", "values": [1, 2, 3, 4]}
{"op": "step"}
{"op": "call", "fn": "f", "args": ["x"], "out": ["y"]}
{"op": "step"}
{"op": "call", "fn": "f", "args": ["x"], "out": ["y"]}
{"op": "step"}
{"op": "call", "fn": "f", "args": ["x"], "out": ["y"]}
{"op": "call", "fn": "g", "args": ["x"], "out": ["z"]}
{"op": "step"}
{"op": "tensor", "name": "x2", "shape": [4], "init": "ones"}
{"op": "call", "fn": "h", "args": ["x2"], "out": ["w"]}
{"op": "eager", "out": "v", "k": "view", "a": "y", "shape": [2, 2]}
{"op": "read", "name": "v"}
{"op": "eager", "out": "u", "k": "view", "a": "z", "shape": [2, 2]}
{"op": "call", "fn": "k", "args": ["y"], "out": ["q"]}
{"op": "call", "fn": "m", "args": ["z"], "out": ["r"]}
`

// TestFreedOutputUses checks PyTorch 2.11's two marks of a freed output
// (dealloc_current_path_weakrefs): the objects a warmup or a recording
// returned are marked themselves, so any use raises and Dynamo fails on
// them before compiling; other objects on a freed storage (a replay's
// cached output, a view made later) are marked through the storage, so a
// view still works, a read raises, and a compiled call compiles first and
// raises at run time (random3/w21201's view; under HandoffRaise it keeps
// its compile, as random oracle traces r1144 and r1231 show 2.11 does).
func TestFreedOutputUses(t *testing.T) {
	for _, h := range []engine.Handoff{engine.HandoffPreserve, engine.HandoffRaise} {
		t.Run(h.String(), func(t *testing.T) { freedOutputUses(t, h) })
	}
}

func freedOutputUses(t *testing.T, h engine.Handoff) {
	steps, e := runHandoff(t, freedTrace, h)
	want := map[int]string{
		13: "", // f replays: y is the node's cached object
		14: "", // g warms up after a checkpoint
		17: "", // h: the new generation frees y and z
		18: "", // a view of y: no data touched
		19: "overwritten",
		20: "overwritten", // a view of z, a marked object
		21: "overwritten",
		22: "overwritten",
	}
	for line, w := range want {
		s := steps[line]
		if s == nil {
			t.Fatalf("line %d: no step", line)
		}
		if (w == "") != (s.Err == nil) || !strings.Contains(s.ErrText(), w) {
			t.Errorf("line %d: error %q, want %q", line, s.Err, w)
		}
	}
	if s := steps[13]; s.Action != engine.ActionReplay {
		t.Fatalf("line 13: %s, want a replay", s.Action)
	}
	if !hasEvent(steps[17], engine.EvDealloc, "freed 2 output(s)") {
		t.Errorf("line 17 events: %+v", steps[17].Events)
	}
	// Line 21's compile stays only under HandoffRaise (2.11's failures as
	// they are); by default a failing record rolls back whole. Line 22
	// fails before anything compiles either way.
	var fns []string
	for _, f := range e.State().Functions {
		fns = append(fns, f.Fn)
	}
	if slices.Contains(fns, "k") != (h == engine.HandoffRaise) || slices.Contains(fns, "m") {
		t.Errorf("functions %v: want k only under raise, m never", fns)
	}
}

// gradTrace is pytorch#169545's program: mark_step before each forward and
// backward pair and no optimizer, so the second backward's gradient is
// added to the .grad the first handed out (gw, kept), which the second
// step's new generation freed; the forward's kept output (y) is freed too.
const gradTrace = `{"cgtviz": 1}
{"op": "def", "fn": "fwd", "params": ["x", "w"], "body": [{"out": "y", "k": "mul", "a": "x", "b": "w"}], "returns": ["y", "x"], "mode": "forward", "static": [1]}
{"op": "def", "fn": "bwd", "params": ["g", "x"], "body": [{"out": "gw", "k": "mul", "a": "g", "b": "x"}], "returns": ["gw"], "mode": "backward"}
{"op": "param", "name": "w", "shape": [4], "init": "rand", "seed": 1}
{"op": "step"}
{"op": "tensor", "name": "x", "shape": [4], "init": "rand", "seed": 2}
{"op": "call", "fn": "fwd", "args": ["x", "w"], "out": ["y", "s"]}
{"op": "tensor", "name": "g", "shape": [4], "init": "ones"}
{"op": "call", "fn": "bwd", "args": ["g", "s"], "out": ["gw"]}
{"op": "step"}
{"op": "tensor", "name": "x2", "shape": [4], "init": "rand", "seed": 3}
{"op": "call", "fn": "fwd", "args": ["x2", "w"], "out": ["y2", "s2"]}
{"op": "read", "name": "gw"}
{"op": "read", "name": "y"}
`

// TestFreedGradientNamesAccumulation checks that the overwritten error of
// a freed gradient (a backward's output, which autograd keeps as .grad)
// says where the mark_step belongs, and a forward's output's does not.
func TestFreedGradientNamesAccumulation(t *testing.T) {
	steps, _ := runHandoff(t, gradTrace, engine.HandoffRaise)
	const hint = "call cudagraph_mark_step_begin() once an optimizer step"
	for line, grad := range map[int]bool{13: true, 14: false} {
		s := steps[line]
		if s == nil || s.Err == nil {
			t.Fatalf("line %d: no error", line)
		}
		if got := strings.Contains(s.ErrText(), hint); got != grad || !strings.Contains(s.ErrText(), "freed at line 12") {
			t.Errorf("line %d: %q: the gradient's advice %v, want %v", line, s.ErrText(), got, grad)
		}
	}
}
