package ui

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/sessions"
	"github.com/cgtviz/cgtviz/traces"
)

// eventText explains one event in a line (failures follow on their own).
func eventText(ev *engine.Event) string {
	switch ev.Kind {
	case engine.EvWarmup:
		// PyTorch's warmup ids (-1, -2, …) are internal: the function
		// names the node, and the tree shows where it sits in the chain.
		return withMsg("warmup of "+ev.Fn, ev.Text())
	case engine.EvRecord:
		s := fmt.Sprintf("record #%d %s: %s", ev.Node, ev.Fn, ev.Cause)
		if ev.Parent >= 0 {
			s += fmt.Sprintf(" (parent #%d)", ev.Parent)
		}
		if ev.Rerecord {
			s += " [re-record]"
		}
		return s
	case engine.EvReplay:
		return fmt.Sprintf("replay #%d %s", ev.Node, ev.Fn)
	case engine.EvEager:
		return withMsg("eager "+ev.Fn, ev.Text())
	case engine.EvCheckpoint:
		s := fmt.Sprintf("checkpoint: pool restored to #%d's state", ev.Node)
		if ev.Delta != nil {
			s += fmt.Sprintf(": %d re-allocated, %d freed", len(ev.Delta.Reallocated), len(ev.Delta.Freed))
		}
		return s
	case engine.EvDealloc:
		return "dealloc: freed, now stale: " + strings.Join(ev.Tensors, ", ")
	case engine.EvPreserve:
		return "preserve: moved out of the pool: " + strings.Join(ev.Tensors, ", ")
	case engine.EvGeneration:
		if ev.Generation < 0 {
			return fmt.Sprintf("generation %d (mark_step_begin: PyTorch counts steps down from -1)", ev.Generation)
		}
		return fmt.Sprintf("generation %d", ev.Generation)
	case engine.EvPathEnd:
		return withMsg("path end", ev.Text())
	case engine.EvInvariantFailed:
		if len(ev.Failures) == 1 {
			return "cannot replay " + ev.Failures[0].Describe()
		}
		return "invariant failed"
	case engine.EvTensorDied:
		made := make([]string, len(ev.Tensors))
		for i, t := range ev.Tensors {
			made[i] = placeholderWords(t)
		}
		s := "a storage died, its last tensor gone: the one made by " + strings.Join(made, ", ")
		if len(ev.Ptrs) > 0 {
			s += " at " + hex(ev.Ptrs[0])
		}
		return s
	}
	return withMsg(ev.Kind.String(), ev.Text())
}

// compiledRe splits a compiled function's name as the recorder writes it
// (docs/pytorch-bridge.md: one def per PyTorch FunctionID, named after
// the module or function Dynamo compiled and the id: "Block_3",
// "MLP_bwd_1").
var compiledRe = regexp.MustCompile(`^(.+)_(\d+)$`)

// resumeRe is Dynamo's name of a resume function: the code of fn after a
// graph break at a line of the program, compiled on its own
// ("torch_dynamo_resume_in_forward_at_26_1"; older PyTorch:
// "__resume_at_26_1").
var resumeRe = regexp.MustCompile(`^(?:torch_dynamo_resume_in_(.+)_at_(\d+)|__resume_at_(\d+))(?:_\d+)?$`)

