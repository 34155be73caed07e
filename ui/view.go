package ui

import (
	"fmt"
	"slices"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/traces"
)

// rect is a pane's place on the screen.
type rect struct{ x, y, w, h int }

// screen is the layout of one frame: the panes shown and where.
type screen struct {
	compact bool
	rects   [numPanes]rect
	shown   [numPanes]bool
	bodyH   int
}

// Sizes at or above which the full layout (all six panes) is used.
const (
	fullMinWidth  = 120
	fullMinHeight = 32
	// From this size on the trace gets the whole left column.
	wideMinWidth  = 180
	wideMinHeight = 48
)

// bottomLines is how many lines the timeline, status, message and help
// take.
func (m *Model) bottomLines() int {
	return 3 + len(m.help.lines(&m.keys, max(m.width, 20), m.height))
}

// widest is the width of the widest line of s.
func widest(s string) int {
	n := 0
	for _, l := range strings.Split(s, "\n") {
		n = max(n, ansi.StringWidth(l))
	}
	return n
}

// layout places the panes. The full layout shows all six; the compact one
// (small terminals) shows the trace beside the focused (or last focused)
// other pane, and digits or tab reach the rest.
func (m *Model) layout() screen {
	w, h := max(m.width, 20), max(m.height, 8)
	var sc screen
	sc.bodyH = max(h-m.bottomLines(), 4)
	bh := sc.bodyH
	if m.zoom {
		// + : the focused pane takes the whole body (lazygit's screen
		// mode), so that long names show whole at any size.
		sc.compact = true
		sc.rects[m.focus] = rect{0, 0, w, bh}
		sc.shown[m.focus] = true
		return sc
	}
	if w >= wideMinWidth && h >= wideMinHeight {
		// Wide and tall: the trace, which has the most to show, takes
		// the left column from top to bottom; the tree and the pool,
		// which rarely fill a wide pane, share the top right.
		traceW := w * 40 / 100
		rightW := w - traceW
		topH := bh * 45 / 100
		botH := bh - topH
		treeW := rightW * 40 / 100
		midW := rightW / 2
		deltaH := botH / 2
		sc.rects[paneTrace] = rect{0, 0, traceW, bh}
		sc.rects[paneTree] = rect{traceW, 0, treeW, topH}
		sc.rects[panePool] = rect{traceW + treeW, 0, rightW - treeW, topH}
		sc.rects[paneDetails] = rect{traceW, topH, midW, botH}
		sc.rects[paneDelta] = rect{traceW + midW, topH, rightW - midW, deltaH}
		sc.rects[paneTensors] = rect{traceW + midW, topH + deltaH, rightW - midW, botH - deltaH}
		for i := range sc.shown {
			sc.shown[i] = true
		}
		return sc
	}
	if w >= fullMinWidth && h >= fullMinHeight {
		topH := bh * 45 / 100
		botH := bh - topH
		leftW := w * 32 / 100
		rightW := w - leftW
		midW := rightW / 2
		colW := rightW - midW
		deltaH := botH / 2
		sc.rects[paneTree] = rect{0, 0, leftW, topH}
		sc.rects[panePool] = rect{leftW, 0, rightW, topH}
		sc.rects[paneTrace] = rect{0, topH, leftW, botH}
		sc.rects[paneDetails] = rect{leftW, topH, midW, botH}
		sc.rects[paneDelta] = rect{leftW + midW, topH, colW, deltaH}
		sc.rects[paneTensors] = rect{leftW + midW, topH + deltaH, colW, botH - deltaH}
		for i := range sc.shown {
			sc.shown[i] = true
		}
		return sc
	}
	sc.compact = true
	leftW := w * 48 / 100
	sc.rects[paneTrace] = rect{0, 0, leftW, bh}
	sc.shown[paneTrace] = true
	other := m.other
	if m.focus != paneTrace {
		other = m.focus
	}
	// The details (why the step did what it did) stay on screen under the
	// other pane when there is room for both.
	if other == paneTree && bh >= 16 {
		topH := bh * 55 / 100
		sc.rects[other] = rect{leftW, 0, w - leftW, topH}
		sc.rects[paneDetails] = rect{leftW, topH, w - leftW, bh - topH}
		sc.shown[paneDetails] = true
	} else {
		sc.rects[other] = rect{leftW, 0, w - leftW, bh}
	}
	sc.shown[other] = true
	return sc
}

// View implements tea.Model.
func (m *Model) View() tea.View {
	v := tea.NewView(m.Render())
	v.AltScreen = true
	if !m.opts.NoMouse {
		v.MouseMode = tea.MouseModeCellMotion
	}
	v.WindowTitle = "cgtviz " + traces.Printable(m.sess.Header().Name)
	return v
}

// Render draws the whole screen as a string (View's content).
func (m *Model) Render() string {
	sc := m.layout()
	w := max(m.width, 20)
	body := blank(w, sc.bodyH)
	rows := make([][]string, sc.bodyH)
	// Panes tile the body, so each row is the concatenation of the panes
	// crossing it, left to right.
	order := []pane{paneTree, paneTrace, panePool, paneDetails, paneDelta, paneTensors}
	xs := make([][]int, sc.bodyH)
	c := m.viewCtx()
	for _, p := range order {
		if !sc.shown[p] {
			continue
		}
		r := sc.rects[p]
		lines := m.paneBox(c, p, r)
		for i, l := range lines {
			y := r.y + i
			if y >= sc.bodyH {
				break
			}
			// Insert in x order.
			j := 0
			for j < len(xs[y]) && xs[y][j] < r.x {
				j++
			}
			xs[y] = append(xs[y][:j], append([]int{r.x}, xs[y][j:]...)...)
			rows[y] = append(rows[y][:j], append([]string{l}, rows[y][j:]...)...)
		}
	}
	for y := range body {
		if len(rows[y]) > 0 {
			body[y] = strings.Join(rows[y], "")
		}
	}
	body = m.drawOverlays(body, w)
	out := append(body, m.timeline.view(m.styles, m.snap.n, w, m.snap.pos-1), m.statusLine(w), m.infoLine(w))
	out = append(out, m.help.lines(&m.keys, w, m.height)...)
	return strings.Join(out, "\n")
}

