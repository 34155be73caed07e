package ui

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/sessions"
	"github.com/cgtviz/cgtviz/traces"
)

// pane names a pane; the numbers people press are pane+1.
type pane int

const (
	paneTree pane = iota
	panePool
	paneDelta
	paneTrace
	paneDetails
	paneTensors
	numPanes
)

var paneTitles = [numPanes]string{"Tree", "Pool", "Checkpoint delta", "Trace", "Details", "Tensors"}

// component is a pane as the root model sees it. A pane owns its cursor
// and scroll, the keys of its section of the KeyMap, its view and its
// text; the root owns the layout, the focus and everything that moves the
// session, and hands each pane a paneCtx to read the rest from. The six
// panes are concrete types (treePane, poolPane, deltaPane, tracePane,
// detailsPane, tensorsPane); this interface is only the seam the root
// routes keys, frames, search and copy through.
type component interface {
	// title is the pane's title after its number ("3 Checkpoint delta").
	title(c *paneCtx) string
	// view draws the pane's body, at most h lines of width w.
	view(c *paneCtx, w, h int, focused bool) []string
	// keys are the bindings the pane answers when focused, beyond
	// scrolling (which every pane answers).
	keys(km *KeyMap) []key.Binding
	// onKey handles a key when the pane has the focus; false leaves it to
	// the root. It runs in Update: a pane asks the root for a move
	// through c, never runs one itself.
	onKey(c *paneCtx, k tea.KeyPressMsg) (tea.Cmd, bool)
	// scrollBy moves the cursor of a list, or the first line of a text.
	scrollBy(c *paneCtx, d int)
	// text is every line the pane shows at width w, without styles, for
	// search. It is called in Update and must not read the trace file:
	// what it needs from the file it reads in text.line, which the search
	// calls in its tea.Cmd.
	text(c *paneCtx, w int) paneText
	// selection is what y copies from the pane at width w, without
	// styles.
	selection(c *paneCtx, w int) string
	// at is the line a search starts after; show moves the pane to a
	// match at line i.
	at() int
	show(c *paneCtx, i int)
}

// paneText is a pane's text as search reads it: n lines, line(i) each.
// The search calls line in its tea.Cmd, while the root holds the session
// for it (busy): line may read the trace and the session, and nothing of
// the model that Update or View could change meanwhile.
type paneText struct {
	n    int
	line func(i int) string
}

// linesText is the text of a pane whose lines are already drawn.
func linesText(lines []string) paneText {
	return paneText{n: len(lines), line: func(i int) string { return lines[i] }}
}

// paneCtx is what a pane reads besides its own state: the shown snapshot,
// the trace, the styles and keys, the device shown, the panes it follows,
// and the root's moves it may ask for. The root builds one per call.
type paneCtx struct {
	snap   *snapshot
	recs   records
	styles *Styles
	keys   *KeyMap
	dev    int
	mem    *memChart
	focus  pane
	// tree and trace are the panes the details pane follows (the
	// tree's selection, the trace's cursor), read when it is drawn: after
	// them, once they have clamped their cursors to what they show.
	tree  *treePane
	trace *tracePane
	// pageH is the body height of the focused pane, for page keys.
	pageH int
	// summary is the session's summary of an executed record, for the
	// trace's text; it may be called only where the session may be used
	// (Update, or a Cmd while the root is busy).
	summary func(i int) (sessions.Summary, bool)
	// runTo asks the root to run to a position (Update only).
	runTo func(target int) tea.Cmd
	// refresh asks the root to re-read the summaries of the trace rows
	// shown (after the trace cursor moved; Update only).
	refresh func()
	// openPrompt asks the root to open a prompt (Update only).
	openPrompt func(*prompt)
}

// ctx is the panes' context in Update: viewCtx, and the root's moves.
func (m *Model) ctx() *paneCtx {
	c := m.viewCtx()
	c.pageH = max(m.layout().rects[m.focus].h-3, 1)
	c.summary, c.runTo, c.refresh, c.openPrompt = m.sess.Summary, m.runTo, m.refresh, m.openPrompt
	return c
}