// originWhy says, in PyTorch's terms, what a warmup or a recording (kind,
// with its cause) of fn on device dev is where the cause alone stops
// short, from the engine's facts (engine.Origin): the resume function
// after a graph break, run in the same invocation as the call before it;
// the backward of a forward; a new compiled graph, or a new size of a
// dynamic one, or one of several defs the recorder wrote for one module,
// as a new root. "" when the facts add nothing.
func originWhy(st *engine.State, dev int, fn string, kind engine.EventKind, cause engine.RecordCause, o *engine.Origin) string {
	if o == nil {
		return ""
	}
	stillRecording := kind == engine.EvRecord && cause == engine.CauseRecordingPath
	switch {
	case o.Backward && o.Forward != "":
		s := "the backward of " + o.Forward
		if o.ForwardNode >= 0 {
			s += fmt.Sprintf(" (#%d)", o.ForwardNode)
		}
		s += ", whose saved tensors it takes"
		if stillRecording {
			// Autograd runs it, not a frame of its own: Dynamo's
			// counter does not move, and under mark_step_begin a step
			// between would have ended the path (another cause).
			s += ": a backward starts no generation of its own, so the path was still recording"
		}
		return s
	case !o.Backward && o.Prev != nil && o.Prev.SameInvocation:
		s := fmt.Sprintf("resume function after a graph break in %s, same invocation as line %d", o.Prev.Fn, o.Prev.Line)
		if m := resumeRe.FindStringSubmatch(fn); m != nil {
			switch {
			case m[1] != "":
				s += fmt.Sprintf(" (Dynamo's code of %s after line %s)", m[1], m[2])
			case m[3] != "":
				s += fmt.Sprintf(" (Dynamo's code after line %s)", m[3])
			}
		}
		if stillRecording && o.Prev.Node >= 0 {
			s += fmt.Sprintf(": one invocation starts no new generation, so the path was still recording and it is the child of #%d %s", o.Prev.Node, o.Prev.Fn)
		}
		return s
	case !o.First || kind == engine.EvRecord && cause != engine.CauseNewRoot:
		return ""
	}
	shapes := ""
	if len(o.Shapes) > 0 {
		shapes = " for shape " + engine.ShapesText(o.Shapes)
	}
	dynamic := ""
	if o.Dynamic {
		dynamic = " (dynamic shapes)"
	}
	ownRoot := ""
	if kind == engine.EvRecord {
		ownRoot = ", not yet recorded, so a root of its own"
	}
	switch {
	case o.Size > 1 && o.Graph != "" && keepsGraphShapes(st, dev, fn, o.Graph):
		// No tensor changed shape: the size that did is an int the graph
		// takes as a symbolic size (a step or a timestep passed as a
		// Python int), which users do not think of as a shape.
		return fmt.Sprintf("size %d of %s's compiled graph%s (the tensor shapes of %s itself)%s: the size that changed is not a tensor's shape but an int the graph takes as a symbolic size (an int argument, such as a step or a timestep, that Dynamo made dynamic; or a stride or an offset), and cudagraphify records a graph of dynamic shapes once per distinct size, each a function of its own (this def)", o.Size, o.Graph, shapes, o.Graph, ownRoot)
	case o.Size > 1 && o.Graph != "":
		return fmt.Sprintf("size %d of %s's compiled graph%s%s: cudagraphify records a graph of dynamic shapes once per distinct input size, each a function of its own (this def)", o.Size, o.Graph, shapes, ownRoot)
	case o.Size > 1:
		return fmt.Sprintf("a new size of %s's compiled graph %d%s%s%s: cudagraphify records a graph of dynamic shapes once per distinct input size", fn, o.Compile, dynamic, shapes, ownRoot)
	case o.Compile > 1 || o.Dynamic:
		s := fmt.Sprintf("a new compiled graph of %s%s%s%s: Dynamo's compile %d of %s", fn, shapes, dynamic, ownRoot, o.Compile, fn)
		if o.Dynamic && o.Compile > 1 {
			s += ", made dynamic where the sizes changed (automatic_dynamic_shapes)"
		}
		return s
	}
	// A def's first graph: the recorder writes one def per FunctionID, so
	// one module compiled again (or recorded at a new size) is a def of
	// its own, named after the module.
	m := compiledRe.FindStringSubmatch(fn)
	if m == nil || kind != engine.EvRecord {
		return ""
	}
	var kin []string
	for _, f := range st.Functions {
		if f.Device == dev {
			if fm := compiledRe.FindStringSubmatch(f.Fn); fm != nil && fm[1] == m[1] && !slices.Contains(kin, f.Fn) {
				kin = append(kin, f.Fn)
			}
		}
	}
	if len(kin) < 2 {
		return ""
	}
	names := joinAnd(kin)
	if len(kin) > 3 {
		names = kin[0] + " … " + kin[len(kin)-1]
	}
	// Which of the two the trace does not say: a new function, not
	// necessarily a new compile.
	return fmt.Sprintf("a new function of %s%s%s: %s, one of %d defs of %s (%s), one per PyTorch FunctionID (Dynamo's recompile, or a new size of a graph of dynamic shapes)",
		m[1], shapes, ownRoot, fn, len(kin), m[1], names)
}

// keepsGraphShapes reports whether the function fn on dev is a size of
// graph's compiled graph with graph's input shapes
// (engine.FunctionView.KeepsShapesOf).
func keepsGraphShapes(st *engine.State, dev int, fn, graph string) bool {
	var f, g engine.FunctionView
	for _, v := range st.Functions {
		switch {
		case v.Device != dev:
		case v.Fn == fn:
			f = v
		case v.Fn == graph:
			g = v
		}
	}
	return f.KeepsShapesOf(g)
}

