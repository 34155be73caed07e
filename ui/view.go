package ui

import (
	"fmt"
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
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
	return 3 + len(m.helpLines(max(m.width, 20)))
}

// helpLines is the help under the status lines: the short line, or the
// full help in as many bands of columns as the width needs, so that no key
// is cut off; a terminal too short for all of it shows what fits above
// four lines of panes.
func (m *Model) helpLines(w int) []string {
	key := helpKey{w, m.height, m.help.Width(), m.help.ShowAll}
	if m.helpMemo.lines == nil || m.helpMemo.key != key {
		// layout() asks for the count several times a frame; the keys
		// and their bindings never change, so one rendering per size does.
		m.helpMemo.key, m.helpMemo.lines = key, m.renderHelp(w)
	}
	return m.helpMemo.lines
}

// helpKey is what the help's lines depend on.
type helpKey struct {
	w, h, helpW int
	all         bool
}

// renderHelp draws the help lines (see helpLines).
func (m *Model) renderHelp(w int) []string {
	if !m.help.ShowAll {
		// Drop keys from the middle, never "? help" and "q quit": the
		// way to the rest must stay on screen at any width.
		keys := m.keys.ShortHelp()
		h := m.help
		h.SetWidth(0)
		km := m.keys
		for _, drop := range []key.Binding{km.Reverse, km.Breakpoint, km.Goto, km.Prev, km.Continue, km.Command, km.Next} {
			if ansi.StringWidth(h.ShortHelpView(keys)) <= w {
				break
			}
			keys = slices.DeleteFunc(keys, func(b key.Binding) bool { return b.Help() == drop.Help() })
		}
		return []string{fit(h.ShortHelpView(keys), w)}
	}
	var out []string
	for _, band := range m.helpBands(w) {
		for _, l := range band {
			out = append(out, fit(l, w))
		}
	}
	if room := max(m.height, 8) - 4 - 3; len(out) > room {
		out = out[:max(room, 1)]
	}
	return out
}

// fullHelpLines is the whole key help at width w, in bands of columns,
// without styles: what ? shows, in a popup when the screen is too short
// for it under the panes.
func (m *Model) fullHelpLines(w int) []string {
	var out []string
	for _, band := range m.helpBands(w) {
		for _, l := range band {
			out = append(out, strings.TrimRight(ansi.Strip(l), " "))
		}
		out = append(out, "")
	}
	return out
}

