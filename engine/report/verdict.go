package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/engine/alloc"
)

// The verdicts: one sentence per problem an Analysis found, from the
// counts it gathered.

// verdicts says one sentence per problem found.
func (c *Collector) verdicts(st *engine.State, a *Analysis) []Verdict {
	var out []Verdict
	cn := c.r.Counters
	if c.r.calls == 0 {
		// Nothing ran to judge: "no problem found" would mislead. A
		// recording that could record no call (a torch it cannot wrap,
		// CUDA graphs made outside the trees) says why in a note.
		v := Verdict{Kind: VerdictNoCalls, Text: "Nothing to judge: the trace calls no compiled function."}
		if notes, more := c.r.NoCallNotes(); len(notes) > 0 {
			v.Line = notes[0].Line
			v.Text += fmt.Sprintf(" Its first note, at line %d: %s", v.Line, firstLine(notes[0].Text))
			if n := len(notes) - 1 + more; n > 0 {
				v.Text += fmt.Sprintf(" (and %d more)", n)
			}
		}
		out = append(out, v)
	}
	// Re-recording: PyTorch's re-records, and every recording made beside
	// an existing one whose invariants failed.
	var rr []string
	rrLine := 0
	total := 0
	for i := range a.Functions {
		f := &a.Functions[i]
		n := max(f.Replaced, f.Rerecords)
		if n == 0 {
			continue
		}
		total += n
		why := ""
		for _, r := range f.Recorded {
			if _, t, ok := strings.Cut(r.Text, ": "); ok {
				if why == "" {
					why = " (" + t + ")"
				}
				if rrLine == 0 || r.Line < rrLine {
					rrLine = r.Line
				}
			}
		}
		rr = append(rr, fmt.Sprintf("%s %d×%s", f.Fn, n, why))
	}
	if total > 0 || cn.Rerecords > 0 {
		out = append(out, Verdict{Kind: VerdictRerecord, Line: rrLine, Text: fmt.Sprintf(
			"Re-recording: %d recording(s) made beside a graph that could not be replayed (%d counted by PyTorch as re-records): %s.",
			max(total, cn.Rerecords), cn.Rerecords, list(rr, 3))})
	}
	if v, ok := intSizesVerdict(st, a); ok {
		out = append(out, v)
	}
	if cn.Eager > 0 {
		var sk []string
		line := 0
		for i := range a.Functions {
			f := &a.Functions[i]
			if f.Eager == 0 {
				continue
			}
			why := ""
			if len(f.Skips) > 0 {
				why = " (" + firstLine(f.Skips[0].Text) + ")"
				if line == 0 || f.Skips[0].Line < line {
					line = f.Skips[0].Line
				}
			}
			sk = append(sk, fmt.Sprintf("%s %d×%s", f.Fn, f.Eager, why))
		}
		out = append(out, Verdict{Kind: VerdictSkip, Line: line, Text: fmt.Sprintf(
			"Skipped graphs: %d call(s) ran eagerly, without a CUDA graph: %s.", cn.Eager, list(sk, 3))})
	}
	pendingAtEnd := false
	if st != nil {
		for _, d := range st.Devices {
			pendingAtEnd = pendingAtEnd || d.PendingBackward
		}
	}
	if c.pendingWarns > 0 {
		out = append(out, Verdict{Kind: VerdictPendingBackward, Line: c.firstPending, Text: fmt.Sprintf(
			"Pending backwards: %d time(s) a call could not replay because forwards were still waiting for their backward (first at line %d); run the backward, use torch.no_grad(), or call torch.compiler.cudagraph_mark_step_begin() before each invocation.",
			c.pendingWarns, c.firstPending)})
	} else if pendingAtEnd {
		out = append(out, Verdict{Kind: VerdictPendingBackward, Text: "Pending backwards: the trace ends with forwards still waiting for their backward."})
	}
	if c.overwritten > 0 {
		out = append(out, Verdict{Kind: VerdictOverwritten, Line: c.firstOverwr.Line, Text: fmt.Sprintf(
			"Overwritten errors: %d record(s) read a CUDA-graph output that a later run had overwritten, first at line %d: %s",
			c.overwritten, c.firstOverwr.Line, firstLine(c.firstOverwr.Text))})
	}
	if other := c.errs - c.overwritten; other > 0 {
		out = append(out, Verdict{Kind: VerdictErrors, Line: c.firstErr.Line, Text: fmt.Sprintf(
			"Errors: %d record(s) raised, first at line %d: %s", c.errs, c.firstErr.Line, firstLine(c.firstErr.Text))})
	}
	if v, ok := memoryGrowth(a.Memory); ok {
		out = append(out, v)
	}
	if cn.Checkpoints > 0 {
		out = append(out, Verdict{Kind: VerdictCheckpoint, Line: c.firstCkpt, Text: fmt.Sprintf(
			"Checkpoints: the graph pool's state was restored %d time(s), first at line %d: a warmup or recording after a replay in the same generation, which costs a pool check and frees what died.",
			cn.Checkpoints, c.firstCkpt)})
	}
	if n := len(c.r.Expectations.Failed); n > 0 {
		f := c.r.Expectations.Failed[0]
		out = append(out, Verdict{Kind: VerdictExpectations, Line: f.Line, Text: fmt.Sprintf(
			"Expectations: %d of the trace's checks failed, first at line %d: %s", n, f.Line, firstLine(f.Message))})
	}
	if len(out) == 0 {
		out = append(out, Verdict{Kind: VerdictNone, Text: "No problem found: no re-recording, no skipped graph, no pending backward, no error, no memory growth in the trace's second half, no checkpoint."})
	}
	return out
}