// namedAlias names the input an output aliases: "(alias input 3)" says
// "(alias input 3, param_3)".
func namedAlias(text string, o engine.OutputView, n *engine.NodeView) string {
	var i int
	if _, err := fmt.Sscanf(o.Alias, "input %d", &i); err != nil || i < 0 || i >= len(n.Inputs) || n.Inputs[i].Name == "" {
		return text
	}
	return strings.Replace(text, "(alias "+o.Alias+")", fmt.Sprintf("(alias %s, %s)", o.Alias, n.Inputs[i].Name), 1)
}

// nodeAddrs names the addresses a node's CUDA graph reads and writes: its
// inputs (a copied one's placeholder), its outputs.
func nodeAddrs(n *engine.NodeView) map[string]string {
	out := map[string]string{}
	for _, in := range n.Inputs {
		if in.Name == "" {
			continue
		}
		name := in.Name
		if in.Kind == engine.InputCopied {
			name += "'s placeholder"
		}
		out[hex(in.Ptr)] = name
	}
	for _, o := range n.Outputs {
		if _, ok := out[hex(o.Ptr)]; !ok {
			out[hex(o.Ptr)] = fmt.Sprintf("output %d", o.Index)
		}
	}
	return out
}

// nameAddrs follows each address in a kernel's detail that the node names
// with its name: "a=0x7f000000a200" reads "a=0x7f000000a200 (param_3)".
func nameAddrs(detail string, addrs map[string]string) string {
	f := strings.Fields(detail)
	for i, w := range f {
		k := strings.IndexByte(w, '=')
		if k < 0 {
			continue
		}
		if name, ok := addrs[w[k+1:]]; ok {
			f[i] = w + " (" + name + ")"
		}
	}
	return strings.Join(f, " ")
}

// placeholderRe is how the engine names the storage a recording makes for
// a copied input: "foo input 0 (placeholder of #0)".
var placeholderRe = regexp.MustCompile(`^(.+) input (\d+) \(placeholder of #(\d+)\)$`)

// placeholderWords says what such a storage is: the graph's own copy of an
// input, which each replay refills.
func placeholderWords(made string) string {
	m := placeholderRe.FindStringSubmatch(made)
	if m == nil {
		return made
	}
	return fmt.Sprintf("#%s's recording, as its own copy of %s's input %s (each replay copies the input there)", m[3], m[1], m[2])
}

func withMsg(s, msg string) string {
	if msg == "" {
		return s
	}
	return s + ": " + msg
}

// stepLines describes the record just run and everything it decided,
// with every argument of a call listed.
func stepLines(snap *snapshot, recs records, s Styles, w int) []string {
	return stepLinesFold(snap, recs, s, w, true)
}

