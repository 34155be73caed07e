package report

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/traces"
)

// An Analysis is what a report says beyond the run's text and JSON: per
// compiled function what the tree did with it and why, the pool's bytes
// over the trace, the decision log and a verdict per problem found. It is
// gathered from the same Steps (Count, Tally) and State (Finish) as the
// run's report, by a Collector, as the run streams: however long the trace,
// it keeps at most Limits.Rows rows and Limits.Samples samples.

// Default limits of a Collector.
const (
	DefaultSamples = 2000
	DefaultRows    = 5000
	// DefaultFunctions bounds the functions an Analysis details; the rest
	// are summed in Analysis.OtherFunctions.
	DefaultFunctions = 300
)

// Limits bound what a Collector keeps; zero fields take the defaults.
type Limits struct {
	Samples   int // memory samples, at most
	Rows      int // decision log rows: notable rows up to Rows, then plain ones up to Rows in all
	Functions int // functions detailed
}

func (l Limits) withDefaults() Limits {
	if l.Samples < 2 {
		l.Samples = DefaultSamples
	}
	if l.Rows < 1 {
		l.Rows = DefaultRows
	}
	if l.Functions < 1 {
		l.Functions = DefaultFunctions
	}
	return l
}

// MemorySource gives a device's memory figures now: the running engine.
type MemorySource interface {
	Memory(dev int) engine.MemoryView
	NumDevices() int
}

// Meta is what the trace's header says of where it came from: its "meta"
// object's keys "torch", "gpu", "script" and "sources" (compiled function
// name to the user's source line, as a recorder writes it), each empty
// when absent; and whether the recording ended (Collect sets Unended).
type Meta struct {
	Torch, GPU, Script string
	Sources            map[string]string
	// Unended: the header says the recording did not end (the program
	// died after the last record: traces.Header.Unended).
	Unended bool
}

// ParseMeta reads a header's meta object; keys it does not know, and
// values of the wrong type, are left out.
func ParseMeta(raw []byte) Meta {
	var m Meta
	if len(raw) == 0 {
		return m
	}
	var v map[string]json.RawMessage
	if json.Unmarshal(raw, &v) != nil {
		return m
	}
	str := func(k string) string {
		var s string
		if json.Unmarshal(v[k], &s) != nil {
			return ""
		}
		return s
	}
	m.Torch, m.GPU, m.Script = str("torch"), str("gpu"), str("script")
	var src map[string]string
	if json.Unmarshal(v["sources"], &src) == nil && len(src) > 0 {
		m.Sources = src
	}
	return m
}

// Reason is one reason and how often it was given.
type Reason struct {
	Text  string
	Count int
	Line  int // the trace line where it was first given
}

// FunctionID is one of a function's FunctionIDs: one per input shapes
// (PyTorch's FunctionID, State.Functions).
type FunctionID struct {
	ID, Device int
	Shapes     [][]int
}

// NodeRef names a graph node.
type NodeRef struct{ Device, ID int }

// Function is what the tree did with one compiled function (a trace name,
// over its FunctionIDs and devices).
type Function struct {
	Fn        string
	Source    string // the user's source line, when the trace says it
	FirstLine int
	Devices   []int
	Calls     int
	// Warmups, Recordings, Replays and Eager count the calls by action
	// (what the run's report says of each); they sum to Counters'.
	Warmups, Recordings, Replays, Eager int
	// Replaced counts the recordings made because an existing graph could
	// not replay (its invariants failed; the Recorded reason says which);
	// Rerecords those of them PyTorch counts as re-records (an input
	// pointer changed); Checkpoints the checkpoints its calls restored;
	// Errors its calls that raised, Overwritten those with PyTorch's
	// overwritten error.
	Replaced, Rerecords, Checkpoints, Errors, Overwritten int
	// Recorded says why each recording happened; RerecordReasons which
	// invariant failed for a re-record; Skips why a call ran without a
	// graph (eager) or a skip was logged; Warnings PyTorch's warnings.
	Recorded, RerecordReasons, Skips, Warnings []Reason
	// PendingBackward counts the pending-backward warnings.
	PendingBackward int
	IDs             []FunctionID
	Nodes           []NodeRef
}

// Row is one decision of the log: a call, or a record that raised or
// warned. Its Step is the run's report entry of the record.
type Row struct {
	Step
	Index   int // the record's index (0-based, after the header)
	Device  int
	Notable bool   // more than a plain warmup or replay
	Note    string // why: the recording's cause, the skip, the warning, the error
}

