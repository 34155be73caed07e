package engine

import (
	"fmt"
	"strings"

	"github.com/cgtviz/cgtviz/traces"
)

// ExpectFailure is one failed check of an expect record.
type ExpectFailure struct {
	// Field is the expect field that failed: "action", "node.fn",
	// "error", "values of x", ...
	Field string
	// WantError is, for a failed "error" check, the text the trace
	// expected the error to contain ("" for none, as "error": null says).
	WantError string
	// Msg is the whole message: "action: want "replay", got "record"".
	Msg string
}

// String returns the message.
func (f ExpectFailure) String() string { return f.Msg }

// checkExpect checks an expect record against the state after the record
// before it, and returns one failure per failed check.
func (e *Engine) checkExpect(x *traces.Expect) []ExpectFailure {
	if x == nil {
		return nil
	}
	var failed []ExpectFailure
	want := ""
	fail := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		field, _, _ := strings.Cut(msg, ":")
		failed = append(failed, ExpectFailure{Field: field, WantError: want, Msg: msg})
	}
	last := e.last
	if last == nil {
		last = &Step{Node: -1, Parent: -1}
	}
	if x.Action != nil && string(last.Action) != *x.Action {
		fail("action: want %q, got %q", *x.Action, actionOrNone(last))
	}
	if x.Node != nil {
		if last.Action != ActionRecord && last.Action != ActionReplay {
			fail("node: the last call ran no graph node (action %q)", actionOrNone(last))
		} else {
			if x.Node.Fn != nil && *x.Node.Fn != last.nodeFn {
				fail("node.fn: want %q, got %q", *x.Node.Fn, last.nodeFn)
			}
			if x.Node.HasParentFn {
				got := "null"
				if last.Parent >= 0 {
					got = fmt.Sprintf("%q", last.parentFn)
				}
				want := "null"
				if x.Node.ParentFn != nil {
					want = fmt.Sprintf("%q", *x.Node.ParentFn)
				}
				if got != want {
					fail("node.parent_fn: want %s, got %s", want, got)
				}
			}
		}
	}
	ds := e.devs[0]
	if x.Device >= 0 && x.Device < len(e.devs) {
		ds = e.devs[x.Device]
	} else if x.Device != 0 {
		fail("device: %d does not exist", x.Device)
		return failed
	}
	m := ds.m
	if x.Nodes != nil && len(m.nodes) != *x.Nodes {
		fail("nodes: want %d, got %d", *x.Nodes, len(m.nodes))
	}
	if x.Roots != nil {
		roots := 0
		for _, r := range m.roots {
			roots += len(r)
		}
		if roots != *x.Roots {
			fail("roots: want %d, got %d", *x.Roots, roots)
		}
	}
	if x.Checkpoints != nil && m.checkpoints != *x.Checkpoints {
		fail("checkpoints: want %d, got %d", *x.Checkpoints, m.checkpoints)
	}
	if x.Recordings != nil && e.counters.Recordings != *x.Recordings {
		fail("recordings: want %d, got %d", *x.Recordings, e.counters.Recordings)
	}
	if x.Replays != nil && e.counters.Replays != *x.Replays {
		fail("replays: want %d, got %d", *x.Replays, e.counters.Replays)
	}
	if x.Warmups != nil && e.counters.Warmups != *x.Warmups {
		fail("warmups: want %d, got %d", *x.Warmups, e.counters.Warmups)
	}
	if x.LiveBlocks != nil {
		if got := len(ds.alloc.Allocated(m.pool)); got != *x.LiveBlocks {
			fail("live_blocks: want %d, got %d", *x.LiveBlocks, got)
		}
	}
	if x.HasError {
		if x.Error != nil {
			want = *x.Error
		}
		switch {
		case x.Error == nil && last.Err != nil:
			fail("error: want none, got %q", last.Err.Error())
		case x.Error != nil && last.Err == nil:
			fail("error: want one containing %q, got none", *x.Error)
		case x.Error != nil && !strings.Contains(strings.ToLower(last.Err.Error()), strings.ToLower(*x.Error)):
			fail("error: want one containing %q, got %q", *x.Error, last.Err.Error())
		}
		want = ""
	}
	if v := x.Values; v != nil {
		tol := v.Tol
		if !v.HasTol {
			tol = traces.DefaultTol
		}
		got, err := e.readValues(v.Name)
		switch {
		case err != nil:
			fail("values of %s: %v", v.Name, err)
		case !valuesClose(got, v.Values, tol):
			fail("values of %s: want %v, got %s", v.Name, v.Values, formatValues(got))
		}
	}
	return failed
}

func actionOrNone(s *Step) string {
	if s.Action == "" {
		return "none"
	}
	return string(s.Action)
}

// ExpectMessages are the messages of the step's failed checks.
func (s *Step) ExpectMessages() []string {
	out := make([]string, len(s.ExpectFailures))
	for i, f := range s.ExpectFailures {
		out[i] = f.Msg
	}
	return out
}
