package render

import (
	"fmt"
	"strings"

	"github.com/cgtviz/cgtviz/engine"
)

// TreeText draws device dev's tree as indented text, one node a line:
//
//	#0 foo (replays 3) [path]
//	├─ #1 fee (replays 1)
//	└─ #2 fee (replays 1) [current]
//
// Roots come in the device's Roots order, children in their Children
// order; the current path's warmup nodes appear as "~ warmup -1 foo" lines
// under their parent. It is the fallback of the CLI and of a terminal too
// small for the graph, so it never fails: a missing device or an empty
// tree gives one explanatory line.
func TreeText(st *engine.State, dev int) string {
	if st == nil {
		return "(no state)\n"
	}
	var d *engine.DeviceState
	for i := range st.Devices {
		if st.Devices[i].Index == dev {
			d = &st.Devices[i]
		}
	}
	if d == nil {
		return fmt.Sprintf("(no device %d: the state has %d)\n", dev, len(st.Devices))
	}
	t := devTree{dev: d, byID: make(map[int]*engine.NodeView, len(d.Nodes))}
	for i := range d.Nodes {
		if _, dup := t.byID[d.Nodes[i].ID]; !dup {
			t.byID[d.Nodes[i].ID] = &d.Nodes[i]
		}
	}
	// Warmups hang below a graph node, below another warmup, or at the top.
	warm := map[int][]engine.WarmupView{}
	for _, w := range d.Warmups {
		warm[w.Parent] = append(warm[w.Parent], w)
	}

	tw := textWriter{t: t, warm: warm, seen: map[int]bool{}}
	roots := d.Roots
	if len(roots) == 0 {
		// A hand-made state may list no roots: fall back to parentless nodes.
		for i := range d.Nodes {
			if d.Nodes[i].Parent < 0 {
				roots = append(roots, d.Nodes[i].ID)
			}
		}
	}
	for _, r := range roots {
		tw.node(r, "", "")
	}
	for _, w := range warm[engine.NoParent] {
		tw.warmup(w, "", "")
	}
	if tw.b.Len() == 0 {
		return "(no graphs recorded)\n"
	}
	return tw.b.String()
}

type textWriter struct {
	b    strings.Builder
	t    devTree
	warm map[int][]engine.WarmupView
	seen map[int]bool // guards against cycles in malformed states
}

// node writes graph id id after lead (the connector of this line) and its
// children with indent prefix.
func (w *textWriter) node(id int, lead, prefix string) {
	n, ok := w.t.byID[id]
	if !ok || w.seen[id] {
		return
	}
	w.seen[id] = true
	fmt.Fprintf(&w.b, "%s#%d %s (replays %d)", lead, n.ID, n.Fn, n.Replays)
	switch {
	case n.Current:
		w.b.WriteString(" [current]")
	case n.OnPath:
		w.b.WriteString(" [path]")
	}
	w.b.WriteByte('\n')
	type kid struct {
		id int
		w  *engine.WarmupView
	}
	var kids []kid
	for _, c := range n.Children {
		if _, ok := w.t.byID[c]; ok && !w.seen[c] {
			kids = append(kids, kid{id: c})
		}
	}
	for i := range w.warm[id] {
		kids = append(kids, kid{w: &w.warm[id][i]})
	}
	for i, k := range kids {
		l, p := branch(prefix, i == len(kids)-1)
		if k.w != nil {
			w.warmup(*k.w, l, p)
		} else {
			w.node(k.id, l, p)
		}
	}
}

// warmup writes one warmup line and the warmups chained below it.
func (w *textWriter) warmup(v engine.WarmupView, lead, prefix string) {
	if v.ID >= 0 || w.seen[v.ID] {
		return
	}
	w.seen[v.ID] = true
	fmt.Fprintf(&w.b, "%s~ warmup %d %s (line %d)", lead, v.ID, v.Fn, v.Line)
	if v.Failed {
		w.b.WriteString(" [raised]")
	}
	if w.t.dev.CurrentWarmup == v.ID {
		w.b.WriteString(" [current]")
	}
	w.b.WriteByte('\n')
	kids := w.warm[v.ID]
	for i := range kids {
		l, p := branch(prefix, i == len(kids)-1)
		w.warmup(kids[i], l, p)
	}
}

// branch returns the connector of a child line and the prefix of its own
// children.
func branch(prefix string, last bool) (lead, next string) {
	if last {
		return prefix + "└─ ", prefix + "   "
	}
	return prefix + "├─ ", prefix + "│  "
}