// Sample is the memory of every device after one record.
type Sample struct {
	Index, Line int
	Devices     []engine.MemoryView
}

// VerdictKind names a problem a verdict is about.
type VerdictKind string

// The verdicts' kinds, in the order an Analysis lists them.
const (
	VerdictRerecord VerdictKind = "re-recording"
	// VerdictIntSizes: a graph recorded again for each value of an int
	// it takes as a size (FindIntSizes).
	VerdictIntSizes        VerdictKind = "int sizes"
	VerdictSkip            VerdictKind = "skipped graphs"
	VerdictPendingBackward VerdictKind = "pending backwards"
	VerdictOverwritten     VerdictKind = "overwritten errors"
	VerdictErrors          VerdictKind = "errors"
	VerdictMemoryGrowth    VerdictKind = "memory growth"
	VerdictCheckpoint      VerdictKind = "checkpoints"
	VerdictExpectations    VerdictKind = "expectations"
	// VerdictNoCalls: the trace calls no compiled function, so nothing
	// can be judged; a recording says why in its notes.
	VerdictNoCalls VerdictKind = "no calls"
	VerdictNone    VerdictKind = "none"
)

// Verdict is one sentence about one problem found.
type Verdict struct {
	Kind VerdictKind
	Text string
	Line int // the trace line it first showed at, 0 when none
}

// Analysis is the whole of it, made by Collector.Finish.
type Analysis struct {
	Meta      Meta
	Records   int // records run
	LastLine  int // the trace line of the last record run (0: none ran)
	Functions []Function
	// OtherFunctions sums the functions past Limits.Functions (Fn is
	// empty, Calls 0 when there are none).
	OtherFunctions      Function
	OtherFunctionsCount int
	// Memory is sampled every SampleEvery records (and after the last).
	Memory      []Sample
	SampleEvery int
	// Rows are the kept decisions by line; RowsTotal how many there were,
	// NotableTotal how many of them notable, NotableKept how many of those
	// Rows holds.
	Rows                                 []Row
	RowsTotal, NotableTotal, NotableKept int
	// CheckpointRecords and ErrorRecords count the records that
	// checkpointed and that raised.
	CheckpointRecords, ErrorRecords int
	Verdicts                        []Verdict
	Limits                          Limits
}

// Collector gathers an Analysis from the Steps of a run, as Count and
// Tally do for the report: call Step for every Step, then Finish.
type Collector struct {
	r    *Report
	lim  Limits
	mem  MemorySource
	meta Meta

	fns   map[string]*Function
	order []*Function
	// sourceOf, when set (Sources), gives a compiled function's
	// definition as its def record's "src" says.
	sourceOf func(fn string) string
	// lastFn caches the last function looked up: a loop calls the same
	// few functions, and a map lookup per record is most of Step's cost.
	lastFn *Function

	notable, plain []Row
	rowsTotal      int
	notableTotal   int

	samples      []Sample
	stride       int
	lastIndex    int
	lastLine     int
	sampledLast  bool
	checkpoints  int
	errs         int
	overwritten  int
	firstOverwr  Reason
	firstErr     Reason
	firstCkpt    int
	pendingWarns int
	firstPending int
}

// Collect starts an Analysis of the run r reports, on a trace with header
// hdr. mem, when not nil, is sampled as the run goes (the engine that runs
// it, made with engine.New and run with its Stream).
func (r *Report) Collect(hdr traces.Header, mem MemorySource, lim Limits) *Collector {
	meta := ParseMeta(hdr.Meta)
	meta.Unended = hdr.Unended()
	return &Collector{r: r, lim: lim.withDefaults(), mem: mem, meta: meta, fns: map[string]*Function{}, stride: 1, lastIndex: -1}
}

// Sources gives the collector where each compiled function is defined,
// from the def records' "src" (issue 33 item 3): sourceOf(fn) is "" for a
// def without one, and then the header's meta "sources" is used.
func (c *Collector) Sources(sourceOf func(fn string) string) { c.sourceOf = sourceOf }

