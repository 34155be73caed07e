package report_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/engine/device/sim"
	"github.com/cgtviz/cgtviz/engine/report"
	"github.com/cgtviz/cgtviz/traces"
	"github.com/cgtviz/cgtviz/traces/gen"
)

// The reference writers: the text line and the JSON entry as fmt and
// encoding/json write them, which report.AppendText, Step.WriteText,
// Step.MarshalJSON and the StepWriter must match byte for byte.

func refText(s report.Step) string {
	var b strings.Builder
	switch {
	case s.Op == "call":
		act := "-"
		if s.Action != nil {
			act = *s.Action
		}
		fn := ""
		if s.Fn != nil {
			fn = *s.Fn
		}
		fmt.Fprintf(&b, "  line %4d  call %-12s %-7s", s.Line, fn, act)
		if s.Node != nil {
			fmt.Fprintf(&b, " #%d", *s.Node)
			if s.Parent != nil {
				fmt.Fprintf(&b, " (child of #%d)", *s.Parent)
			} else {
				b.WriteString(" (root)")
			}
		}
		if s.Checkpoint != nil && *s.Checkpoint {
			b.WriteString(" checkpoint")
		}
		b.WriteByte('\n')
	case s.Error != nil:
		fmt.Fprintf(&b, "  line %4d  %s\n", s.Line, s.Op)
	default:
		return ""
	}
	if s.Error != nil {
		fmt.Fprintf(&b, "             error: %s\n", *s.Error)
	}
	return b.String()
}

func refJSON(t *testing.T, s report.Step) string {
	var v any
	if s.Op != "call" {
		v = struct {
			Line  int     `json:"line"`
			Op    string  `json:"op"`
			Error *string `json:"error"`
		}{s.Line, s.Op, s.Error}
	} else {
		cp := s.Checkpoint != nil && *s.Checkpoint
		fn := ""
		if s.Fn != nil {
			fn = *s.Fn
		}
		v = struct {
			Line       int     `json:"line"`
			Op         string  `json:"op"`
			Fn         string  `json:"fn"`
			Action     *string `json:"action"`
			Node       *int    `json:"node"`
			Parent     *int    `json:"parent"`
			Checkpoint bool    `json:"checkpoint"`
			Error      *string `json:"error"`
		}{s.Line, s.Op, fn, s.Action, s.Node, s.Parent, cp, s.Error}
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func ptr[T any](v T) *T { return &v }

// TestStepWritersTable checks the writers on entries made by hand: odd
// names (wide, non-ASCII, HTML, quotes, control characters, invalid
// UTF-8), numbers of every width, negative ones, and every field absent.
func TestStepWritersTable(t *testing.T) {
	for _, s := range []report.Step{
		{Line: 7, Op: "call", Fn: ptr("foo"), Action: ptr("replay"), Node: ptr(3), Parent: ptr(1), Checkpoint: ptr(false)},
		{Line: 123456, Op: "call", Fn: ptr("a_very_long_function_name"), Action: ptr("record"), Node: ptr(0), Checkpoint: ptr(true)},
		{Line: -3, Op: "call", Fn: ptr("fé€"), Node: ptr(-2), Parent: ptr(-7)},
		{Line: 1, Op: "call"},
		{Line: 12, Op: "call", Fn: ptr(`<a&b>"\`), Action: ptr("eager"), Error: ptr("boom: \"x\" <y> & \u2028 \x01 \xff end")},
		{Line: 9, Op: "del", Error: ptr("name \"a\" is not bound")},
		{Line: 10, Op: "step"},
		{Line: 11, Op: "tensor", Fn: ptr("ignored")},
	} {
		var buf bytes.Buffer
		if err := s.WriteText(&buf); err != nil {
			t.Fatal(err)
		}
		if got, want := buf.String(), refText(s); got != want {
			t.Errorf("WriteText(%+v):\n got %q\nwant %q", s, got, want)
		}
		got, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if want := refJSON(t, s); string(got) != want {
			t.Errorf("json.Marshal(%+v):\n got %s\nwant %s", s, got, want)
		}
	}
}

// TestStepWritersMatchReference runs every example and random traces and
// checks, step by step, that AppendText writes what the reference writes
// for Count's entry, and that the StepWriter's document is the one
// WriteJSONStream writes from Count's entries.
func TestStepWritersMatchReference(t *testing.T) {
	files, err := filepath.Glob("../../examples/*.cgt.jsonl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example traces: %v", err)
	}
	var trs []*traces.Trace
	for _, f := range files {
		tr, err := traces.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		trs = append(trs, tr)
	}
	for seed := int64(1); seed <= 10; seed++ {
		trs = append(trs, gen.Trace(seed, gen.Options{Records: 300, Additions: true}))
	}
	for _, tr := range trs {
		counted := report.New(tr.Header.Name, "sim")
		tallied := report.New(tr.Header.Name, "sim")
		var ref, got bytes.Buffer
		refWrite := counted.WriteJSONStream(&ref)
		sw := tallied.JSONSteps(&got)
		var line []byte
		e, err := engine.RunTrace(context.Background(), tr, engine.Options{Devices: sim.Devices(tr.Header.Devices)}, func(s *engine.Step) bool {
			rs := counted.Count(s)
			line = report.AppendText(line[:0], s)
			if want := refText(rs); string(line) != want {
				t.Errorf("%s line %d: AppendText\n got %q\nwant %q", tr.Header.Name, s.Line, line, want)
			}
			if b, err := json.Marshal(rs); err != nil || string(b) != refJSON(t, rs) {
				t.Errorf("%s line %d: MarshalJSON\n got %s (%v)\nwant %s", tr.Header.Name, s.Line, b, err, refJSON(t, rs))
			}
			if err := refWrite(&rs); err != nil {
				t.Fatal(err)
			}
			if err := sw.Step(s); err != nil {
				t.Fatal(err)
			}
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		counted.Finish(e.State())
		tallied.Finish(e.State())
		if err := refWrite(nil); err != nil {
			t.Fatal(err)
		}
		if err := sw.End(); err != nil {
			t.Fatal(err)
		}
		if ref.String() != got.String() {
			t.Errorf("%s: the StepWriter's report differs from WriteJSONStream's", tr.Header.Name)
		}
		if counted.Expectations.Passed != tallied.Expectations.Passed || len(counted.Expectations.Failed) != len(tallied.Expectations.Failed) {
			t.Errorf("%s: Tally counted %+v, Count %+v", tr.Header.Name, tallied.Expectations, counted.Expectations)
		}
	}
}
