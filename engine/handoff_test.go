package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/traces"
)

// handoffTrace chains foo into fee without mark_step, then, after a step,
// chains a warmed-up function into itself (lines below).
const handoffTrace = `{"cgtviz": 1}
{"op": "def", "fn": "foo", "params": ["x"], "body": [{"out": "a", "k": "add", "a": "x", "b": 1}, {"out": "b", "k": "add", "a": "x", "b": 2}], "returns": ["a", "b"]}
{"op": "def", "fn": "fee", "params": ["y"], "body": [{"out": "c", "k": "mul", "a": "y", "b": 4}], "returns": ["c"]}
{"op": "tensor", "name": "inp", "shape": [4], "init": "values", "values": [1, 2, 3, 4]}
{"op": "call", "fn": "foo", "args": ["inp"], "out": ["a", "b"]}
{"op": "call", "fn": "fee", "args": ["b"], "out": ["c"]}
{"op": "read", "name": "a"}
{"op": "read", "name": "b"}
{"op": "call", "fn": "foo", "args": ["inp"], "out": ["a", "b"]}
{"op": "call", "fn": "fee", "args": ["b"], "out": ["c"]}
`

// runText runs a trace given as text with opts (one simulated device and
// the invariant checker added) and returns its steps by line and the engine.
func runText(t *testing.T, src string, opts engine.Options) (map[int]*engine.Step, *engine.Engine) {
	t.Helper()
	tr, err := traces.Read(strings.NewReader(src), "test.cgt.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	opts.Devices, opts.Check = simDevices(1), true
	steps := map[int]*engine.Step{}
	e, err := engine.RunTrace(context.Background(), tr, opts, func(s *engine.Step) bool {
		steps[s.Line] = s
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	return steps, e
}

// runHandoff is runText under a handoff rule.
func runHandoff(t *testing.T, src string, h engine.Handoff) (map[int]*engine.Step, *engine.Engine) {
	t.Helper()
	return runText(t, src, engine.Options{Handoff: h})
}

func hasEvent(s *engine.Step, k engine.EventKind, msg string) bool {
	for _, ev := range s.Events {
		if ev.Kind == k && strings.Contains(ev.Msg, msg) {
			return true
		}
	}
	return false
}

// TestHandoffRaise checks PyTorch 2.11's chained call (S7) under
// HandoffRaise, as the oracle saw it for examples/s07-chain-handoff: fee
// raises on the output foo handed it, the dealloc and fee's warmup node
// stay (2.11 is not exception safe), and every later new generation fails
// with an AssertionError while that node is on the path.
func TestHandoffRaise(t *testing.T) {
	steps, e := runHandoff(t, handoffTrace, engine.HandoffRaise)
	want := []struct {
		line int
		err  string
	}{
		{5, ""},
		{6, "overwritten by a subsequent run"},
		{7, "overwritten by a subsequent run"}, // a: freed with the path
		{8, "overwritten by a subsequent run"}, // b: freed, not preserved
		{9, "AssertionError"},
		{10, "overwritten by a subsequent run"}, // b is still the freed one
	}
	for _, w := range want {
		s := steps[w.line]
		if s == nil {
			t.Fatalf("line %d: no step", w.line)
		}
		if (w.err == "") != (s.Err == nil) || !strings.Contains(s.ErrText(), w.err) {
			t.Errorf("line %d: error %q, want %q", w.line, s.Err, w.err)
		}
	}
	// The failing call keeps what 2.11 did before it raised, and says so.
	s6 := steps[6]
	if !hasEvent(s6, engine.EvDealloc, "freed 2 output(s)") || !hasEvent(s6, engine.EvWarmup, "raised") || hasEvent(s6, engine.EvPreserve, "") {
		t.Errorf("line 6 events: %+v", s6.Events)
	}
	if !strings.Contains(steps[9].ErrText(), "holds warmup -2, whose run raised at line 6") {
		t.Errorf("line 9: %q", steps[9].Err)
	}
	d := e.State().Devices[0]
	if d.PathState != engine.PathWarmup || len(d.Warmups) != 1 || !d.Warmups[0].Failed || d.Warmups[0].Fn != "fee" || d.CurrentWarmup != d.Warmups[0].ID || len(d.Warmups[0].Outputs) != 0 {
		t.Errorf("final path: %s, warmups %+v, current %d; want fee's failed warmup, current, no outputs", d.PathState, d.Warmups, d.CurrentWarmup)
	}
	c, err := e.Clone()
	if err != nil {
		t.Fatal(err)
	}
	if w := c.State().Devices[0].Warmups; len(w) != 1 || !w[0].Failed {
		t.Errorf("the clone lost the failed warmup: %+v", w)
	}

	// The default rule preserves b: no error at all.
	steps, _ = runHandoff(t, handoffTrace, engine.HandoffPreserve)
	for _, l := range []int{6, 8, 9, 10} {
		if steps[l].Err != nil {
			t.Errorf("preserve, line %d: %s", l, steps[l].Err)
		}
	}
	if !hasEvent(steps[6], engine.EvPreserve, "moved out of the graph pool") || steps[7].Err == nil {
		t.Errorf("preserve: line 6 events %+v, line 7 error %q", steps[6].Events, steps[7].Err)
	}
}

// TestHandoffRaiseRecording is the other 2.11 case (random3/w24699): the
// function was warmed up, so after the generation ends it goes to record,
// and the recording raises before its node joins the tree: the path stays
// empty and later generations run normally.
func TestHandoffRaiseRecording(t *testing.T) {
	src := `{"cgtviz": 1}
{"op": "def", "fn": "f", "params": ["x"], "body": [{"out": "y", "k": "add", "a": "x", "b": 1}], "returns": ["y"]}
{"op": "step"}
{"op": "tensor", "name": "x", "shape": [4], "init": "values", "values": [1, 2, 3, 4]}
{"op": "call", "fn": "f", "args": ["x"], "out": ["y"]}
{"op": "step"}
{"op": "call", "fn": "f", "args": ["y"], "out": ["z"]}
{"op": "call", "fn": "f", "args": ["x"], "out": ["w"]}
{"op": "step"}
{"op": "call", "fn": "f", "args": ["x"], "out": ["w"]}
{"op": "step"}
{"op": "call", "fn": "f", "args": ["x"], "out": ["w"]}
`
	steps, e := runHandoff(t, src, engine.HandoffRaise)
	if s := steps[5]; s.Err != nil || s.Action != engine.ActionWarmup {
		t.Fatalf("line 5: %s %q", s.Action, s.Err)
	}
	if s := steps[7]; !strings.Contains(s.ErrText(), "overwritten") || !hasEvent(s, engine.EvDealloc, "") {
		t.Fatalf("line 7: error %q, events %+v", s.Err, s.Events)
	}
	for line, act := range map[int]engine.Action{8: engine.ActionRecord, 10: engine.ActionReplay, 12: engine.ActionReplay} {
		if s := steps[line]; s.Err != nil || s.Action != act {
			t.Errorf("line %d: %s %q, want %s", line, s.Action, s.Err, act)
		}
	}
	if d := e.State().Devices[0]; len(d.Nodes) != 1 || len(d.Roots) != 1 {
		t.Errorf("nodes %d, roots %d; want the one recording of line 8", len(d.Nodes), len(d.Roots))
	}
}

func TestParseHandoff(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want engine.Handoff
		err  bool
	}{
		{"", engine.HandoffPreserve, false},
		{"preserve", engine.HandoffPreserve, false},
		{"raise", engine.HandoffRaise, false},
		{"2.11", 0, true},
	} {
		got, err := engine.ParseHandoff(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseHandoff(%q) = %v, %v", tc.in, got, err)
		}
		if err == nil && tc.in != "" && got.String() != tc.in {
			t.Errorf("%v.String() = %q", got, got.String())
		}
	}
}

// TestErrorInsideTheTreeByRule runs the failing warmup of
// testdata/warmup-out-of-memory under both rules: the call is the warmup
// it was, with its error, under either; PyTorch 2.11's rule keeps its failed
// node current (the next new generation then fails with the AssertionError),
// and the default rule rolls the record back whole, so the next call warms up
// again and fails the same way.
func TestErrorInsideTheTreeByRule(t *testing.T) {
	tr, err := traces.ReadFile("testdata/warmup-out-of-memory.cgt.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		h        engine.Handoff
		next     engine.Action
		nextErr  string
		warmups  int
		pathWarm bool
	}{
		{engine.HandoffRaise, engine.ActionEager, "AssertionError", 1, true},
		{engine.HandoffPreserve, engine.ActionWarmup, "out of memory", 0, false},
	} {
		steps := map[int]*engine.Step{}
		e, err := engine.RunTrace(context.Background(), tr, engine.Options{Devices: simDevices(1), Check: true, Handoff: tc.h}, func(s *engine.Step) bool {
			steps[s.Line] = s
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		if s := steps[6]; s.Action != engine.ActionWarmup || s.Err == nil || s.Err.Kind != engine.ErrOutOfMemory {
			t.Errorf("%s: line 6: %s %v, want warmup, out of memory", tc.h, s.Action, s.Err)
		}
		if s := steps[10]; s.Action != tc.next || !strings.Contains(s.ErrText(), tc.nextErr) {
			t.Errorf("%s: line 10: %s %q, want %s, %q", tc.h, s.Action, s.Err, tc.next, tc.nextErr)
		}
		d := e.State().Devices[0]
		if len(d.Warmups) != tc.warmups || (d.PathState == engine.PathWarmup) != tc.pathWarm {
			t.Errorf("%s: final path %s, warmups %+v", tc.h, d.PathState, d.Warmups)
		}
	}
}

// TestMutationCheckReadsNoData: under 2.11's rule a mutating function called
// on an input its call's new generation freed is found to mutate (the skip
// logged, the hint kept) before its eager run raises, as check_for_mutation
// reads no data; the next call at that position runs eagerly without
// logging the skip again.
func TestMutationCheckReadsNoData(t *testing.T) {
	tr, err := traces.ReadFile("testdata/chained-call-of-a-mutating-function.cgt.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	steps := map[int]*engine.Step{}
	if _, err := engine.RunTrace(context.Background(), tr, engine.Options{Devices: simDevices(1), Check: true, Handoff: engine.HandoffRaise}, func(s *engine.Step) bool {
		steps[s.Line] = s
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if s := steps[10]; s.Action != engine.ActionEager || !strings.Contains(s.ErrText(), "overwritten") || !hasEvent(s, engine.EvSkip, "mutated inputs") {
		t.Errorf("line 10: %s %q, events %+v; want eager, overwritten, the skip logged", s.Action, s.Err, s.Events)
	}
	if s := steps[12]; s.Err != nil || s.Action != engine.ActionEager || hasEvent(s, engine.EvSkip, "") {
		t.Errorf("line 12: %s %q, events %+v; want eager without the skip logged again", s.Action, s.Err, s.Events)
	}
}
