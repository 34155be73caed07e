package report

import (
	"encoding/json"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/traces"
)

// A run prints one line (or one JSON object) per record, millions of them
// on a long trace: the step's entry is written by appending to a reused
// []byte, with no fmt, no pointer fields and no encoding/json on the way.
// Step.WriteText and Step.MarshalJSON go through the same code, so the
// report written from an engine.Step and from a Step cannot disagree.

// entry is a step's entry as plain values: what Step holds behind its
// pointers.
type entry struct {
	line       int
	op         string
	call       bool // a call: fn, action, node, parent and checkpoint are written
	fn         string
	action     string
	hasAction  bool
	node       int
	hasNode    bool
	parent     int
	hasParent  bool
	checkpoint bool
	err        string
	hasErr     bool
}

// entryOf is the entry Count would make of s.
func entryOf(s *engine.Step) entry {
	e := entry{line: s.Line, op: string(s.Op)}
	if s.Err != nil {
		e.err, e.hasErr = s.Err.Error(), true
	}
	if s.Op == traces.OpCall {
		e.call = true
		e.fn = s.Fn
		e.action, e.hasAction = string(s.Action), s.Action != ""
		e.node, e.hasNode = s.Node, s.Node >= 0
		e.parent, e.hasParent = s.Parent, s.Parent >= 0
		e.checkpoint = s.Checkpoint
	}
	return e
}

// entry is s's entry. A call's fn, node and parent are written as they
// are given; a nil Node or Parent is none.
func (s *Step) entry() entry {
	e := entry{line: s.Line, op: s.Op, call: s.Op == "call"}
	if s.Error != nil {
		e.err, e.hasErr = *s.Error, true
	}
	if s.Fn != nil {
		e.fn = *s.Fn
	}
	if s.Action != nil {
		e.action, e.hasAction = *s.Action, true
	}
	if s.Node != nil {
		e.node, e.hasNode = *s.Node, true
	}
	if s.Parent != nil {
		e.parent, e.hasParent = *s.Parent, true
	}
	if s.Checkpoint != nil {
		e.checkpoint = *s.Checkpoint
	}
	return e
}

// AppendText appends s's line of the human-readable report to b (nothing
// for a record without one): the bytes Count(s).WriteText writes.
func AppendText(b []byte, s *engine.Step) []byte {
	if s.Op != traces.OpCall && s.Err == nil {
		return b // most records: no line
	}
	e := entryOf(s)
	return e.appendText(b)
}

// appendText is the text report's line: "  line %4d  call %-12s %-7s",
// then the node, its parent and the checkpoint, then the error on a line
// of its own.
func (e *entry) appendText(b []byte) []byte {
	switch {
	case e.call:
		b = append(b, "  line "...)
		b = appendIntWidth(b, e.line, 4)
		b = append(b, "  call "...)
		b = appendPadded(b, e.fn, 12)
		b = append(b, ' ')
		act := "-"
		if e.hasAction {
			act = e.action
		}
		b = appendPadded(b, act, 7)
		if e.hasNode {
			b = append(b, " #"...)
			b = strconv.AppendInt(b, int64(e.node), 10)
			if e.hasParent {
				b = append(b, " (child of #"...)
				b = strconv.AppendInt(b, int64(e.parent), 10)
				b = append(b, ')')
			} else {
				b = append(b, " (root)"...)
			}
		}
		if e.checkpoint {
			b = append(b, " checkpoint"...)
		}
		b = append(b, '\n')
	case e.hasErr:
		b = append(b, "  line "...)
		b = appendIntWidth(b, e.line, 4)
		b = append(b, "  "...)
		b = append(b, e.op...)
		b = append(b, '\n')
	default:
		return b
	}
	if e.hasErr {
		b = append(b, "             error: "...)
		b = append(b, e.err...)
		b = append(b, '\n')
	}
	return b
}

// appendIntWidth is fmt's %<width>d: n right-aligned in width columns.
func appendIntWidth(b []byte, n, width int) []byte {
	var d [20]byte
	digits := strconv.AppendInt(d[:0], int64(n), 10)
	for i := len(digits); i < width; i++ {
		b = append(b, ' ')
	}
	return append(b, digits...)
}

