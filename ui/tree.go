package ui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/cgtviz/cgtviz/engine"
)

// maxIndent is the deepest level drawn with connectors; deeper nodes show
// their depth instead, so that a chain of thousands of nodes costs linear
// time and width.
const maxIndent = 24

// treeKind says what a line of the tree pane shows.
type treeKind uint8

const (
	treeDevice treeKind = iota // a device header
	treeNode                   // a recorded graph node
	treeWarmup                 // a warmup node of the current path
)

// treeLine is one line of the tree pane.
type treeLine struct {
	kind treeKind
	dev  int
	id   int // graph id, or warmup id (negative)
	// indent, last and depth make the node's connector prefix (prefix),
	// made only for the lines drawn: a tree of thousands of nodes is
	// rebuilt at each step and shows a screenful.
	indent string
	last   bool
	depth  int
	hidden int // descendants hidden by a fold
}

// prefix is what precedes a node's mark: the connectors of its ancestors
// and its own, or its depth past maxIndent.
func (l treeLine) prefix() string {
	switch {
	case l.depth == 0:
		return ""
	case l.depth > maxIndent:
		return fmt.Sprintf("┆d%d ", l.depth)
	case l.last:
		return l.indent + "└─ "
	}
	return l.indent + "├─ "
}

// nodeKey names a node across devices.
type nodeKey struct{ dev, id int }

// treePane shows every device's tree of recorded nodes, the current path
// and warmup chain, and what the last step did to which node.
type treePane struct {
	scroll
	folded map[nodeKey]bool
	lines  []treeLine
	did    map[nodeKey]string // what the last step did to a node
}

// rebuild recomputes the lines from a state and the last step.
func (p *treePane) rebuild(st *engine.State, step *engine.Step) {
	if p.folded == nil {
		p.folded = map[nodeKey]bool{}
	}
	p.did = map[nodeKey]string{}
	if step != nil {
		for _, ev := range step.Events {
			switch ev.Kind {
			case engine.EvRecord:
				p.did[nodeKey{ev.Device, ev.Node}] = "recorded"
			case engine.EvReplay:
				p.did[nodeKey{ev.Device, ev.Node}] = "replayed"
			case engine.EvWarmup:
				p.did[nodeKey{ev.Device, ev.WarmupID}] = "warmed up"
			case engine.EvCheckpoint:
				k := nodeKey{ev.Device, ev.Node}
				if p.did[k] == "" {
					p.did[k] = "checkpointed"
				}
			}
		}
	}
	p.lines = p.lines[:0]
	if st == nil {
		return
	}
	for d := range st.Devices {
		ds := &st.Devices[d]
		p.lines = append(p.lines, treeLine{kind: treeDevice, dev: d, id: -1})
		for i, r := range ds.Roots {
			p.walk(ds, d, r, "", i == len(ds.Roots)-1, 0)
		}
		for _, w := range ds.Warmups {
			p.lines = append(p.lines, treeLine{kind: treeWarmup, dev: d, id: w.ID})
		}
	}
}

// walk appends node id and, unless folded, its subtree.
func (p *treePane) walk(ds *engine.DeviceState, dev, id int, indent string, last bool, depth int) {
	if id < 0 || id >= len(ds.Nodes) {
		return
	}
	n := &ds.Nodes[id]
	line := treeLine{kind: treeNode, dev: dev, id: id, indent: indent, last: last, depth: depth}
	if p.folded[nodeKey{dev, id}] {
		line.hidden = countDescendants(ds, id)
		p.lines = append(p.lines, line)
		return
	}
	p.lines = append(p.lines, line)
	next := indent
	if depth > 0 && depth <= maxIndent {
		if last {
			next += "   "
		} else {
			next += "│  "
		}
	}
	for i, c := range n.Children {
		p.walk(ds, dev, c, next, i == len(n.Children)-1, depth+1)
	}
}

func countDescendants(ds *engine.DeviceState, id int) int {
	n := 0
	stack := append([]int(nil), ds.Nodes[id].Children...)
	for len(stack) > 0 {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if c < 0 || c >= len(ds.Nodes) {
			continue
		}
		n++
		stack = append(stack, ds.Nodes[c].Children...)
	}
	return n
}

// selected returns the line under the cursor.
func (p *treePane) selected() (treeLine, bool) {
	if p.cursor < 0 || p.cursor >= len(p.lines) {
		return treeLine{}, false
	}
	return p.lines[p.cursor], true
}

// selectNode moves the cursor to a node's line when it is visible.
func (p *treePane) selectNode(dev, id int) {
	for i, l := range p.lines {
		if l.kind != treeDevice && l.dev == dev && l.id == id {
			p.cursor = i
			return
		}
	}
}

