package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/cgtviz/cgtviz/engine/alloc"
	"github.com/cgtviz/cgtviz/traces"
)

// Report is the `cgtviz run --json` report (spec: trace-v1.md, "Reports").
// Field names are a contract: tools and tests compare reports field by field.
type Report struct {
	Version      int              `json:"cgtviz_report"`
	Trace        string           `json:"trace"`
	Device       string           `json:"device"`
	Steps        []ReportStep     `json:"steps"`
	Nodes        []ReportNode     `json:"nodes"`
	Counters     Counters         `json:"counters"`
	Pool         ReportPool       `json:"pool"`
	GraphPool    ReportPool       `json:"graph_pool"`
	Expectations ReportExpections `json:"expectations"`
}

// ReportStep is one record's entry. Call-only fields are pointers so that
// other records omit them.
type ReportStep struct {
	Line       int     `json:"line"`
	Op         string  `json:"op"`
	Fn         *string `json:"fn,omitempty"`
	Action     *string `json:"action,omitempty"`
	Node       *int    `json:"node,omitempty"`
	Parent     *int    `json:"parent,omitempty"`
	Checkpoint *bool   `json:"checkpoint,omitempty"`
	Error      *string `json:"error"`
	isCall     bool
}

// ReportNode is one recorded graph node.
type ReportNode struct {
	ID             int    `json:"id"`
	Fn             string `json:"fn"`
	Device         int    `json:"device"`
	Parent         *int   `json:"parent"`
	Children       []int  `json:"children"`
	RecordedAtLine int    `json:"recorded_at_line"`
}

// ReportPool summarises a pool.
type ReportPool struct {
	Segments          int   `json:"segments"`
	ReservedBytes     int64 `json:"reserved_bytes"`
	AllocatedBytes    int64 `json:"allocated_bytes"`
	PeakReservedBytes int64 `json:"peak_reserved_bytes"`
}

// ReportExpections counts expect checks.
type ReportExpections struct {
	Passed int                 `json:"passed"`
	Failed []ReportExpectation `json:"failed"`
}

// ReportExpectation is one failed expect record.
type ReportExpectation struct {
	Line    int    `json:"line"`
	Message string `json:"message"`
}

// NewReport starts a report.
func NewReport(name, device string) *Report {
	return &Report{Version: 1, Trace: name, Device: device, Steps: []ReportStep{}, Nodes: []ReportNode{}, Expectations: ReportExpections{Failed: []ReportExpectation{}}}
}

// Add appends a step's entry and counts its expectations.
func (r *Report) Add(s *Step) {
	r.Steps = append(r.Steps, r.Count(s))
}

// Count counts a step's expectations and returns its entry without keeping
// it: a caller that streams the steps (cgtviz run on a long trace) keeps
// memory flat.
func (r *Report) Count(s *Step) ReportStep {
	rs := ReportStep{Line: s.Line, Op: string(s.Op)}
	if s.Err != "" {
		msg := s.Err
		rs.Error = &msg
	}
	if s.Op == traces.OpCall {
		fn := s.Fn
		rs.Fn = &fn
		if s.Action != "" {
			a := string(s.Action)
			rs.Action = &a
		}
		if s.Node >= 0 {
			n := s.Node
			rs.Node = &n
		}
		if s.Parent >= 0 {
			p := s.Parent
			rs.Parent = &p
		}
		cp := s.Checkpoint
		rs.Checkpoint = &cp
		rs.isCall = true
	}
	if s.Op == traces.OpExpect {
		if len(s.ExpectFailures) == 0 {
			r.Expectations.Passed++
		}
		for _, f := range s.ExpectFailures {
			r.Expectations.Failed = append(r.Expectations.Failed, ReportExpectation{Line: s.Line, Message: f})
		}
	}
	return rs
}

