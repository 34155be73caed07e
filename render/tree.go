package render

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/cgtviz/cgtviz/engine"
)

// DefaultMaxNodes is the node limit TreeDOT applies when TreeOptions.MaxNodes
// is zero. Graphviz lays out 2,000 nodes in well under a second; far past
// that the picture is unreadable and the layout time grows quickly.
const DefaultMaxNodes = 2000

// StepAction says what the highlighted step did to its node.
type StepAction string

// The actions a step can be highlighted with.
const (
	StepNone         StepAction = ""
	StepRecorded     StepAction = "recorded"
	StepReplayed     StepAction = "replayed"
	StepWarmed       StepAction = "warmed"
	StepCheckpointed StepAction = "checkpointed"
)

// TreeOptions choose what TreeDOT draws. The zero value draws every device's
// whole tree top to bottom with no step highlighted.
type TreeOptions struct {
	// RankDir is "TB" (top to bottom, the default when empty) or "LR".
	RankDir string
	// MaxNodes is the most graph nodes the export may hold; 0 means
	// DefaultMaxNodes. Past it TreeDOT returns an error rather than a
	// picture nobody can read.
	MaxNodes int
	// Subtree limits the export to the subtree of graph id Root on device
	// Device. Without it every device is drawn.
	Subtree bool
	Device  int
	Root    int
	// OneDevice draws only device Device's tree, all of it (Subtree
	// draws one node's subtree).
	OneDevice bool
	// Title is an optional first line of the graph's caption (a trace name).
	Title string
	// NodeLinks, when set, links each graph node to NodeLinks followed by
	// "d<device>-<graph id>" (cgtviz report's "#n-" links node 3 of
	// device 0 to "#n-d0-3", its row in the page). Only links of letters,
	// digits and "#-_./:" are written; DOT needs no quoting for them.
	NodeLinks string

	// The step to highlight: StepAction on node StepNode of device
	// StepDevice (for StepWarmed, the device's current warmup node).
	// StepCheckpoint says the allocator was checkpointed during the step,
	// restoring node StepCheckpointNode's state. SetStep fills these from
	// an engine.Step. StepAction "" highlights nothing.
	StepAction         StepAction
	StepDevice         int
	StepNode           int
	StepCheckpoint     bool
	StepCheckpointNode int
	// StepText describes the step in the caption ("line 33: call fee").
	StepText string
	// StepLine is the trace line of that step, which the caption says the
	// picture is after (0: none given).
	StepLine int
}

// Colours of the tree picture; the legend uses the same ones.
const (
	colorBorder   = "gray35"
	colorPath     = "#1f6feb"
	fillCurrent   = "#dbeafe"
	fillRecorded  = "#fde68a"
	fillReplayed  = "#bbf7d0"
	fillWarmed    = "#fef9c3"
	fillCheckpt   = "#fecaca"
	colorWarmup   = "gray45"
	colorEdge     = "gray30"
	maxEdgeFailed = 3 // invariant failures listed on one edge
	maxEdgeDead   = 4 // expected-dead outputs listed on one edge
)

func stepFill(a StepAction) string {
	switch a {
	case StepRecorded:
		return fillRecorded
	case StepReplayed:
		return fillReplayed
	case StepWarmed:
		return fillWarmed
	case StepCheckpointed:
		return fillCheckpt
	}
	return "white"
}

// devTree indexes one device's nodes by graph id, because views are listed
// by id but a hand-made or future state need not keep Nodes[i].ID == i.
type devTree struct {
	dev  *engine.DeviceState
	byID map[int]*engine.NodeView
}

func indexDevice(d *engine.DeviceState) (devTree, error) {
	t := devTree{dev: d, byID: make(map[int]*engine.NodeView, len(d.Nodes))}
	for i := range d.Nodes {
		n := &d.Nodes[i]
		if _, dup := t.byID[n.ID]; dup {
			return t, fmt.Errorf("device %d lists node #%d twice", d.Index, n.ID)
		}
		t.byID[n.ID] = n
	}
	return t, nil
}