func (c *Collector) fn(name string, line int) *Function {
	if f := c.lastFn; f != nil && f.Fn == name {
		return f
	}
	f := c.fns[name]
	if f == nil {
		f = &Function{Fn: name, FirstLine: line, Source: c.meta.Sources[name]}
		if c.sourceOf != nil {
			if src := c.sourceOf(name); src != "" {
				f.Source = src
			}
		}
		c.fns[name] = f
		c.order = append(c.order, f)
	}
	c.lastFn = f
	return f
}

// Step takes one record's Step: it counts its expectations as Tally does
// (or makes its entry as Count does, for a kept row) and gathers its
// facts. Nothing of s is kept past the call.
func (c *Collector) Step(s *engine.Step) {
	c.lastIndex, c.lastLine, c.sampledLast = s.Index, s.Line, false
	call := s.Op == traces.OpCall
	var f *Function
	if call {
		f = c.fn(s.Fn, s.Line)
		f.Calls++
		if len(f.Devices) == 0 || f.Devices[len(f.Devices)-1] != s.Device {
			f.Devices = addInt(f.Devices, s.Device)
		}
		// A call that raised still names the action it raised in
		// (engine.Step.Action): only the ones that ran count.
		if s.Err == nil {
			switch s.Action {
			case engine.ActionWarmup:
				f.Warmups++
			case engine.ActionRecord:
				f.Recordings++
			case engine.ActionReplay:
				f.Replays++
			case engine.ActionEager:
				f.Eager++
			}
		}
	}
	if s.Checkpoint {
		c.checkpoints++
		if c.firstCkpt == 0 {
			c.firstCkpt = s.Line
		}
	}
	if s.Err != nil {
		c.errs++
		over := s.Err.Kind == engine.ErrOverwritten
		if c.firstErr.Line == 0 {
			c.firstErr = Reason{Text: s.Err.Error(), Line: s.Line}
		}
		if over {
			c.overwritten++
			if c.firstOverwr.Line == 0 {
				c.firstOverwr = Reason{Text: s.Err.Err.Error(), Line: s.Line}
			}
		}
		if f != nil {
			f.Errors++
			if over {
				f.Overwritten++
			}
		}
	}
	notable := s.Err != nil || s.Action == engine.ActionRecord || s.Action == engine.ActionEager || s.Checkpoint
	for i := range s.Events {
		ev := &s.Events[i]
		ef := f
		if ev.Fn != "" && (f == nil || ev.Fn != f.Fn) {
			ef = c.fn(ev.Fn, s.Line)
		}
		switch ev.Kind {
		case engine.EvRecord:
			if ef != nil {
				why := ev.Cause.String()
				if n := ev.Origin.Note(ev.Fn, ev.Kind, ev.Cause); n != "" {
					// What the cause leaves out, as the --log line
					// says it (without its line, so that alike
					// recordings count as one reason).
					why += " (" + n + ")"
				}
				if ev.Cause == engine.CauseInvariants || ev.Rerecord {
					ef.Replaced++
					why += ": " + rerecordReason(ev)
				}
				ef.Recorded = addReason(ef.Recorded, why, s.Line)
				if ev.Rerecord {
					ef.Rerecords++
					ef.RerecordReasons = addReason(ef.RerecordReasons, rerecordReason(ev), s.Line)
				}
			}
		case engine.EvEager:
			if ef != nil {
				ef.Skips = addReason(ef.Skips, eagerReason(ev.Msg), s.Line)
			}
		case engine.EvSkip:
			notable = true
			if ef != nil && !(s.Action == engine.ActionEager && ef == f) {
				// An eager call's own skip says what its eager event
				// says again: the reason is counted once.
				ef.Skips = addReason(ef.Skips, ev.Msg, s.Line)
			}
		case engine.EvWarning:
			notable = true
			if ev.Msg == engine.WarnPendingBackward {
				c.pendingWarns++
				if c.firstPending == 0 {
					c.firstPending = s.Line
				}
				if ef != nil {
					ef.PendingBackward++
				}
			}
			if ef != nil {
				ef.Warnings = addReason(ef.Warnings, ev.Msg, s.Line)
			}
		case engine.EvCheckpoint:
			if f != nil {
				f.Checkpoints++
			}
		case engine.EvExpectFailed, engine.EvReset, engine.EvConfig, engine.EvInvariantFailed, engine.EvEmptyCache:
			notable = true
		}
	}
	if call || notable {
		c.row(s, notable)
	} else {
		c.r.Tally(s)
	}
	if c.mem != nil && s.Index%c.stride == 0 {
		c.sample(s.Index, s.Line)
	}
}