// appendPadded is fmt's %-<width>s: s, then spaces up to width runes (fmt
// counts runes, not bytes).
func appendPadded(b []byte, s string, width int) []byte {
	b = append(b, s...)
	for n := utf8.RuneCountInString(s); n < width; n++ {
		b = append(b, ' ')
	}
	return b
}

// appendJSON appends the entry as MarshalJSON writes it: every entry has
// line, op and error; a call also has fn, action, node, parent (null when
// none) and checkpoint.
func (e *entry) appendJSON(b []byte) []byte {
	b = append(b, `{"line":`...)
	b = strconv.AppendInt(b, int64(e.line), 10)
	b = append(b, `,"op":`...)
	b = appendJSONString(b, e.op)
	if e.call {
		b = append(b, `,"fn":`...)
		b = appendJSONString(b, e.fn)
		b = append(b, `,"action":`...)
		if e.hasAction {
			b = appendJSONString(b, e.action)
		} else {
			b = append(b, "null"...)
		}
		b = append(b, `,"node":`...)
		b = appendJSONInt(b, e.node, e.hasNode)
		b = append(b, `,"parent":`...)
		b = appendJSONInt(b, e.parent, e.hasParent)
		b = append(b, `,"checkpoint":`...)
		b = strconv.AppendBool(b, e.checkpoint)
	}
	b = append(b, `,"error":`...)
	if e.hasErr {
		b = appendJSONString(b, e.err)
	} else {
		b = append(b, "null"...)
	}
	return append(b, '}')
}

func appendJSONInt(b []byte, n int, ok bool) []byte {
	if !ok {
		return append(b, "null"...)
	}
	return strconv.AppendInt(b, int64(n), 10)
}

// appendJSONString appends s as encoding/json writes it. Names and actions
// are plain ASCII, written as they are; anything else (a quote, a control
// character, HTML's <, > and &, which encoding/json escapes, non-ASCII)
// goes through encoding/json itself, so the bytes are its bytes.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// StepWriter writes the steps of a streamed JSON report (what
// WriteJSONStream's function does for a Step) straight from engine.Steps,
// counting their expectations as Count does.
type StepWriter struct {
	r      *Report
	w      io.Writer
	buf    []byte
	opened bool
	first  bool
}

// JSONSteps starts a streamed JSON report on w: call Step for each step,
// then Finish the report and call End.
func (r *Report) JSONSteps(w io.Writer) *StepWriter {
	return &StepWriter{r: r, w: w, first: true}
}

// open writes the report's head, once.
func (j *StepWriter) open() error {
	if j.opened {
		return nil
	}
	j.opened = true
	head, err := json.Marshal(struct {
		Version int    `json:"cgtviz_report"`
		Trace   string `json:"trace"`
		Device  string `json:"device"`
	}{j.r.Version, j.r.Trace, j.r.Device})
	if err != nil {
		return err
	}
	j.buf = append(append(j.buf[:0], head[:len(head)-1]...), ",\n  \"steps\": ["...)
	_, err = j.w.Write(j.buf)
	return err
}

// Step counts s's expectations and writes its entry.
func (j *StepWriter) Step(s *engine.Step) error {
	j.r.Tally(s)
	e := entryOf(s)
	return j.write(&e)
}

func (j *StepWriter) write(e *entry) error {
	if err := j.open(); err != nil {
		return err
	}
	sep := ",\n    "
	if j.first {
		sep = "\n    "
		j.first = false
	}
	j.buf = e.appendJSON(append(j.buf[:0], sep...))
	_, err := j.w.Write(j.buf)
	return err
}

// End writes the rest of the report (nodes, counters, pools,
// expectations: call Report.Finish first).
func (j *StepWriter) End() error {
	if err := j.open(); err != nil {
		return err
	}
	r := j.r
	tail, err := json.MarshalIndent(struct {
		Nodes        []Node          `json:"nodes"`
		Counters     engine.Counters `json:"counters"`
		Pool         Pool            `json:"pool"`
		GraphPool    Pool            `json:"graph_pool"`
		Expectations Expectations    `json:"expectations"`
	}{r.Nodes, r.Counters, r.Pool, r.GraphPool, r.Expectations}, "", "  ")
	if err != nil {
		return err
	}
	// tail is {\n  "nodes": ...\n}: its fields follow the steps.
	j.buf = append(append(append(j.buf[:0], "\n  ],\n"...), tail[2:]...), '\n')
	_, err = j.w.Write(j.buf)
	return err
}