// stepLinesFold describes the record just run: what it did and why first
// (the decision, its cause, the checkpoint, the warnings), then, for a
// call, its arguments; full lists them all, else the params among them
// are one count ("in + 16 params"), since on a real program they are most
// of a call and would push the decision off the pane.
func stepLinesFold(snap *snapshot, recs records, s Styles, w int, full bool) []string {
	var out []string
	add := func(st bool, text string, style func(string) string) {
		for i, l := range wrap(text, w-2) {
			if i > 0 || !st {
				l = "  " + l
			}
			out = append(out, style(l))
		}
	}
	plain := func(t string) string { return t }
	if snap.step == nil {
		out = append(out, s.Bold.Render("the start: nothing run yet"))
		out = append(out, "press n to run the first record")
		return out
	}
	st := snap.step
	head := fmt.Sprintf("line %d", st.Line)
	out = append(out, s.Bold.Render(head))
	var call *traces.Record
	if st.Index >= 0 && st.Index < recs.len() {
		if r := recs.at(st.Index); r.Op == traces.OpCall {
			call = r
			add(true, "call "+r.Fn, plain) // its arguments after the story
		} else {
			add(true, recordText(r), plain)
		}
		// The user's own line, when the recorder noted it (issue 33
		// item 3): what PyTorch's errors name.
		if r := recs.at(st.Index); r.Src != nil {
			add(true, "at "+traces.Printable(r.Src.String()), rs(s.Dim))
		}
	}
	if st.Action != engine.ActionNone {
		a := string(st.Action)
		if st.Node >= 0 {
			a += fmt.Sprintf(" #%d", st.Node)
		}
		if st.Parent >= 0 {
			a += fmt.Sprintf(" (parent #%d)", st.Parent)
		}
		out = append(out, "→ "+s.action(st.Action).Render(a)+fmt.Sprintf(" on dev %d", st.Device))
	}
	if st.Err != nil {
		add(true, "error: "+st.Err.Error(), rs(s.Err))
	}
	// Only a replay hands back a cached output object.
	if st.Action == engine.ActionReplay && st.Index >= 0 && st.Index < recs.len() {
		for _, w := range sharedOutputs(snap, recs.at(st.Index)) {
			add(true, "⚠ "+w, rs(s.Warn))
		}
	}
	for _, f := range st.ExpectFailures {
		add(true, "expect failed: "+f.Msg, rs(s.Err))
	}
	// Cause first: why no graph could replay, then the checkpoint that
	// made room, then what the tree did, then the rest.
	ckpt := false
	for _, ev := range byImportance(st.Events) {
		if ev.Kind == engine.EvError || ev.Kind == engine.EvExpectFailed {
			continue // shown above from the step itself
		}
		switch ev.Kind {
		case engine.EvInvariantFailed:
			for _, f := range ev.Failures {
				add(false, "• "+failureStory(f), rs(s.Warn))
			}
			if len(ev.Failures) == 0 {
				add(false, "• "+eventText(ev), plain)
			}
			continue
		case engine.EvCheckpoint:
			ckpt = true
			add(false, "• "+checkpointStory(ev), rs(s.Checkpoint))
			continue
		case engine.EvRecord, engine.EvWarmup:
			text := eventText(ev)
			if ckpt {
				text = "then " + text
			}
			add(false, "• "+text, plain)
			if w := originWhy(snap.state, ev.Device, ev.Fn, ev.Kind, ev.Cause, ev.Origin); w != "" {
				add(false, "  "+w, plain)
			}
			continue
		}
		add(false, "• "+eventText(ev), plain)
	}
	if call != nil {
		args, folded := callArgs(call, snap.tensors().params, full)
		add(true, "args: "+args, plain)
		if len(call.Out) > 0 {
			add(true, "returns: "+strings.Join(call.Out, ", "), plain)
		}
		if folded {
			out = append(out, s.Dim.Render("  (enter in this pane lists every argument)"))
		}
	}
	return out
}

// callArgs is a call's arguments as the details list them: all of them
// when full, else the params among them (params: the names bound to the
// state's parameters) as one count ("in, x + 16 params"); folded says
// whether any were.
func callArgs(r *traces.Record, params map[string]bool, full bool) (string, bool) {
	var mine []string
	n := 0
	for _, a := range r.Args {
		if !full && params[a] {
			n++
			continue
		}
		mine = append(mine, a)
	}
	s := strings.Join(mine, ", ")
	if n > 0 {
		if s != "" {
			s += " + "
		}
		s += fmt.Sprintf("%d param", n)
		if n > 1 {
			s += "s"
		}
	}
	if s == "" {
		s = "none"
	}
	return s, n > 0
}

// failureStory tells why a recorded graph could not replay, in the terms
// of the trace: "#1 expected a dead before its replay, but a is alive".
func failureStory(f engine.InvariantFailure) string {
	if f.Status == engine.StatusExpectedDeadIndicesBeforeGraphMismatch && len(f.Outputs) > 0 {
		names := make([]string, len(f.Outputs))
		for i, o := range f.Outputs {
			names[i] = "output " + o.String()
			if i < len(f.OutputNames) && f.OutputNames[i] != "" {
				names[i] = f.OutputNames[i]
			}
		}
		verb := "is"
		if len(names) > 1 {
			verb = "are"
		}
		return fmt.Sprintf("#%d cannot replay: it expected %s dead before its replay, but %s %s alive", f.Node, joinAnd(names), joinAnd(names), verb)
	}
	return "cannot replay " + f.Describe()
}