// subtree returns the graph ids under root (root included) in depth-first
// order of Children. A child that does not exist is an error: the state is
// malformed and a picture would hide it.
func (t devTree) subtree(root int) ([]int, error) {
	if _, ok := t.byID[root]; !ok {
		return nil, fmt.Errorf("device %d has no node #%d (it has %d nodes)", t.dev.Index, root, len(t.dev.Nodes))
	}
	var out []int
	seen := map[int]bool{}
	stack := []int{root}
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[id] {
			continue
		}
		seen[id] = true
		out = append(out, id)
		n := t.byID[id]
		for i := len(n.Children) - 1; i >= 0; i-- {
			c := n.Children[i]
			if _, ok := t.byID[c]; !ok {
				return nil, fmt.Errorf("device %d: node #%d lists child #%d, which does not exist", t.dev.Index, id, c)
			}
			stack = append(stack, c)
		}
	}
	return out, nil
}

// TreeDOT draws the CUDAGraph trees of st as Graphviz DOT: one cluster per
// device, one box per recorded node (graph id, function, replays, outputs
// live and dead), an edge from each node's parent labelled with why the
// node was recorded and which liveness pattern it expects, the current
// path's warmup chain as dashed boxes, the current path and the step's node
// highlighted, and a legend. The text is deterministic: ids and order come
// from graph ids and the views' own order, never from map iteration.
func TreeDOT(st *engine.State, opts TreeOptions) ([]byte, error) {
	if st == nil {
		return nil, fmt.Errorf("render: tree: no state")
	}
	rankdir := strings.ToUpper(opts.RankDir)
	switch rankdir {
	case "":
		rankdir = "TB"
	case "TB", "LR":
	default:
		return nil, fmt.Errorf("render: tree: rank direction %q: want TB or LR", opts.RankDir)
	}
	limit := opts.MaxNodes
	if limit < 0 {
		return nil, fmt.Errorf("render: tree: node limit %d: want a positive number, or 0 for the default", limit)
	}
	if limit == 0 {
		limit = DefaultMaxNodes
	}

	// Choose the devices and, per device, the graph ids to draw.
	type part struct {
		t   devTree
		ids []int
	}
	var parts []part
	total := 0
	for i := range st.Devices {
		d := &st.Devices[i]
		if (opts.Subtree || opts.OneDevice) && d.Index != opts.Device {
			continue
		}
		t, err := indexDevice(d)
		if err != nil {
			return nil, fmt.Errorf("render: tree: %w", err)
		}
		var ids []int
		if opts.Subtree {
			if ids, err = t.subtree(opts.Root); err != nil {
				return nil, fmt.Errorf("render: tree: %w", err)
			}
		} else {
			ids = make([]int, len(d.Nodes))
			for j := range d.Nodes {
				ids[j] = d.Nodes[j].ID
			}
		}
		total += len(ids)
		parts = append(parts, part{t, ids})
	}
	if (opts.Subtree || opts.OneDevice) && len(parts) == 0 {
		return nil, fmt.Errorf("render: tree: no device %d (the state has %d)", opts.Device, len(st.Devices))
	}
	if total > limit {
		return nil, fmt.Errorf("tree has %s nodes; over the limit of %s: export a subtree with --node ID or raise --max-nodes",
			thousands(total), thousands(limit))
	}

	var b bytes.Buffer
	b.WriteString("digraph cgt {\n")
	fmt.Fprintf(&b, "\tgraph [rankdir=%s fontname=\"Courier\" fontsize=12 labelloc=t labeljust=l nodesep=0.3 ranksep=0.45 label=%s];\n",
		rankdir, leftLabel(caption(st, opts)...))
	fmt.Fprintf(&b, "\tnode [shape=box style=\"rounded,filled\" fillcolor=white color=%q fontname=\"Courier\" fontsize=10];\n", colorBorder)
	fmt.Fprintf(&b, "\tedge [color=%q fontname=\"Courier\" fontsize=9 fontcolor=\"gray20\"];\n", colorEdge)
	writeLegend(&b, opts.StepAction)
	for _, p := range parts {
		writeDevice(&b, st, p.t, p.ids, opts)
	}
	b.WriteString("}\n")
	return b.Bytes(), nil
}