// WriteJSONStream writes the report as JSON with the steps given one by one
// through the returned function (call it with nil to finish, after Finish):
// the same document as encoding/json gives for Report, without holding the
// steps.
func (r *Report) WriteJSONStream(w io.Writer) func(*ReportStep) error {
	first := true
	started := false
	return func(st *ReportStep) error {
		if !started {
			started = true
			head, err := json.Marshal(struct {
				Version int    `json:"cgtviz_report"`
				Trace   string `json:"trace"`
				Device  string `json:"device"`
			}{r.Version, r.Trace, r.Device})
			if err != nil {
				return err
			}
			if _, err := fmt.Fprintf(w, "%s,\n  \"steps\": [", head[:len(head)-1]); err != nil {
				return err
			}
		}
		if st != nil {
			b, err := json.Marshal(st)
			if err != nil {
				return err
			}
			sep := ",\n    "
			if first {
				sep = "\n    "
				first = false
			}
			_, err = fmt.Fprintf(w, "%s%s", sep, b)
			return err
		}
		tail, err := json.MarshalIndent(struct {
			Nodes        []ReportNode     `json:"nodes"`
			Counters     Counters         `json:"counters"`
			Pool         ReportPool       `json:"pool"`
			GraphPool    ReportPool       `json:"graph_pool"`
			Expectations ReportExpections `json:"expectations"`
		}{r.Nodes, r.Counters, r.Pool, r.GraphPool, r.Expectations}, "", "  ")
		if err != nil {
			return err
		}
		// tail is {\n  "nodes": ...\n}: its fields follow the steps.
		_, err = fmt.Fprintf(w, "\n  ],\n%s\n", tail[2:])
		return err
	}
}

// Finish fills the nodes, counters and pools from the engine at the end.
func (r *Report) Finish(e *Engine) {
	r.Counters = e.Counters()
	for _, ds := range e.devs {
		m := ds.m
		for _, n := range m.nodes {
			rn := ReportNode{ID: n.ID, Fn: m.funcs[n.Fn].Name, Device: ds.index, RecordedAtLine: n.Line, Children: []int{}}
			if n.Parent >= 0 {
				p := n.Parent
				rn.Parent = &p
			}
			for _, fid := range n.childOrder {
				rn.Children = append(rn.Children, n.Children[fid]...)
			}
			r.Nodes = append(r.Nodes, rn)
		}
	}
	if len(e.devs) > 0 {
		ds := e.devs[0]
		r.Pool = poolSummary(ds.alloc, nil)
		id := ds.m.pool
		r.GraphPool = poolSummary(ds.alloc, &id)
	}
}

func poolSummary(a *alloc.Allocator, id *alloc.PoolID) ReportPool {
	var st alloc.Stats
	var segs int
	if id == nil {
		st = a.Stats()
		segs = len(a.Segments())
	} else {
		st = a.PoolStats(*id)
		segs = len(a.PoolSegments(*id))
	}
	return ReportPool{Segments: segs, ReservedBytes: st.ReservedBytes[alloc.Aggregate].Current,
		AllocatedBytes: st.AllocatedBytes[alloc.Aggregate].Current, PeakReservedBytes: st.ReservedBytes[alloc.Aggregate].Peak}
}

// RunTrace applies every record of tr on a fresh engine, calling each after
// every record (each may return false to stop). It stops early on ctx's
// cancellation.
func RunTrace(ctx context.Context, tr *traces.Trace, opts Options, each func(*Step) bool) (*Engine, error) {
	if opts.File == "" {
		opts.File = tr.File
	}
	e, err := New(tr.Header, opts)
	if err != nil {
		return nil, err
	}
	for i := range tr.Records {
		if i&1023 == 0 && ctx.Err() != nil {
			return e, ctx.Err()
		}
		s := e.Apply(&tr.Records[i])
		if each != nil && !each(s) {
			break
		}
	}
	return e, nil
}

// WriteText prints a human-readable report: one line per call and error,
// the tree, counters and expectations.
func (r *Report) WriteText(w io.Writer, tree string) error {
	if _, err := fmt.Fprintf(w, "trace: %s (device %s)\n", r.Trace, r.Device); err != nil {
		return err
	}
	for i := range r.Steps {
		if err := r.Steps[i].WriteText(w); err != nil {
			return err
		}
	}
	return r.WriteSummary(w, tree)
}