// helpBands lays the full key help out in bands of as many columns (key
// groups) as fit in width w, at least one a band: each band's lines, as
// the help bubble draws them.
func (m *Model) helpBands(w int) [][]string {
	h := m.help
	h.SetWidth(0) // measure: no truncation
	var bands [][]string
	for groups := m.keys.FullHelp(); len(groups) > 0; {
		n := len(groups)
		for n > 1 && widest(h.FullHelpView(groups[:n])) > w {
			n--
		}
		bands = append(bands, strings.Split(h.FullHelpView(groups[:n]), "\n"))
		groups = groups[n:]
	}
	return bands
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
	for _, p := range order {
		if !sc.shown[p] {
			continue
		}
		r := sc.rects[p]
		lines := m.paneBox(p, r)
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
	if m.mode == modeOverlay {
		ov := m.overlayBox(w, sc.bodyH)
		x := max((w-ansi.StringWidth(ov[0]))/2, 0)
		body = overlay(body, ov, x, max((sc.bodyH-len(ov))/2, 0))
	}
	if m.mode == modePicker {
		pk := m.pickerBox()
		x := max((w-ansi.StringWidth(pk[0]))/2, 0)
		body = overlay(body, pk, x, max((sc.bodyH-len(pk))/2, 0))
	}
	out := append(body, m.timeline.view(m.styles, m.snap.n, w, m.snap.pos-1), m.statusLine(w), m.infoLine(w))
	out = append(out, m.helpLines(w)...)
	return strings.Join(out, "\n")
}

// paneBox renders pane p boxed into r.
func (m *Model) paneBox(p pane, r rect) []string {
	iw, ih := r.w-2, r.h-2
	focused := p == m.focus
	title := fmt.Sprintf("%d %s", p+1, paneTitles[p])
	var body []string
	st := m.snap.state
	switch p {
	case paneTree:
		body = m.tree.view(st, m.styles, iw, ih, focused)
	case panePool:
		m.pool.layout(st, m.dev, iw)
		if m.mem.on {
			chart := m.mem.lines(m.styles, m.recs.len(), m.snap.pos, m.snap.executed, m.dev, iw)
			chart = chart[:min(len(chart), max(ih-2, 0))]
			body = append(chart, m.pool.view(m.styles, max(ih-len(chart), 0))...)
		} else {
			body = m.pool.view(m.styles, ih)
		}
		if st != nil && m.dev < len(st.Devices) {
			title += fmt.Sprintf(" · dev %d", m.dev)
		}
	case paneDelta:
		body = textWindow(&m.delta, deltaLines(&m.snap, m.styles, iw), ih)
	case paneTrace:
		body = m.trace.view(m.recs, &m.snap, m.styles, iw, ih, focused)
		title += fmt.Sprintf(" · %d records", m.recs.len())
	case paneDetails:
		body = textWindow(&m.details, m.detailsLines(iw), ih)
	case paneTensors:
		body = tensorLines(st, m.styles, &m.tensors.offset, &m.tensorsLeft, iw, ih)
		m.tensors.cursor = m.tensors.offset
	}
	if m.query != "" {
		// The cursor row of a list is drawn reversed already.
		cur := -1
		switch p {
		case paneTrace:
			cur = m.trace.cursor - m.trace.offset
		case paneTree:
			cur = m.tree.cursor - m.tree.offset
		}
		for i := range body {
			if i != cur || !focused {
				body[i] = highlight(body[i], m.query, m.styles.Match)
			}
		}
	}
	return box(m.styles, title, body, r.w, r.h, focused)
}

// detailsLines is the details pane's text: the trace row under the cursor
// when it is not the step's, the step, and the node selected in the tree.
func (m *Model) detailsLines(iw int) []string {
	st := m.snap.state
	var lines []string
	if c := m.trace.cursor; c >= 0 && c < m.recs.len() && c != m.snap.pos-1 && (c > 0 || m.snap.pos > 0) {
		// The trace row under the cursor, whole: the trace pane cuts
		// long rows (expects, notes) at its width.
		r := m.recs.at(c)
		lines = append(lines, m.styles.Bold.Render(fmt.Sprintf("cursor: line %d", r.Line)))
		for _, l := range wrap(recordText(r), iw-2) {
			lines = append(lines, "  "+l)
		}
		lines = append(lines, m.styles.Dim.Render("  (enter runs to it; n steps)"), "")
	}
	step := stepLines(&m.snap, m.recs, m.styles, iw)
	var node []string
	if l, ok := m.tree.selected(); ok {
		var call *traces.Record
		if stp := m.snap.step; stp != nil && stp.Node == l.id && stp.Device == l.dev && l.kind == treeNode && stp.Index >= 0 && stp.Index < m.recs.len() {
			call = m.recs.at(stp.Index)
		}
		node = nodeLines(st, l, call, m.styles, iw)
	}
	// What the user looks at comes first: the node chosen in the focused
	// tree, else the step just run.
	if m.focus == paneTree && len(node) > 0 {
		return append(append(append(lines, node...), ""), step...)
	}
	if len(node) > 0 {
		step = append(append(step, ""), node...)
	}
	return append(lines, step...)
}

// textWindow clamps a text pane's scroll and returns the visible lines.
func textWindow(s *scroll, lines []string, h int) []string {
	s.offset = min(s.offset, max(len(lines)-h, 0))
	s.cursor = s.offset
	return window(lines, s.offset, h)
}

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
	if m.busy {
		add(9, "running…")
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
	switch m.mode {
	case modeGoto:
		lo, hi := m.lineRange()
		return fit(s.Prompt.Render(fmt.Sprintf("go to line (%d-%d, 0 the start): ", lo, hi))+m.input+"█", w)
	case modeSearch:
		return fit(s.Prompt.Render(fmt.Sprintf("search %s: /", paneTitles[m.focus]))+m.input+"█", w)
	case modeMark:
		return fit(s.Prompt.Render(fmt.Sprintf("bookmark %s as: ", m.where(m.snap.pos)))+m.input+"█", w)
	case modeJump:
		names := make([]string, len(m.marks))
		for i, b := range m.marks {
			names[i] = fmt.Sprintf("%s@%d", b.Name, m.lineOf(b.Pos))
		}
		hint := "no bookmarks yet (m sets one)"
		if len(names) > 0 {
			hint = strings.Join(names, " ")
		}
		return fit(s.Prompt.Render("go to bookmark: ")+m.input+"█  "+s.Dim.Render(hint), w)
	case modePicker:
		return fit(s.Prompt.Render("breakpoint on an event: j/k choose, enter toggles, esc closes"), w)
	case modeOverlay:
		if m.msg != "" {
			break // what d just did
		}
		if m.over.bps != nil {
			return fit(s.Prompt.Render("breakpoints: j/k choose, d deletes, esc closes"), w)
		}
		return fit(s.Prompt.Render("j/k scroll, esc closes"), w)
	case modeCommand:
		return fit(s.Prompt.Render(":")+m.input+"█  "+s.Dim.Render(commandHint(m.input)), w)
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

// pickerBox is the event-kind breakpoint picker.
func (m *Model) pickerBox() []string {
	items := m.pickerItems()
	lines := make([]string, 0, len(items))
	for i, b := range items {
		on := "  "
		if slices.Contains(m.snap.bps, b) {
			on = "● "
		}
		l := on + b.String()
		if i == m.picker {
			l = m.styles.Selected.Render(fit("›"+l, 28))
		} else {
			l = " " + l
		}
		lines = append(lines, l)
	}
	return box(m.styles, "break on event", lines, 32, len(lines)+2, true)
}