// row keeps s's row while there is room, making its entry with Count,
// else only tallies it.
func (c *Collector) row(s *engine.Step, notable bool) {
	c.rowsTotal++
	keep := false
	if notable {
		c.notableTotal++
		keep = len(c.notable) < c.lim.Rows
	} else {
		keep = len(c.plain) < c.lim.Rows
	}
	if !keep {
		c.r.Tally(s)
		return
	}
	row := Row{Step: c.r.Count(s), Index: s.Index, Device: s.Device, Notable: notable}
	if notable {
		row.Note = note(s)
		c.notable = append(c.notable, row)
	} else {
		c.plain = append(c.plain, row)
	}
}

// sample reads every device's memory after record index; past
// Limits.Samples samples every other one is dropped and the stride
// doubles, so samples stay evenly spread over a trace of any length.
func (c *Collector) sample(index, line int) {
	n := c.mem.NumDevices()
	smp := Sample{Index: index, Line: line, Devices: make([]engine.MemoryView, n)}
	for d := range n {
		smp.Devices[d] = c.mem.Memory(d)
	}
	c.samples = append(c.samples, smp)
	c.sampledLast = true
	if len(c.samples) >= c.lim.Samples {
		c.stride *= 2
		kept := c.samples[:0]
		for _, s := range c.samples {
			if s.Index%c.stride == 0 {
				kept = append(kept, s)
			}
		}
		c.samples = kept
	}
}

// Finish fills the report from st (Report.Finish) and returns the
// Analysis. Call it after the run, with the engine still there: the last
// record's memory is sampled if it was not.
func (c *Collector) Finish(st *engine.State) *Analysis {
	c.r.Finish(st)
	if c.mem != nil && c.lastIndex >= 0 && !c.sampledLast {
		c.sample(c.lastIndex, c.lastLine)
	}
	a := &Analysis{Meta: c.meta, Records: c.lastIndex + 1, LastLine: c.lastLine, Memory: c.samples, SampleEvery: c.stride,
		RowsTotal: c.rowsTotal, NotableTotal: c.notableTotal, NotableKept: len(c.notable),
		CheckpointRecords: c.checkpoints, ErrorRecords: c.errs, Limits: c.lim}
	// Rows: every notable row kept, then plain ones (the first) up to the
	// limit, by line.
	a.Rows = append(a.Rows, c.notable...)
	room := max(c.lim.Rows-len(a.Rows), 0)
	a.Rows = append(a.Rows, c.plain[:min(room, len(c.plain))]...)
	sort.SliceStable(a.Rows, func(i, j int) bool { return a.Rows[i].Index < a.Rows[j].Index })

	if st != nil {
		for _, fv := range st.Functions {
			f := c.fn(fv.Fn, 0)
			f.IDs = append(f.IDs, FunctionID{ID: fv.ID, Device: fv.Device, Shapes: fv.Shapes})
		}
		for _, d := range st.Devices {
			for _, n := range d.Nodes {
				f := c.fn(n.Fn, n.RecordedAtLine)
				f.Nodes = append(f.Nodes, NodeRef{Device: d.Index, ID: n.ID})
			}
		}
	}
	fns := make([]Function, len(c.order))
	for i, f := range c.order {
		fns[i] = *f
	}
	if len(fns) > c.lim.Functions {
		// The functions with the most problems, then the most calls, are
		// detailed; the others are summed.
		sort.SliceStable(fns, func(i, j int) bool {
			pi, pj := fns[i].problems(), fns[j].problems()
			if pi != pj {
				return pi > pj
			}
			return fns[i].Calls > fns[j].Calls
		})
		rest := fns[c.lim.Functions:]
		a.OtherFunctionsCount = len(rest)
		o := &a.OtherFunctions
		o.Fn = fmt.Sprintf("%d other functions", len(rest))
		for _, f := range rest {
			o.Calls += f.Calls
			o.Warmups += f.Warmups
			o.Recordings += f.Recordings
			o.Replays += f.Replays
			o.Eager += f.Eager
			o.Replaced += f.Replaced
			o.Rerecords += f.Rerecords
			o.Checkpoints += f.Checkpoints
			o.Errors += f.Errors
			o.Overwritten += f.Overwritten
			o.PendingBackward += f.PendingBackward
		}
		fns = fns[:c.lim.Functions]
		sort.SliceStable(fns, func(i, j int) bool { return fns[i].FirstLine < fns[j].FirstLine })
	}
	a.Functions = fns
	a.Verdicts = c.verdicts(st, a)
	return a
}