// WriteText prints a step's line of the human-readable report: calls with
// their action and node, and any record's error; nothing for the others.
func (s *ReportStep) WriteText(w io.Writer) error {
	var b strings.Builder
	switch {
	case s.isCall || s.Op == "call":
		act := "-"
		if s.Action != nil {
			act = *s.Action
		}
		fmt.Fprintf(&b, "  line %4d  call %-12s %-7s", s.Line, deref(s.Fn), act)
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
		return nil
	}
	if s.Error != nil {
		fmt.Fprintf(&b, "             error: %s\n", *s.Error)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteSummary prints the end of the human-readable report: the tree,
// counters, the graph pool and the expectations.
func (r *Report) WriteSummary(w io.Writer, tree string) error {
	var b strings.Builder
	if tree != "" {
		b.WriteString("tree:\n")
		for _, l := range strings.Split(strings.TrimRight(tree, "\n"), "\n") {
			b.WriteString("  " + l + "\n")
		}
	}
	c := r.Counters
	fmt.Fprintf(&b, "counters: %d warmups, %d recordings, %d replays, %d eager, %d checkpoints, %d re-records, %d errors\n",
		c.Warmups, c.Recordings, c.Replays, c.Eager, c.Checkpoints, c.Rerecords, c.Errors)
	fmt.Fprintf(&b, "graph pool: %d segments, %s reserved, %s allocated (peak %s)\n", r.GraphPool.Segments,
		alloc.FormatSize(r.GraphPool.ReservedBytes), alloc.FormatSize(r.GraphPool.AllocatedBytes), alloc.FormatSize(r.GraphPool.PeakReservedBytes))
	fmt.Fprintf(&b, "expectations: %d passed, %d failed\n", r.Expectations.Passed, len(r.Expectations.Failed))
	for _, f := range r.Expectations.Failed {
		fmt.Fprintf(&b, "  line %d: %s\n", f.Line, f.Message)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// MarshalJSON writes a step with the spec's fields: every entry has line,
// op and error; a call also has fn, action, node, parent (null when none)
// and checkpoint.
func (s ReportStep) MarshalJSON() ([]byte, error) {
	if !s.isCall && s.Op != "call" {
		return json.Marshal(struct {
			Line  int     `json:"line"`
			Op    string  `json:"op"`
			Error *string `json:"error"`
		}{s.Line, s.Op, s.Error})
	}
	cp := false
	if s.Checkpoint != nil {
		cp = *s.Checkpoint
	}
	return json.Marshal(struct {
		Line       int     `json:"line"`
		Op         string  `json:"op"`
		Fn         string  `json:"fn"`
		Action     *string `json:"action"`
		Node       *int    `json:"node"`
		Parent     *int    `json:"parent"`
		Checkpoint bool    `json:"checkpoint"`
		Error      *string `json:"error"`
	}{s.Line, s.Op, deref(s.Fn), s.Action, s.Node, s.Parent, cp, s.Error})
}

// UnmarshalJSON reads a step written by MarshalJSON.
func (s *ReportStep) UnmarshalJSON(b []byte) error {
	var v struct {
		Line       int     `json:"line"`
		Op         string  `json:"op"`
		Fn         *string `json:"fn"`
		Action     *string `json:"action"`
		Node       *int    `json:"node"`
		Parent     *int    `json:"parent"`
		Checkpoint *bool   `json:"checkpoint"`
		Error      *string `json:"error"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*s = ReportStep{Line: v.Line, Op: v.Op, Fn: v.Fn, Action: v.Action, Node: v.Node, Parent: v.Parent, Checkpoint: v.Checkpoint, Error: v.Error, isCall: v.Op == "call"}
	return nil
}

// RunReader is RunTrace over a streaming reader: records are read and
// applied one at a time, so a trace of any length runs in memory bounded by
// the engine's state (check the file first: the reader stops at the first
// malformed record, with its error).
func RunReader(ctx context.Context, r *traces.Reader, opts Options, each func(*Step) bool) (*Engine, error) {
	e, err := New(r.Header(), opts)
	if err != nil {
		return nil, err
	}
	for i := 0; ; i++ {
		if i&1023 == 0 && ctx.Err() != nil {
			return e, ctx.Err()
		}
		rec, err := r.Next()
		if err == io.EOF {
			return e, nil
		}
		if err != nil {
			return e, err
		}
		s := e.Apply(&rec)
		if each != nil && !each(s) {
			return e, nil
		}
	}
}