// viewCtx is the panes' context for drawing: what they read, and no way
// to move the session.
func (m *Model) viewCtx() *paneCtx {
	c := &paneCtx{
		snap:   &m.snap,
		recs:   m.recs,
		styles: &m.styles,
		keys:   &m.keys,
		dev:    m.dev,
		mem:    &m.mem,
		focus:  m.focus,
		tree:   &m.tree,
		trace:  &m.trace,
	}
	return c
}

// component returns pane p as a component.
func (m *Model) component(p pane) component {
	switch p {
	case paneTree:
		return &m.tree
	case panePool:
		return &m.pool
	case paneDelta:
		return &m.delta
	case paneTrace:
		return &m.trace
	case paneDetails:
		return &m.details
	}
	return &m.tensors
}

// scrollKey handles the scroll keys every pane answers: a page is the
// focused pane's height (c.pageH).
func scrollKey(p component, c *paneCtx, k tea.KeyPressMsg) bool {
	sk := &c.keys.Scroll
	switch {
	case key.Matches(k, sk.Up):
		p.scrollBy(c, -1)
	case key.Matches(k, sk.Down):
		p.scrollBy(c, 1)
	case key.Matches(k, sk.PageUp):
		p.scrollBy(c, -c.pageH)
	case key.Matches(k, sk.PageDown):
		p.scrollBy(c, c.pageH)
	case key.Matches(k, sk.Top):
		p.scrollBy(c, -1<<30)
	case key.Matches(k, sk.Bottom):
		p.scrollBy(c, 1<<30)
	default:
		return false
	}
	return true
}

// textPane is the scroll of a pane that shows text (no cursor of its own):
// the delta, the details, the tensors. Its first line is its search
// position.
type textPane struct{ scroll }

func (p *textPane) scrollBy(_ *paneCtx, d int) { textScroll(&p.scroll, d) }
func (p *textPane) at() int                    { return p.offset }
func (p *textPane) show(_ *paneCtx, i int)     { p.offset = i }
func (p *textPane) keys(*KeyMap) []key.Binding { return nil }
func (p *textPane) onKey(*paneCtx, tea.KeyPressMsg) (tea.Cmd, bool) {
	return nil, false
}

// window clamps the scroll to lines and returns the visible ones.
func (p *textPane) window(lines []string, h int) []string { return textWindow(&p.scroll, lines, h) }

// deltaPane shows the last checkpoint's delta (deltaLines).
type deltaPane struct{ textPane }

func (p *deltaPane) title(*paneCtx) string { return paneTitles[paneDelta] }
func (p *deltaPane) view(c *paneCtx, w, h int, _ bool) []string {
	return p.window(deltaLines(c.snap, *c.styles, w), h)
}
func (p *deltaPane) text(c *paneCtx, w int) paneText {
	return linesText(plainLines(deltaLines(c.snap, *c.styles, w)))
}
func (p *deltaPane) selection(c *paneCtx, w int) string {
	return selectionOf(deltaLines(c.snap, *c.styles, w))
}

// detailsPane shows the trace row under the cursor, the step just run and
// the node selected in the tree (detailsLines).
type detailsPane struct {
	textPane
	// full lists every argument of a call and every input of a node;
	// folded (the default), the params are one count (enter toggles).
	full bool
}

func (p *detailsPane) keys(km *KeyMap) []key.Binding { return []key.Binding{km.Details.Expand} }
func (p *detailsPane) onKey(c *paneCtx, k tea.KeyPressMsg) (tea.Cmd, bool) {
	if !key.Matches(k, c.keys.Details.Expand) {
		return nil, false
	}
	p.full = !p.full
	return nil, true
}