// problems counts what went wrong with f, to choose which functions a
// big report details.
func (f *Function) problems() int {
	return f.Replaced + f.Rerecords + f.Eager + f.Errors + f.PendingBackward + f.Checkpoints
}

// note is a notable row's why: each event's text that says more than the
// row's action.
func note(s *engine.Step) string {
	var parts []string
	for i := range s.Events {
		ev := &s.Events[i]
		switch ev.Kind {
		case engine.EvRecord:
			t := ev.Cause.String()
			if ev.Rerecord {
				t = "re-record: " + rerecordReason(ev)
			}
			if n := ev.Origin.NoteAt(ev.Fn, ev.Kind, ev.Cause); n != "" {
				t += " (" + n + ")"
			}
			parts = append(parts, t)
		case engine.EvEager:
			parts = append(parts, "eager: "+eagerReason(ev.Msg))
		case engine.EvCheckpoint:
			t := "checkpoint"
			if d := ev.Delta; d != nil {
				t = fmt.Sprintf("checkpoint: graph %d's pool state restored, %d block(s) re-allocated for live tensors, %d freed", d.Node, len(d.Reallocated), len(d.Freed))
			}
			parts = append(parts, t)
		case engine.EvSkip, engine.EvWarning, engine.EvInvariantFailed, engine.EvReset, engine.EvConfig, engine.EvExpectFailed, engine.EvEmptyCache:
			parts = append(parts, ev.Kind.String()+": "+ev.Text())
		}
	}
	if s.Err != nil {
		// PyTorch's messages say "Error" themselves; others get it.
		msg := s.Err.Err.Error()
		if !strings.Contains(strings.ToLower(firstLine(msg)), "error") {
			msg = "error: " + msg
		}
		parts = append(parts, msg)
	}
	return strings.Join(parts, "; ")
}

// rerecordReason is a re-record's cause without the pointers, so that the
// re-records of one input count as one reason.
func rerecordReason(ev *engine.Event) string {
	for _, f := range ev.Failures {
		switch f.Status {
		case engine.StatusStaticInputIdxMismatch, engine.StatusCudagraphManagedIdxMismatch:
			r := fmt.Sprintf("%s: input %d", f.Status, f.Input)
			if f.InputName != "" {
				r += " (" + f.InputName + ")"
			}
			return r
		}
	}
	if len(ev.Failures) > 0 {
		return ev.Failures[0].Status.String()
	}
	return ev.Cause.String()
}

// eagerReason is an eager event's reason without PyTorch's "Running eager
// of function N: " before it.
func eagerReason(msg string) string {
	if _, why, ok := strings.Cut(msg, ": "); ok && strings.HasPrefix(msg, "Running eager of function ") {
		return why
	}
	return msg
}

// maxReasons bounds the distinct reasons a function keeps of one kind: a
// message that names a line or pointer would otherwise make a reason per
// call, and the list (and its linear search) grow with the trace.
const maxReasons = 20

// otherReasons is the last reason kept, counting those past maxReasons.
const otherReasons = "other reasons"

// addReason counts text in rs, adding it at line when new.
func addReason(rs []Reason, text string, line int) []Reason {
	for i := range rs {
		if rs[i].Text == text {
			rs[i].Count++
			return rs
		}
	}
	if len(rs) == maxReasons-1 {
		text = otherReasons
	} else if len(rs) == maxReasons {
		rs[len(rs)-1].Count++
		return rs
	}
	return append(rs, Reason{Text: text, Count: 1, Line: line})
}

// addInt adds n to the sorted set xs.
func addInt(xs []int, n int) []int {
	i := sort.SearchInts(xs, n)
	if i < len(xs) && xs[i] == n {
		return xs
	}
	xs = append(xs, 0)
	copy(xs[i+1:], xs[i:])
	xs[i] = n
	return xs
}

// list joins the first n items, saying how many more there are.
func list(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, "; ")
	}
	return strings.Join(items[:n], "; ") + fmt.Sprintf("; and %d more", len(items)-n)
}

// firstLine is s's first line (PyTorch's messages run on with stack
// traces).
func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