// toggle folds or unfolds the node under the cursor.
func (p *treePane) toggle() {
	l, ok := p.selected()
	if !ok || l.kind != treeNode {
		return
	}
	k := nodeKey{l.dev, l.id}
	p.folded[k] = !p.folded[k]
}

// draw renders the visible lines.
func (p *treePane) draw(st *engine.State, s Styles, w, h int, focused bool) []string {
	p.clamp(len(p.lines), h)
	if st == nil || len(p.lines) == 0 {
		return []string{"(no state)"}
	}
	out := make([]string, 0, h)
	for i := p.offset; i < len(p.lines) && len(out) < h; i++ {
		l := p.lines[i]
		ds := &st.Devices[l.dev]
		var b strings.Builder
		sel := i == p.cursor
		if sel {
			b.WriteString("›")
		} else {
			b.WriteString(" ")
		}
		switch l.kind {
		case treeDevice:
			fmt.Fprintf(&b, "dev %d %s · %s", l.dev, ds.Name, ds.PathState)
			if len(ds.Nodes) == 0 && len(ds.Warmups) == 0 {
				b.WriteString(" · no graphs yet")
			}
			line := s.Bold.Render(b.String())
			out = append(out, p.selStyle(line, sel, focused, s, w))
		case treeNode:
			n := &ds.Nodes[l.id]
			mark := " "
			ns := s.Normal
			switch {
			case n.Current:
				mark, ns = "●", s.Current
			case n.OnPath:
				mark, ns = "○", s.OnPath
			}
			b.WriteString(mark + " " + l.prefix())
			label := fmt.Sprintf("#%d %s", n.ID, n.Fn)
			text := b.String() + ns.Render(label)
			if n.Replays > 0 {
				text += s.Dim.Render(fmt.Sprintf(" ×%d", n.Replays))
			}
			if l.hidden > 0 {
				text += fmt.Sprintf(" [+%d]", l.hidden)
			}
			if d := p.did[nodeKey{l.dev, l.id}]; d != "" {
				text += " " + s.Did.Render("← "+d)
			}
			out = append(out, p.selStyle(text, sel, focused, s, w))
		case treeWarmup:
			var wv *engine.WarmupView
			for j := range ds.Warmups {
				if ds.Warmups[j].ID == l.id {
					wv = &ds.Warmups[j]
				}
			}
			mark := " "
			if ds.CurrentWarmup == l.id {
				mark = "●"
			}
			text := b.String() + mark + " " + s.Warmup.Render("warmup of "+fnOf(wv))
			if wv != nil && wv.Failed {
				text += " " + s.Err.Render("✗ raised")
			}
			if d := p.did[nodeKey{l.dev, l.id}]; d != "" {
				text += " " + s.Did.Render("← "+d)
			}
			out = append(out, p.selStyle(text, sel, focused, s, w))
		}
	}
	return out
}

func fnOf(w *engine.WarmupView) string {
	if w == nil {
		return "?"
	}
	return w.Fn
}

// selStyle highlights the cursor line of the focused pane.
func (p *treePane) selStyle(line string, sel, focused bool, s Styles, w int) string {
	if sel && focused {
		return s.Selected.Render(fit(stripped(line), w))
	}
	return line
}

// The tree as a component: enter folds, and y copies the selected node's
// details.

func (p *treePane) title(*paneCtx) string { return paneTitles[paneTree] }

func (p *treePane) view(c *paneCtx, w, h int, focused bool) []string {
	return p.draw(c.snap.state, *c.styles, w, h, focused)
}

func (p *treePane) keys(km *KeyMap) []key.Binding { return []key.Binding{km.Tree.Fold} }

func (p *treePane) onKey(c *paneCtx, k tea.KeyPressMsg) (tea.Cmd, bool) {
	if !key.Matches(k, c.keys.Tree.Fold) {
		return nil, false
	}
	p.toggle()
	p.rebuild(c.snap.state, c.snap.step)
	return nil, true
}

func (p *treePane) scrollBy(_ *paneCtx, d int) { p.cursor = clampAdd(p.cursor, d, len(p.lines)) }

func (p *treePane) text(c *paneCtx, w int) paneText {
	saved := p.scroll
	p.offset = 0
	lines := p.draw(c.snap.state, *c.styles, w, len(p.lines), false)
	p.scroll = saved
	return linesText(plainLines(lines))
}

func (p *treePane) selection(c *paneCtx, _ int) string {
	l, ok := p.selected()
	if !ok {
		return ""
	}
	return selectionOf(nodeLines(c.snap.state, l, nil, *c.styles, 1<<16))
}

func (p *treePane) at() int                { return p.cursor }
func (p *treePane) show(_ *paneCtx, i int) { p.cursor = i }

// cursorRow is the cursor's row in the body, drawn reversed already.
func (p *treePane) cursorRow() int { return p.cursor - p.offset }