func (p *detailsPane) title(*paneCtx) string { return paneTitles[paneDetails] }
func (p *detailsPane) view(c *paneCtx, w, h int, _ bool) []string {
	return p.window(p.lines(c, w), h)
}
func (p *detailsPane) text(c *paneCtx, w int) paneText    { return linesText(plainLines(p.lines(c, w))) }
func (p *detailsPane) selection(c *paneCtx, w int) string { return selectionOf(p.lines(c, w)) }

// lines is the details pane's text: the trace row under the cursor when
// it is not the step's, the step, and the node selected in the tree.
func (p *detailsPane) lines(c *paneCtx, iw int) []string {
	snap, recs, s := c.snap, c.recs, *c.styles
	st := snap.state
	var lines []string
	if cur := c.trace.cursor; cur >= 0 && cur < recs.len() && cur != snap.pos-1 && (cur > 0 || snap.pos > 0) {
		// The trace row under the cursor, whole: the trace pane cuts
		// long rows (expects, notes) at its width.
		r := recs.at(cur)
		lines = append(lines, s.Bold.Render(fmt.Sprintf("cursor: line %d", r.Line)))
		for _, l := range wrap(recordText(r), iw-2) {
			lines = append(lines, "  "+l)
		}
		lines = append(lines, s.Dim.Render("  (enter runs to it; n steps)"), "")
	}
	step := stepLinesFold(snap, recs, s, iw, p.full)
	var node []string
	if l, ok := c.tree.selected(); ok {
		call := callOf(snap, recs, l)
		node = nodeLinesFold(st, l, call, s, iw, p.full)
	}
	// What the user looks at comes first: the node chosen in the focused
	// tree, else the step just run.
	if c.focus == paneTree && len(node) > 0 {
		return append(append(append(lines, node...), ""), step...)
	}
	if len(node) > 0 {
		step = append(append(step, ""), node...)
	}
	return append(lines, step...)
}

// tensorsPane lists the shown state's tensors (tensorLines), a table that
// also scrolls sideways, sorted (o) and filtered (f).
type tensorsPane struct {
	textPane
	// left is how far the table is scrolled sideways.
	left int
	// order is the rows' order, filter the text a row must contain
	// ("" for every row).
	order  tensorOrder
	filter string
	// memo keeps the last order: View draws far more often than the
	// state, the order or the filter change. idx are the rows as indexes
	// into the state's Tensors (a step's table orders 4-byte indexes, not
	// its 160-byte views; a frame copies only the rows it shows); rows
	// are the views themselves, made when the whole table is asked for.
	memo struct {
		st     *engine.State
		order  tensorOrder
		filter string
		idx    []int32
		rows   []engine.TensorView
	}
	// buckets are sorted's, kept for their arrays.
	buckets [3][]int32
}

// tensorOrder is how the tensors table sorts its rows.
type tensorOrder int

const (
	// orderOutputs: what the compiled calls made first (the tensors of
	// the graph pool), then the program's own tensors, then the params (on a real program most of the rows, and
	// the least telling).
	orderOutputs tensorOrder = iota
	orderSize                // the largest first
	orderState               // the stale first, then the replay outputs, then the rest
	orderID                  // as the engine made them
	numOrders
)

var orderNames = [numOrders]string{"outputs first", "by size", "by state", "by id"}

// rows are the state's tensors in the pane's order, those the filter
// keeps.
func (p *tensorsPane) rows(st *engine.State) []engine.TensorView {
	idx := p.sorted(st)
	if idx == nil {
		return nil
	}
	if p.memo.rows == nil {
		rows := make([]engine.TensorView, len(idx))
		for i, k := range idx {
			rows[i] = st.Tensors[k]
		}
		p.memo.rows = rows
	}
	return p.memo.rows
}