// paneBox renders pane p boxed into r, the matches of the query
// highlighted.
func (m *Model) paneBox(c *paneCtx, p pane, r rect) []string {
	focused := p == m.focus
	comp := m.component(p)
	body := comp.view(c, r.w-2, r.h-2, focused)
	if q := m.search.query; q != "" {
		// The cursor row of a list is drawn reversed already.
		cur := -1
		if l, ok := comp.(interface{ cursorRow() int }); ok {
			cur = l.cursorRow()
		}
		for i := range body {
			if i != cur || !focused {
				body[i] = highlight(body[i], q, m.styles.Match)
			}
		}
	}
	return box(m.styles, fmt.Sprintf("%d %s", p+1, comp.title(c)), body, r.w, r.h, focused)
}

// detailsLines is the details pane's text at inner width iw.
func (m *Model) detailsLines(iw int) []string { return m.details.lines(m.viewCtx(), iw) }

// statusLine: position, device, path state, error count, generation,
// counters. When the width cannot hold it all, the least telling parts go
// first (the device's name, the generation, the counters) and the
// position and the error count stay.
func (m *Model) statusLine(w int) string {
	type part struct {
		text string
		keep int // higher stays longer
	}
	var parts []part
	add := func(keep int, format string, a ...any) { parts = append(parts, part{fmt.Sprintf(format, a...), keep}) }
	_, last := m.lineRange()
	if l := m.lineOf(m.snap.pos); l > 0 {
		add(9, "line %d/%d", l, last)
	} else {
		add(9, "start/%d", last)
	}
	if st := m.snap.state; st != nil {
		if m.dev < len(st.Devices) {
			ds := &st.Devices[m.dev]
			add(3, "dev %d %s", m.dev, ds.Name)
			add(7, "%s", ds.PathState)
		}
		if m.handoff == engine.HandoffRaise {
			add(6, "2.11 handoff")
		}
		c := st.Counters
		add(8, "err %d", c.Errors)
		add(4, "rec %d", c.Recordings)
		add(4, "replays %d", c.Replays)
		add(5, "ckpt %d", c.Checkpoints)
		add(2, "warmups %d", c.Warmups)
		add(2, "rerec %d", c.Rerecords)
		add(2, "eager %d", c.Eager)
		add(1, "gen %d", st.Generation)
	}
	if n := len(m.snap.bps); n > 0 {
		add(6, "%d bp", n)
	}
	for _, p := range m.progressParts() {
		add(8, "%s", p)
	}
	switch {
	case m.search.cancel != nil:
		add(9, "searching… (esc cancels)")
	case m.busy:
		add(9, "%s", m.prog.text())
	}
	width := func() int {
		n := 0
		for _, p := range parts {
			n += 3 + ansi.StringWidth(p.text)
		}
		return n - 1
	}
	for keep := 1; keep < 9 && width() > w; keep++ {
		parts = slices.DeleteFunc(parts, func(p part) bool { return p.keep == keep })
	}
	texts := make([]string, len(parts))
	for i, p := range parts {
		texts[i] = p.text
	}
	return m.styles.Status.Render(fit(" "+strings.Join(texts, " · "), w))
}

// infoLine is the prompt, the last message, or why the last step did what
// it did.
func (m *Model) infoLine(w int) string {
	s := m.styles
	if o := m.top(); o != nil {
		if l := o.line(m, w); l != "" {
			return l
		}
	}
	if m.msg != "" {
		if m.msgErr {
			return fit(s.Err.Render(m.msg), w)
		}
		return fit(m.msg, w)
	}
	if st := m.snap.step; st != nil {
		why := ""
		for i := range st.Events {
			ev := &st.Events[i]
			switch ev.Kind {
			case engine.EvRecord, engine.EvReplay, engine.EvWarmup, engine.EvEager:
				why = eventText(ev)
			}
		}
		if why == "" && len(st.Events) > 0 {
			why = eventText(&st.Events[0])
		}
		if st.Err != nil {
			return fit(s.Err.Render(fmt.Sprintf("line %d: error: %s", st.Line, st.Err)), w)
		}
		if why != "" {
			return fit(fmt.Sprintf("line %d: %s", st.Line, why), w)
		}
		// A record that decided nothing (a def, a tensor, a note) still
		// ran: the start's hint would be untrue here.
		what := string(st.Op) + " ran"
		switch {
		case st.Op == traces.OpExpect:
			what = "every expectation held" // a failed one is an event
		case st.Fn != "":
			what = string(st.Op) + " " + st.Fn + " ran"
		}
		return fit(s.Dim.Render(fmt.Sprintf("line %d: %s", st.Line, what)), w)
	}
	return fit(s.Dim.Render("the start: n runs the first record, g a line, : a command"), w)
}