// checkpointStory tells a checkpoint as a cause and its effect, with the
// reason a checkpoint is needed at all.
func checkpointStory(ev *engine.Event) string {
	s := fmt.Sprintf("checkpoint: the graph pool holds live replay outputs that the allocator believes free, so it is restored to #%d's state", ev.Node)
	if d := ev.Delta; d != nil {
		var re, fr []string
		for _, b := range d.Reallocated {
			re = append(re, orDefault(b.Tensor, hex(b.Ptr)))
		}
		for _, b := range d.Freed {
			fr = append(fr, orDefault(b.Tensor, hex(b.Ptr)))
		}
		if len(re) > 0 {
			s += " with " + joinAnd(re) + " re-allocated"
		}
		if len(fr) > 0 {
			s += ", " + joinAnd(fr) + " freed"
		}
	}
	return s + ". Why a checkpoint is needed: replays do not tell the allocator what they allocate, and a recording or warmup made now would overwrite the live outputs."
}

// joinAnd joins names as a sentence does: "a", "a and b", "a, b and c".
func joinAnd(xs []string) string {
	switch len(xs) {
	case 0:
		return ""
	case 1:
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}

// importance orders a step's events as a story, cause first: why the
// existing graphs could not replay, the checkpoint that made room, the
// decision, then the rest, tensor deaths last.
func importance(k engine.EventKind) int {
	switch k {
	case engine.EvInvariantFailed:
		return 0
	case engine.EvCheckpoint:
		return 1
	case engine.EvRecord, engine.EvReplay, engine.EvWarmup, engine.EvEager:
		return 2
	case engine.EvTensorDied:
		return 4
	}
	return 3
}

// byImportance returns pointers to the events, most important first, in
// their order within one importance.
func byImportance(evs []engine.Event) []*engine.Event {
	out := make([]*engine.Event, len(evs))
	for i := range evs {
		out[i] = &evs[i]
	}
	slices.SortStableFunc(out, func(a, b *engine.Event) int { return importance(a.Kind) - importance(b.Kind) })
	return out
}

// nodeLines describes the tree line under the cursor.
//
// call is the record just run when it is a call that recorded or replayed
// the node: its argument names are this call's names for the node's
// inputs, which may differ from those bound when it was recorded.
func nodeLines(st *engine.State, l treeLine, call *traces.Record, s Styles, w int) []string {
	return nodeLinesFold(st, l, call, s, w, true)
}

// nodeLinesFold is nodeLines; unless full, a node's static inputs (the
// params, whose pointers the graph burns in) are one line, so that its
// outputs and what it expects dead show without scrolling.
func nodeLinesFold(st *engine.State, l treeLine, call *traces.Record, s Styles, w int, full bool) []string {
	if st == nil || l.dev < 0 || l.dev >= len(st.Devices) {
		return nil
	}
	ds := &st.Devices[l.dev]
	var out []string
	add := func(t string) { out = append(out, t) }
	wrapped := func(prefix, t string, style func(string) string) {
		for i, x := range wrap(t, w-len(prefix)-2) {
			if i == 0 {
				add(style(prefix + x))
			} else {
				add(style(strings.Repeat(" ", len(prefix)) + x))
			}
		}
	}
	plain := func(t string) string { return t }
	switch l.kind {
	case treeDevice:
		add(s.Bold.Render(fmt.Sprintf("dev %d %s", ds.Index, ds.Name)))
		g, why := lastCallGen(st, ds)
		add(fmt.Sprintf("path %s · %s · checkpoints %d", ds.PathState, g, ds.Checkpoints))
		wrapped("", why, rs(s.Dim))
		add(fmt.Sprintf("nodes %d · roots %d", len(ds.Nodes), len(ds.Roots)))
		if ds.PendingBackward {
			add("forwards pending their backwards")
		}
		if len(ds.Path) > 0 {
			p := make([]string, len(ds.Path))
			for i, id := range ds.Path {
				p[i] = fmt.Sprintf("#%d", id)
			}
			add("path: " + strings.Join(p, " → "))
		}
	case treeWarmup:
		for i := range ds.Warmups {
			wv := &ds.Warmups[i]
			if wv.ID != l.id {
				continue
			}
			add(s.Bold.Render("warmup of "+wv.Fn) + fmt.Sprintf(" (function %d; PyTorch's warmup id %d)", wv.FnID, wv.ID))
			add(fmt.Sprintf("ran eagerly in the graph pool at line %d", wv.Line))
			if wv.Failed {
				wrapped("", "its run raised: the new generation freed an input (-handoff raise, PyTorch 2.11). The node stays on the path with no outputs, so every new generation fails with an AssertionError until the path's outputs are all dead.", func(t string) string { return s.Err.Render(t) })
			}
			add(fmt.Sprintf("outputs (%d):", len(wv.Outputs)))
			for _, o := range wv.Outputs {
				add("  " + outputText(o))
			}
		}
	case treeNode:
		if l.id < 0 || l.id >= len(ds.Nodes) {
			return nil
		}
		n := &ds.Nodes[l.id]
		add(s.Bold.Render(fmt.Sprintf("node #%d %s", n.ID, n.Fn)) + fmt.Sprintf(" (function %d, %s) · dev %d", n.FnID, orDefault(n.Mode, "inference"), l.dev))
		rel := "root"
		if n.Parent >= 0 && n.Parent < len(ds.Nodes) {
			rel = fmt.Sprintf("parent #%d %s", n.Parent, ds.Nodes[n.Parent].Fn)
		}
		where := ""
		switch {
		case n.Current:
			where = " · current"
		case n.OnPath:
			where = " · on path"
		}
		add(fmt.Sprintf("%s · depth %d · replays %d%s", rel, n.Depth, n.Replays, where))
		wrapped("why: ", fmt.Sprintf("recorded at line %d: %s", n.RecordedAtLine, n.Cause), plain)
		if w := originWhy(st, l.dev, n.Fn, engine.EvRecord, n.Cause, n.Origin); w != "" {
			wrapped("     ", w, plain)
		}
		for _, f := range n.Failures {
			wrapped("  ", f.Describe(), rs(s.Warn))
		}
		now := call != nil && call.Op == traces.OpCall && call.Fn == n.Fn && len(call.Args) == len(n.Inputs)
		if now {
			add(fmt.Sprintf("inputs (%d), as line %d passes them:", len(n.Inputs), call.Line))
		} else {
			add(fmt.Sprintf("inputs (%d), names as bound when recorded at line %d:", len(n.Inputs), n.RecordedAtLine))
		}
		statics := 0
		for i, in := range n.Inputs {
			if !full && in.Kind == engine.InputStatic {
				statics++
				continue
			}
			name := orDefault(in.Name, "?")
			was := ""
			if now {
				if call.Args[i] != name {
					was = fmt.Sprintf(" (recorded with %s)", name)
				}
				name = call.Args[i]
			}
			wrapped("  ", fmt.Sprintf("%d %-8s %-7s %s %s%s", in.Index, name, in.Kind, hex(in.Ptr), shape(in.Shape), was), plain)
		}
		if statics > 0 {
			add(s.Dim.Render(fmt.Sprintf("  + %d static inputs (params: their addresses are burned into the graph; enter lists them)", statics)))
		}
		if len(n.Mutated) > 0 {
			// By name, as the program knows them (issue 34 item 7).
			var ws []string
			for _, i := range n.Mutated {
				name := "?"
				if i >= 0 && i < len(n.Inputs) {
					name = orDefault(n.Inputs[i].Name, "?")
					if now && i < len(call.Args) {
						name = call.Args[i]
					}
				}
				ws = append(ws, fmt.Sprintf("%s (input %d)", name, i))
			}
			wrapped("writes in place: ", strings.Join(ws, ", "), plain)
		}
		add(fmt.Sprintf("outputs (%d):", len(n.Outputs)))
		for _, o := range n.Outputs {
			add("  " + namedAlias(outputText(o), o, n))
		}
		if len(n.ExpectedDeadBefore) > 0 {
			wrapped("", "expected dead before replay: "+outputNames(ds, n, n.ExpectedDeadBefore), plain)
		}
		if len(n.ExpectedDeadAfter) > 0 {
			wrapped("", "died during recording: "+outputNames(ds, n, n.ExpectedDeadAfter), plain)
		}
		if len(n.LiveAfter) > 0 {
			wrapped("", "outputs of the path still live after recording: "+outputNames(ds, n, n.LiveAfter), plain)
		}
		add(fmt.Sprintf("CUDA graph (%d nodes):", len(n.Kernels)))
		addrs := nodeAddrs(n)
		for _, k := range n.Kernels {
			wrapped("  ", fmt.Sprintf("%s %s %s", k.Kind, k.Name, nameAddrs(k.Detail, addrs)), plain)
		}
	}
	return out
}

// lastCallGen tells the manager's current_gen: the generation of the last
// call the tree manager saw on the device. PyTorch starts it at -1 before
// any call, which is not a step: only once a call has run under
// mark_step_begin is a negative value the step counter (-1, -2, …). The
// status line's "gen" is the generation now (get_curr_generation), which
// a step record changes before the next call reads it.
func lastCallGen(st *engine.State, ds *engine.DeviceState) (short, why string) {
	c := st.Counters
	called := c.Warmups+c.Recordings+c.Replays+c.Eager > 0 || len(ds.Nodes) > 0
	short = fmt.Sprintf("last call's gen %d", ds.CurrentGen)
	switch {
	case !called || (ds.CurrentGen == -1 && st.MarkSteps == 0):
		return "no call yet", fmt.Sprintf("no call has run on this device yet (current_gen -1, PyTorch's start value); the generation now is %d", st.Generation)
	case ds.CurrentGen < 0:
		return short, fmt.Sprintf("gen %d is negative as PyTorch counts it: with mark_step_begin (step records) the generation is that counter, -1, -2, … one down per step; the last call on this device ran in the %s step, and the generation now is %d", ds.CurrentGen, ordinal(-ds.CurrentGen), st.Generation)
	}
	return short, fmt.Sprintf("the generation now is %d", st.Generation)
}

func outputText(o engine.OutputView) string {
	live := "dead"
	if o.Live {
		live = "live"
	}
	s := fmt.Sprintf("%d %s %s %s %s", o.Index, hex(o.Ptr), shape(o.Shape), human(o.Bytes), live)
	if o.Tensor != "" {
		s += " " + o.Tensor
	}
	if o.Alias != "" {
		s += " (alias " + o.Alias + ")"
	}
	return s
}

// outputNames names outputs of the path to node n, given as PyTorch's
// (depth, index) pairs: the name bound to each now, or "#id output i"
// when none is, the node at that depth of n's path, the output i of it.
func outputNames(ds *engine.DeviceState, n *engine.NodeView, xs []engine.OutputIndex) string {
	// The path to n, root first: its ancestors by depth.
	path := make([]*engine.NodeView, n.Depth+1)
	for a := n; a != nil; {
		if a.Depth >= 0 && a.Depth < len(path) {
			path[a.Depth] = a
		}
		if a.Parent < 0 || a.Parent >= len(ds.Nodes) || a.Parent == a.ID {
			break
		}
		a = &ds.Nodes[a.Parent]
	}
	p := make([]string, len(xs))
	for i, x := range xs {
		p[i] = x.String()
		if x.Depth < 0 || x.Depth >= len(path) || path[x.Depth] == nil {
			continue
		}
		at := path[x.Depth]
		p[i] = fmt.Sprintf("#%d output %d", at.ID, x.Index)
		if x.Index >= 0 && x.Index < len(at.Outputs) && at.Outputs[x.Index].Tensor != "" {
			p[i] = at.Outputs[x.Index].Tensor + " (" + p[i] + ")"
		}
	}
	return strings.Join(p, ", ")
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// deltaLines shows the last checkpoint's delta: the blocks it re-allocated
// for live tensors and freed for dead ones.
func deltaLines(snap *snapshot, s Styles, w int) []string {
	var out []string
	if snap.ckpt == nil {
		for _, l := range wrap("No checkpoint yet. The tree manager checkpoints a pool when it leaves a replay to warm up or record: replays do not tell the allocator what they allocate, so it must be told which replay outputs are still live before new allocations are made.", w) {
			out = append(out, s.Dim.Render(l))
		}
		return out
	}
	ev := snap.ckpt
	when := fmt.Sprintf("checkpoint at line %d, dev %d", ev.Line, ev.Device)
	if snap.step != nil && snap.ckptIdx == snap.step.Index {
		when += " (this step)"
	}
	out = append(out, s.Checkpoint.Render(when))
	out = append(out, fmt.Sprintf("pool restored to node #%d's state", ev.Node))
	d := ev.Delta
	if d == nil {
		return append(out, "(no delta)")
	}
	block := func(b engine.DeltaBlock) string {
		return fmt.Sprintf("  %-10s %s %s", orDefault(b.Tensor, "?"), hex(b.Ptr), human(b.Size))
	}
	out = append(out, s.Block[engine.BlockAllocated].Render(fmt.Sprintf("re-allocated for live tensors (%d):", len(d.Reallocated))))
	for _, b := range d.Reallocated {
		out = append(out, block(b))
	}
	// Red says "something died here": a checkpoint that freed nothing is
	// not alarming.
	fs := s.Dim
	if len(d.Freed) > 0 {
		fs = s.Block[engine.BlockStale]
	}
	out = append(out, fs.Render(fmt.Sprintf("freed for dead tensors (%d):", len(d.Freed))))
	for _, b := range d.Freed {
		out = append(out, block(b))
	}
	if len(d.Reallocated) == 0 && len(d.Freed) == 0 {
		out = append(out, s.Dim.Render("  (the pool already matched)"))
	}
	return out
}

// tensorLines is the tensors table: its header and the rows from offset
// on, at most h lines in all (the table may be long: only what shows is
// formatted). It clamps offset to the table. The state and the owner come
// right after the name, so that a narrow pane shows them first; columns
// are as wide as what they hold, and a row wider than the pane scrolls
// sideways by left cells (h/l in the pane). A stale row says "× stale":
// without color it must not read as a live one.
func tensorLines(all []engine.TensorView, s Styles, offset *int, left *int, w, h int) []string {
	if len(all) == 0 {
		return []string{s.Dim.Render("no tensors")}
	}
	rows := max(h-1, 1)
	*offset = min(max(*offset, 0), max(len(all)-rows, 0))
	vis := all[*offset:min(*offset+rows, len(all))]
	cells := make([][6]string, 0, len(vis)+1)
	cells = append(cells, [6]string{"name", "state", "owner", "pool", "shape", "address"})
	for _, t := range vis {
		name := strings.Join(t.Names, ",")
		if name == "" {
			name = fmt.Sprintf("<t%d>", t.ID)
		}
		state := "● live"
		if t.State == engine.TensorStale {
			state = "× stale"
		}
		cells = append(cells, [6]string{name, state, t.Owner, t.Pool, shape(t.Shape), hex(t.Ptr)})
	}
	var widths [6]int
	for _, c := range cells {
		for i, x := range c {
			widths[i] = max(widths[i], ansi.StringWidth(x))
		}
	}
	widths[0] = min(widths[0], 24)
	total := 0
	for _, x := range widths {
		total += x + 1
	}
	*left = min(max(*left, 0), max(total-w, 0))
	out := make([]string, 0, len(cells))
	for r, c := range cells {
		var b strings.Builder
		for i, x := range c {
			if i == 0 && ansi.StringWidth(x) > widths[0] {
				x = ansi.Truncate(x, widths[0], "…")
			}
			b.WriteString(x)
			b.WriteString(strings.Repeat(" ", widths[i]-ansi.StringWidth(x)+1))
		}
		line := b.String()
		if *left > 0 {
			line = "«" + ansi.Cut(line, *left+1, total)
		}
		if total-*left > w {
			line = ansi.Truncate(line, w-1, "") + "»"
		}
		switch {
		case r == 0:
			line = s.Bold.Render(line)
		case vis[r-1].State == engine.TensorStale:
			line = s.Block[engine.BlockStale].Render(line)
		}
		out = append(out, line)
	}
	return out
}

// ordinal is 1st, 2nd, 3rd, 4th, ….
func ordinal(n int) string {
	suf := "th"
	if n%100 < 11 || n%100 > 13 {
		switch n % 10 {
		case 1:
			suf = "st"
		case 2:
			suf = "nd"
		case 3:
			suf = "rd"
		}
	}
	return fmt.Sprintf("%d%s", n, suf)
}

// sharedOutputs flags the silent overwrite of the steady state: a call
// whose replay handed back the cached output object that an older name
// still holds. Both names are one tensor; the replay rewrote it, so the
// older name's values changed without the overwritten error.
// The snapshot keeps the state's candidates, so that a step costs no pass
// over every tensor.
func sharedOutputs(snap *snapshot, rec *traces.Record) []string {
	if rec == nil || rec.Op != traces.OpCall || len(rec.Out) == 0 || snap.state == nil {
		return nil // nothing to find: no need to index the state
	}
	var out []string
	for _, so := range sessions.SharedOutputsAmong(snap.state, rec, snap.tensors().multi) {
		out = append(out, fmt.Sprintf("%s is the same cached object as %s (one tensor, made at line %d): this replay rewrote it in place, so %s changed too, silently — the steady state raises no overwritten error",
			joinAnd(so.Mine), joinAnd(so.Others), so.Line, joinAnd(so.Others)))
	}
	return out
}