// caption is the graph's label: what is drawn, and at which step.
func caption(st *engine.State, opts TreeOptions) []string {
	var lines []string
	if opts.Title != "" {
		lines = append(lines, cut(opts.Title, maxTitleRunes))
	}
	what := "CUDAGraph tree"
	if opts.Subtree {
		what = fmt.Sprintf("CUDAGraph subtree of #%d on device %d", opts.Root, opts.Device)
	}
	// One numbering (docs/tui.md): positions are trace lines, never counts
	// of records.
	when := fmt.Sprintf("after line %d", opts.StepLine)
	switch {
	case opts.StepLine > 0:
	case st.Step == 0:
		when = "at the start"
	default:
		when = fmt.Sprintf("after %d records", st.Step)
	}
	lines = append(lines, fmt.Sprintf("%s %s (generation %d, mark_steps %d)", what, when, st.Generation, st.MarkSteps))
	if opts.StepText != "" {
		lines = append(lines, opts.StepText)
	}
	return lines
}

// writeLegend draws a small cluster explaining the styles: one HTML-table
// node, so the legend adds a single node and no edges to the picture. Its
// text is fixed (and the step action one of the StepAction constants), so
// nothing in it needs HTML escaping.
func writeLegend(b *bytes.Buffer, step StepAction) {
	b.WriteString("\tsubgraph cluster_legend {\n")
	b.WriteString("\t\tlabel=\"legend\" style=\"rounded\" color=\"gray70\";\n")
	b.WriteString("\t\tlegend [shape=plaintext style=\"\" fontsize=9 label=<<TABLE BORDER=\"0\" CELLBORDER=\"1\" CELLSPACING=\"4\" CELLPADDING=\"3\">")
	b.WriteString("<TR><TD STYLE=\"rounded\">#id function<BR/>replays<BR/>outputs live/dead</TD></TR>")
	fmt.Fprintf(b, "<TR><TD STYLE=\"rounded\" COLOR=\"%s\" BORDER=\"2\">current path</TD></TR>", colorPath)
	fmt.Fprintf(b, "<TR><TD STYLE=\"rounded\" COLOR=\"%s\" BORDER=\"3\" BGCOLOR=\"%s\">current node</TD></TR>", colorPath, fillCurrent)
	if step != StepNone {
		fmt.Fprintf(b, "<TR><TD STYLE=\"rounded\" BGCOLOR=\"%s\">this step: %s</TD></TR>", stepFill(step), htmlEsc(string(step)))
	}
	fmt.Fprintf(b, "<TR><TD STYLE=\"rounded,dashed\" COLOR=\"%s\">warmup (eager, in pool)</TD></TR>", colorWarmup)
	b.WriteString("</TABLE>>];\n\t}\n")
}