// memoryGrowth is the verdict on memory when the allocator reserved more
// than a tenth more at the end than halfway through the trace: a program
// in a steady loop reserves nothing new after its first iterations.
func memoryGrowth(ss []Sample) (Verdict, bool) {
	if len(ss) < 3 {
		return Verdict{}, false
	}
	last := ss[len(ss)-1]
	mid := ss[0]
	for _, s := range ss {
		if s.Index <= last.Index/2 {
			mid = s
		}
	}
	sum := func(s Sample) int64 {
		var n int64
		for _, d := range s.Devices {
			n += d.ReservedBytes
		}
		return n
	}
	a, b := sum(mid), sum(last)
	if b <= a || (b-a)*10 <= a {
		return Verdict{}, false
	}
	return Verdict{Kind: VerdictMemoryGrowth, Line: mid.Line, Text: fmt.Sprintf(
		"Memory growth: the allocator reserved %s more in the trace's second half (%s at line %d, %s at line %d); a steady loop reserves nothing new after its first iterations.",
		alloc.FormatSize(b-a), alloc.FormatSize(a), mid.Line, alloc.FormatSize(b), last.Line)}, true
}

// IntSizes is a compiled graph of dynamic shapes that got a FunctionID of
// its own for several sizes whose tensors all keep the shapes of its
// first (engine.FunctionView.KeepsShapesOf): the size that changed is an
// int the graph takes as a symbolic size, most often an int argument
// Dynamo made dynamic (a step, a sampler's timestep), and each value is
// warmed up and recorded before it can replay.
type IntSizes struct {
	Device int
	Graph  string   // the def of the graph's first size
	Fns    []string // the defs of its further sizes that kept its shapes
}

// FindIntSizes returns the graph with the most such sizes (the first in
// the functions' order to reach it), ok when it has two or more.
func FindIntSizes(st *engine.State) (IntSizes, bool) {
	if st == nil {
		return IntSizes{}, false
	}
	type key struct {
		dev int
		fn  string
	}
	views := map[key]engine.FunctionView{}
	for _, f := range st.Functions {
		views[key{f.Device, f.Fn}] = f
	}
	sizes := map[key][]string{}
	var best key
	for _, f := range st.Functions {
		g := key{f.Device, f.Graph}
		if !f.KeepsShapesOf(views[g]) {
			continue
		}
		if sizes[g] = append(sizes[g], f.Fn); len(sizes[g]) > len(sizes[best]) {
			best = g
		}
	}
	if len(sizes[best]) < 2 {
		return IntSizes{}, false
	}
	return IntSizes{Device: best.dev, Graph: best.fn, Fns: sizes[best]}, true
}

// IntSizesAdvice is what to do about an IntSizes, said after it.
const IntSizesAdvice = "the size that changed is an int the graph takes as a size; if it is an int argument " +
	"(a step, a sampler's timestep) that Dynamo made dynamic, passing it as a CUDA tensor " +
	"(torch.tensor(t, device=\"cuda\")) makes one graph that replays at every value"

// intSizesVerdict says FindIntSizes' graph, with what its sizes' calls
// did (from a's functions) and the line where the first of them was first
// called.
func intSizesVerdict(st *engine.State, a *Analysis) (Verdict, bool) {
	is, ok := FindIntSizes(st)
	if !ok {
		return Verdict{}, false
	}
	var calls, warm, rec, rep, line int
	for i := range a.Functions {
		f := &a.Functions[i]
		if !slices.Contains(is.Fns, f.Fn) {
			continue
		}
		calls, warm, rec, rep = calls+f.Calls, warm+f.Warmups, rec+f.Recordings, rep+f.Replays
		if line == 0 || (f.FirstLine > 0 && f.FirstLine < line) {
			line = f.FirstLine
		}
	}
	return Verdict{Kind: VerdictIntSizes, Line: line, Text: fmt.Sprintf(
		"Int sizes: %s's compiled graph got a function of its own for %d more sizes whose tensors all have its shapes, "+
			"each warmed up and recorded before it replays (their %d calls: %d warmups, %d recordings, %d replays); %s.",
		is.Graph, len(is.Fns), calls, warm, rec, rep, IntSizesAdvice)}, true
}