// sorted is rows as indexes into st.Tensors. The orders by rank (outputs
// first, by state) are a stable partition into three buckets; by size
// and by id a stable sort. The buckets and the result reuse the last
// order's arrays: every step brings a new state, its table as long.
func (p *tensorsPane) sorted(st *engine.State) []int32 {
	if st == nil {
		return nil
	}
	if p.memo.st == st && p.memo.order == p.order && p.memo.filter == p.filter && p.memo.idx != nil {
		return p.memo.idx
	}
	q := strings.ToLower(p.filter)
	var b [3][]int32
	for r := range b {
		b[r] = p.buckets[r][:0]
	}
	for i := range st.Tensors {
		t := &st.Tensors[i]
		if q != "" && !strings.Contains(strings.ToLower(tensorRowText(t)), q) {
			continue
		}
		r := rank(p.order, t)
		b[r] = append(b[r], int32(i))
	}
	p.buckets = b
	idx := append(append(append(p.memo.idx[:0], b[0]...), b[1]...), b[2]...)
	if idx == nil {
		idx = []int32{}
	}
	switch p.order {
	case orderSize:
		slices.SortStableFunc(idx, func(a, b int32) int { return cmp.Compare(st.Tensors[b].Bytes, st.Tensors[a].Bytes) })
	case orderID:
		slices.SortStableFunc(idx, func(a, b int32) int { return cmp.Compare(st.Tensors[a].ID, st.Tensors[b].ID) })
	}
	p.memo.st, p.memo.order, p.memo.filter, p.memo.idx, p.memo.rows = st, p.order, p.filter, idx, nil
	return idx
}

// count is how many rows the table has: every tensor unless a filter
// drops some.
func (p *tensorsPane) count(st *engine.State) int {
	if p.filter == "" || st == nil {
		if st == nil {
			return 0
		}
		return len(st.Tensors)
	}
	return len(p.sorted(st))
}

// window is rows [off, off+n) of the table (off within it). The first
// screen of an order by rank, unfiltered, is the first n tensors of rank
// 0 when there are that many: a scan that stops there, where the whole
// order would look at every tensor of a state that each step makes anew.
func (p *tensorsPane) window(st *engine.State, off, n int) []engine.TensorView {
	vis := make([]engine.TensorView, 0, n)
	memo := p.memo.st == st && p.memo.order == p.order && p.memo.filter == p.filter && p.memo.idx != nil
	if !memo && off == 0 && p.filter == "" && (p.order == orderOutputs || p.order == orderState) {
		for i := range st.Tensors {
			if t := &st.Tensors[i]; rank(p.order, t) == 0 {
				if vis = append(vis, *t); len(vis) == n {
					return vis
				}
			}
		}
		vis = vis[:0]
	}
	idx := p.sorted(st)
	for _, k := range idx[off:min(off+n, len(idx))] {
		vis = append(vis, st.Tensors[k])
	}
	return vis
}

// rank is t's bucket in the orders by rank (0 in the others): by state,
// the stale first, then the replay outputs, then the rest; outputs first,
// what the graphs made, then the program's own tensors, then the params.
func rank(o tensorOrder, t *engine.TensorView) int {
	switch {
	case o == orderState && t.State == engine.TensorStale:
		return 0
	case o == orderState && t.Owner != "allocator" && t.Owner != "param":
		return 1
	case o == orderOutputs && t.Owner == "param":
		return 2
	case o == orderOutputs && t.Pool != "graph":
		// What the graphs return lives in the graph pool; the
		// program's own tensors in the default one.
		return 1
	}
	return 0
}

// tensorRowText is what the filter matches: the names, state, owner,
// pool and producer of a tensor.
func tensorRowText(t *engine.TensorView) string {
	state := "live"
	if t.State == engine.TensorStale {
		state = "stale"
	}
	return strings.Join(t.Names, ",") + " " + state + " " + t.Owner + " " + t.Pool + " " + t.Producer
}