// writeDevice draws one device's cluster.
func writeDevice(b *bytes.Buffer, st *engine.State, t devTree, ids []int, opts TreeOptions) {
	d := t.dev
	pre := "d" + strconv.Itoa(d.Index) + "_"
	fmt.Fprintf(b, "\tsubgraph cluster_dev%d {\n", d.Index)
	head := fmt.Sprintf("device %d: %s", d.Index, d.Name)
	cur := "none"
	switch {
	case d.Current >= 0:
		cur = "#" + strconv.Itoa(d.Current)
	case d.CurrentWarmup != 0:
		cur = "warmup " + strconv.Itoa(d.CurrentWarmup)
	}
	sub := fmt.Sprintf("path %s, current %s, checkpoints: %d", d.PathState, cur, d.Checkpoints)
	fmt.Fprintf(b, "\t\tlabel=%s style=\"rounded\" color=\"gray60\";\n", label(head, sub))
	// The start point stands for the device's tree manager: roots hang
	// from it, so that a root's edge can say why it became a root, and the
	// cluster is never empty (Graphviz drops empty clusters).
	fmt.Fprintf(b, "\t\t%sstart [shape=point width=0.12 color=%q];\n", pre, colorBorder)

	in := make(map[int]bool, len(ids))
	for _, id := range ids {
		in[id] = true
	}
	stepHere := opts.StepAction != StepNone && opts.StepDevice == d.Index
	for _, id := range ids {
		n := t.byID[id]
		lines := []string{
			fmt.Sprintf("#%d %s", n.ID, short(n.Fn)),
			fmt.Sprintf("replays: %d", n.Replays),
			outputsLine(n.Outputs),
		}
		color, pen, fill := "", "", ""
		if n.OnPath {
			color, pen = colorPath, "2"
		}
		if n.Current {
			lines = append(lines, "current node")
			pen, fill = "3", fillCurrent
		}
		if stepHere && opts.StepAction != StepWarmed && opts.StepNode == n.ID {
			lines = append(lines, "this step: "+string(opts.StepAction))
			fill = stepFill(opts.StepAction)
		}
		if stepHere && opts.StepCheckpoint && opts.StepCheckpointNode == n.ID && opts.StepAction != StepCheckpointed {
			lines = append(lines, "checkpoint restored")
		}
		attrs := ""
		if color != "" {
			attrs += fmt.Sprintf(" color=%q", color)
		}
		if pen != "" {
			attrs += " penwidth=" + pen
		}
		if fill != "" {
			attrs += fmt.Sprintf(" fillcolor=%q", fill)
		}
		if opts.NodeLinks != "" {
			if u := opts.NodeLinks + "d" + strconv.Itoa(d.Index) + "-" + strconv.Itoa(n.ID); plainURL(u) {
				attrs += fmt.Sprintf(" URL=%q", u)
			}
		}
		fmt.Fprintf(b, "\t\t%sn%d [label=%s%s];\n", pre, n.ID, label(lines...), attrs)
	}
	for _, id := range ids {
		n := t.byID[id]
		from := pre + "start"
		if n.Parent >= 0 && in[n.Parent] {
			from = pre + "n" + strconv.Itoa(n.Parent)
		}
		attrs := ""
		if n.OnPath {
			attrs = fmt.Sprintf(" color=%q penwidth=2", colorPath)
		}
		fmt.Fprintf(b, "\t\t%s -> %sn%d [label=%s%s];\n", from, pre, n.ID, label(edgeLines(t, n)...), attrs)
	}
	writeWarmups(b, t, in, pre, opts, stepHere)
	b.WriteString("\t}\n")
}

// writeWarmups draws the current path's warmup chain as dashed boxes. In a
// subtree export only warmups hanging below the subtree are drawn.
func writeWarmups(b *bytes.Buffer, t devTree, in map[int]bool, pre string, opts TreeOptions, stepHere bool) {
	d := t.dev
	drawn := map[int]bool{}
	wid := func(id int) string { return pre + "w" + strconv.Itoa(-id) }
	for _, w := range d.Warmups {
		var from string
		switch {
		case w.Parent == engine.NoParent:
			if opts.Subtree {
				continue
			}
			from = pre + "start"
		case w.Parent < 0:
			if !drawn[w.Parent] {
				continue
			}
			from = wid(w.Parent)
		default:
			if !in[w.Parent] {
				continue
			}
			from = pre + "n" + strconv.Itoa(w.Parent)
		}
		if drawn[w.ID] || w.ID >= 0 {
			continue // a malformed chain: warmup ids are negative and unique
		}
		drawn[w.ID] = true
		lines := []string{
			fmt.Sprintf("warmup %d %s", w.ID, short(w.Fn)),
			fmt.Sprintf("line %d", w.Line),
			outputsLine(w.Outputs),
		}
		if w.Failed {
			// PyTorch 2.11 keeps a warmup whose run raised on the path.
			lines = append(lines, "its run raised (handoff raise)")
		}
		attrs := ""
		if d.CurrentWarmup == w.ID {
			lines = append(lines, "current node")
			attrs = fmt.Sprintf(" penwidth=2 fillcolor=%q", fillCurrent)
			if stepHere && opts.StepAction == StepWarmed {
				lines = append(lines, "this step: warmed")
				attrs = fmt.Sprintf(" penwidth=2 fillcolor=%q", fillWarmed)
			}
		}
		fmt.Fprintf(b, "\t\t%s [label=%s style=\"rounded,dashed,filled\" color=%q%s];\n", wid(w.ID), label(lines...), colorWarmup, attrs)
		fmt.Fprintf(b, "\t\t%s -> %s [style=dashed color=%q label=\"warmup\"];\n", from, wid(w.ID), colorWarmup)
	}
}

