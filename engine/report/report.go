package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/engine/alloc"
	"github.com/cgtviz/cgtviz/traces"
)

// Report is the `cgtviz run --json` report (spec: trace-v1.md, "Reports").
// Field names are a contract: tools and tests compare reports field by field.
type Report struct {
	Version      int             `json:"cgtviz_report"`
	Trace        string          `json:"trace"`
	Device       string          `json:"device"`
	Steps        []Step          `json:"steps"`
	Nodes        []Node          `json:"nodes"`
	Counters     engine.Counters `json:"counters"`
	Pool         Pool            `json:"pool"`
	GraphPool    Pool            `json:"graph_pool"`
	Expectations Expectations    `json:"expectations"`

	// calls counts the call records; notes keeps the first maxNotes note
	// records, moreNotes counts the rest (NoCallNotes).
	calls     int
	notes     []Reason
	moreNotes int
}

// maxNotes bounds the notes a Report keeps (NoCallNotes).
const maxNotes = 8

// Step is one record's entry. Call-only fields are pointers so that
// other records omit them.
type Step struct {
	Line       int     `json:"line"`
	Op         string  `json:"op"`
	Fn         *string `json:"fn,omitempty"`
	Action     *string `json:"action,omitempty"`
	Node       *int    `json:"node,omitempty"`
	Parent     *int    `json:"parent,omitempty"`
	Checkpoint *bool   `json:"checkpoint,omitempty"`
	Error      *string `json:"error"`
}

// Node is one recorded graph node.
type Node struct {
	ID             int    `json:"id"`
	Fn             string `json:"fn"`
	Device         int    `json:"device"`
	Parent         *int   `json:"parent"`
	Children       []int  `json:"children"`
	RecordedAtLine int    `json:"recorded_at_line"`
}

// Pool summarises a pool.
type Pool struct {
	Segments          int   `json:"segments"`
	ReservedBytes     int64 `json:"reserved_bytes"`
	AllocatedBytes    int64 `json:"allocated_bytes"`
	PeakReservedBytes int64 `json:"peak_reserved_bytes"`
}

// Expectations counts expect checks.
type Expectations struct {
	Passed int           `json:"passed"`
	Failed []Expectation `json:"failed"`
}

// Expectation is one failed expect record.
type Expectation struct {
	Line    int    `json:"line"`
	Message string `json:"message"`
}

// New starts a report.
func New(name, device string) *Report {
	return &Report{Version: 1, Trace: name, Device: device, Steps: []Step{}, Nodes: []Node{}, Expectations: Expectations{Failed: []Expectation{}}}
}

// Add appends a step's entry and counts its expectations.
func (r *Report) Add(s *engine.Step) {
	r.Steps = append(r.Steps, r.Count(s))
}

// Count counts a step's expectations and returns its entry without keeping
// it: a caller that streams the steps (cgtviz run on a long trace) keeps
// memory flat.
func (r *Report) Count(s *engine.Step) Step {
	r.Tally(s)
	rs := Step{Line: s.Line, Op: string(s.Op)}
	if s.Err != nil {
		msg := s.Err.Error()
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
	}
	return rs
}

// Tally counts a step's expectations (and its call, or keeps its note):
// what Count does besides making the entry, for a caller that writes the
// step with AppendText or StepWriter and needs no entry.
func (r *Report) Tally(s *engine.Step) {
	switch {
	case s.Op == traces.OpCall:
		r.calls++
	case s.Note != "" && len(r.notes) < maxNotes:
		r.notes = append(r.notes, Reason{Text: s.Note, Line: s.Line})
	case s.Note != "":
		r.moreNotes++
	}
	if s.Op == traces.OpExpect {
		if len(s.ExpectFailures) == 0 {
			r.Expectations.Passed++
		}
		for _, f := range s.ExpectFailures {
			r.Expectations.Failed = append(r.Expectations.Failed, Expectation{Line: s.Line, Message: f.Msg})
		}
	}
}

// NoCallNotes is, for a trace that held no call record, its first notes
// (each with its line) and how many more it held: a recording that could
// record no call (a torch cgtrace cannot wrap, CUDA graphs made outside
// the trees) says why only in its notes. Nil for a trace with calls.
func (r *Report) NoCallNotes() (notes []Reason, more int) {
	if r.calls > 0 {
		return nil, 0
	}
	return r.notes, r.moreNotes
}

// WriteJSONStream writes the report as JSON with the steps given one by one
// through the returned function (call it with nil to finish, after Finish):
// the same document as encoding/json gives for Report, without holding the
// steps. JSONSteps does the same from engine.Steps.
func (r *Report) WriteJSONStream(w io.Writer) func(*Step) error {
	j := r.JSONSteps(w)
	return func(st *Step) error {
		if st == nil {
			return j.End()
		}
		e := st.entry()
		return j.write(&e)
	}
}

// Finish fills the nodes, counters and pools from the engine's state at
// the end of the run.
func (r *Report) Finish(st *engine.State) {
	r.Counters = st.Counters
	for _, d := range st.Devices {
		for _, n := range d.Nodes {
			rn := Node{ID: n.ID, Fn: n.Fn, Device: d.Index, RecordedAtLine: n.RecordedAtLine, Children: append([]int{}, n.Children...)}
			if n.Parent >= 0 {
				p := n.Parent
				rn.Parent = &p
			}
			r.Nodes = append(r.Nodes, rn)
		}
	}
	if len(st.Devices) > 0 {
		t, g := st.Devices[0].Totals, st.Devices[0].Pool
		r.Pool = Pool{Segments: t.Segments, ReservedBytes: t.ReservedBytes, AllocatedBytes: t.AllocatedBytes, PeakReservedBytes: t.PeakReserved}
		r.GraphPool = Pool{Segments: len(g.Segments), ReservedBytes: g.ReservedBytes, AllocatedBytes: g.AllocatedBytes, PeakReservedBytes: g.PeakReserved}
	}
}

// WriteText prints a step's line of the human-readable report: calls with
// their action and node, and any record's error; nothing for the others.
func (s *Step) WriteText(w io.Writer) error {
	e := s.entry()
	b := e.appendText(nil)
	if len(b) == 0 {
		return nil
	}
	_, err := w.Write(b)
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

// MarshalJSON writes a step with the spec's fields: every entry has line,
// op and error; a call also has fn, action, node, parent (null when none)
// and checkpoint.
func (s Step) MarshalJSON() ([]byte, error) {
	e := s.entry()
	return e.appendJSON(nil), nil
}

// UnmarshalJSON reads a step written by MarshalJSON.
func (s *Step) UnmarshalJSON(b []byte) error {
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
	*s = Step{Line: v.Line, Op: v.Op, Fn: v.Fn, Action: v.Action, Node: v.Node, Parent: v.Parent, Checkpoint: v.Checkpoint, Error: v.Error}
	return nil
}