func (p *tensorsPane) title(c *paneCtx) string {
	t := paneTitles[paneTensors]
	if st := c.snap.state; st != nil {
		n := p.count(st)
		if p.filter != "" {
			t += fmt.Sprintf(" · %d of %d match %q", n, len(st.Tensors), p.filter)
		} else {
			t += fmt.Sprintf(" · %d", n)
		}
	}
	return t + " · " + orderNames[p.order]
}
func (p *tensorsPane) keys(km *KeyMap) []key.Binding {
	return []key.Binding{km.Tensors.Left, km.Tensors.Right, km.Tensors.Sort, km.Tensors.Filter}
}
func (p *tensorsPane) onKey(c *paneCtx, k tea.KeyPressMsg) (tea.Cmd, bool) {
	switch {
	case key.Matches(k, c.keys.Tensors.Left):
		p.left = max(p.left-8, 0)
	case key.Matches(k, c.keys.Tensors.Right):
		p.left += 8
	case key.Matches(k, c.keys.Tensors.Sort):
		p.order = (p.order + 1) % numOrders
		p.offset = 0
	case key.Matches(k, c.keys.Tensors.Filter):
		if c.openPrompt != nil {
			c.openPrompt(&prompt{what: modeFilter})
		}
	default:
		return nil, false
	}
	return nil, true
}
func (p *tensorsPane) view(c *paneCtx, w, h int, _ bool) []string {
	if c.snap.state == nil {
		return nil
	}
	// The rows shown, as tensorLines would pick them from the whole
	// table.
	st := c.snap.state
	n := max(h-1, 1)
	p.offset = min(max(p.offset, 0), max(p.count(st)-n, 0))
	off := 0
	body := tensorLines(p.window(st, p.offset, n), *c.styles, &off, &p.left, w, h)
	p.cursor = p.offset
	return body
}

// all is the whole table, header first, unscrolled.
func (p *tensorsPane) all(c *paneCtx) []string {
	st := c.snap.state
	if st == nil {
		return nil
	}
	off, left := 0, 0
	rows := p.rows(st)
	return tensorLines(rows, *c.styles, &off, &left, 1<<20, len(rows)+1)
}
func (p *tensorsPane) text(c *paneCtx, _ int) paneText    { return linesText(plainLines(p.all(c))) }
func (p *tensorsPane) selection(c *paneCtx, _ int) string { return selectionOf(p.all(c)) }

// The table's row 0 is its header: a search starts after the first row
// shown, and a match at row i shows with row i at the top.
func (p *tensorsPane) at() int                { return p.offset + 1 }
func (p *tensorsPane) show(_ *paneCtx, i int) { p.offset = max(i-1, 0) }

// callOf is the record just run when it is a call that recorded or
// replayed the tree line l (nodeLines names its inputs by it).
func callOf(snap *snapshot, recs records, l treeLine) *traces.Record {
	if stp := snap.step; stp != nil && stp.Node == l.id && stp.Device == l.dev && l.kind == treeNode && stp.Index >= 0 && stp.Index < recs.len() {
		return recs.at(stp.Index)
	}
	return nil
}

// textScroll moves a text pane's first line; View clamps it to the text.
func textScroll(s *scroll, d int) {
	s.offset = max(s.offset+d, 0)
	if d > 1<<20 {
		s.offset = 1 << 30
	}
	s.cursor = s.offset
}

// textWindow clamps a text pane's scroll and returns the visible lines.
func textWindow(s *scroll, lines []string, h int) []string {
	s.offset = min(s.offset, max(len(lines)-h, 0))
	s.cursor = s.offset
	return window(lines, s.offset, h)
}

// plainLines strips the styles of drawn lines, in place.
func plainLines(lines []string) []string {
	for i, l := range lines {
		lines[i] = ansi.Strip(l)
	}
	return lines
}

// selectionOf is what y copies of drawn lines: their text, without styles
// or trailing blanks.
func selectionOf(lines []string) string {
	for i := range lines {
		lines[i] = strings.TrimRight(ansi.Strip(lines[i]), " ")
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}