// outputsLine counts live and dead outputs ("outputs: 2 live, 1 dead").
func outputsLine(outs []engine.OutputView) string {
	live := 0
	for _, o := range outs {
		if o.Live {
			live++
		}
	}
	return fmt.Sprintf("outputs: %d live, %d dead", live, len(outs)-live)
}

// edgeLines say why n was recorded: the cause, the invariant failures of
// the siblings it replaced, and the liveness pattern a replay of n
// expects (its expected dead indices), named where the path still names
// those outputs.
func edgeLines(t devTree, n *engine.NodeView) []string {
	lines := []string{n.Cause.String()}
	// What the engine knows beyond the cause (a graph-break resume
	// function, a backward, a recompile), as the log and the report say
	// it; a def's first recording says nothing the node's label does not.
	if note := n.Origin.Note(n.Fn, engine.EvRecord, n.Cause); note != "" && !strings.HasPrefix(note, "the first recording of ") {
		lines = append(lines, wrapWords(note, maxEdgeWidth)...)
	}
	for i, f := range n.Failures {
		if i == maxEdgeFailed {
			lines = append(lines, fmt.Sprintf("+%d more failed", len(n.Failures)-i))
			break
		}
		lines = append(lines, failureLines(f)...)
	}
	if len(n.ExpectedDeadBefore) > 0 {
		var parts []string
		for i, o := range n.ExpectedDeadBefore {
			if i == maxEdgeDead {
				parts = append(parts, fmt.Sprintf("+%d more", len(n.ExpectedDeadBefore)-i))
				break
			}
			p := o.String()
			if name := t.outputName(n, o); name != "" {
				p += " " + name
			}
			parts = append(parts, p)
		}
		lines = append(lines, "expects "+strings.Join(parts, ", ")+" dead")
	}
	return lines
}

// failureLines is the engine's description of an invariant failure in two
// lines, what failed and on what, so edge labels stay narrow.
func failureLines(f engine.InvariantFailure) []string {
	desc := f.Describe()
	head := fmt.Sprintf("#%d: %s", f.Node, f.Status)
	if rest, ok := strings.CutPrefix(desc, head+": "); ok {
		return []string{head + ":", "  " + rest}
	}
	return []string{desc}
}

// outputName finds the trace name of output o on n's path: the ancestor of
// n at depth o.Depth, its output o.Index. It returns "" when the path or
// the name is unknown.
func (t devTree) outputName(n *engine.NodeView, o engine.OutputIndex) string {
	cur := n
	for steps := 0; cur != nil && steps <= len(t.dev.Nodes); steps++ {
		if cur.Depth == o.Depth {
			if o.Index >= 0 && o.Index < len(cur.Outputs) {
				return short(cur.Outputs[o.Index].Tensor)
			}
			return ""
		}
		if cur.Parent < 0 {
			return ""
		}
		cur = t.byID[cur.Parent]
	}
	return ""
}

// plainURL reports whether u is a non-empty URL of letters, digits and
// "#-_./:" only: written between quotes in DOT (and by Graphviz into SVG)
// it needs no escaping anywhere.
func plainURL(u string) bool {
	if u == "" {
		return false
	}
	for _, c := range u {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("#-_./:", c)
		if !ok {
			return false
		}
	}
	return true
}

// maxEdgeWidth is the widest line of an edge label's note, in characters:
// about the width of a node, so that edges stay narrow.
const maxEdgeWidth = 36

// wrapWords breaks s at spaces into lines of at most w characters (a
// longer word takes a line of its own).
func wrapWords(s string, w int) []string {
	var lines []string
	cur := ""
	for _, word := range strings.Fields(s) {
		switch {
		case cur == "":
			cur = word
		case len(cur)+1+len(word) <= w:
			cur += " " + word
		default:
			lines = append(lines, cur)
			cur = word
		}
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	return lines
}
