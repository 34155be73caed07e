package ui

import (
	"fmt"
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/cgtviz/cgtviz/sessions"
)

// Prompts and popups are one stack of overlays over the panes (as crush's
// dialogs): the top one gets every key first, Esc pops it, and each draws
// itself: a box over the body, or the prompt on the message line. An
// overlay acts on the root (a prompt's enter moves the session), so its
// methods take the Model; it never reads the trace file.

// overlay is one entry of the stack.
type overlay interface {
	// kind is the mode the overlay puts the UI in.
	kind() mode
	// key handles a key other than Esc; done pops the overlay first.
	onKey(m *Model, k tea.KeyPressMsg) (cmd tea.Cmd, done bool)
	// box is what the overlay draws over a w×h body, nil for nothing.
	box(m *Model, w, h int) []string
	// line is the message line while the overlay is on top; "" leaves
	// the line to the message.
	line(m *Model, w int) string
}

// mode is what keys go to: the kind of the overlay on top.
type mode int

const (
	modeNormal  mode = iota
	modeGoto         // the "go to step" prompt
	modeSearch       // the trace search prompt
	modePicker       // the event-kind breakpoint picker
	modeMark         // the bookmark name prompt
	modeJump         // the "go to bookmark" prompt
	modeCommand      // the ':' command line
	modeOverlay      // a popup over the panes (:help, the breakpoint list)
	modeFilter       // the tensors pane's filter prompt
)

// push puts an overlay on top of the stack.
func (m *Model) push(o overlay) {
	m.overlays = append(m.overlays, o)
	m.restack()
}

// pop removes the top overlay.
func (m *Model) pop() {
	if len(m.overlays) > 0 {
		m.overlays = m.overlays[:len(m.overlays)-1]
	}
	m.restack()
}

// top is the overlay on top, nil when none.
func (m *Model) top() overlay {
	if len(m.overlays) == 0 {
		return nil
	}
	return m.overlays[len(m.overlays)-1]
}

// restack keeps mode and over, what the rest of the UI asks of the stack
// (is a prompt open? which popup shows?), in step with its top.
func (m *Model) restack() {
	m.mode, m.over = modeNormal, nil
	switch o := m.top().(type) {
	case nil:
	case *popup:
		m.mode, m.over = modeOverlay, o
	default:
		m.mode = o.kind()
	}
}

// overlayKey gives a key to the top overlay: Esc pops it, anything else is
// its own.
func (m *Model) overlayKey(o overlay, k tea.KeyPressMsg) tea.Cmd {
	if k.String() == "esc" {
		m.pop()
		return nil
	}
	cmd, done := o.onKey(m, k)
	if done && m.top() == o {
		m.pop()
	}
	return cmd
}

// drawOverlays draws the overlays' boxes over the body, bottom up, each
// centred.
func (m *Model) drawOverlays(body []string, w int) []string {
	for _, o := range m.overlays {
		b := o.box(m, w, len(body))
		if len(b) == 0 {
			continue
		}
		x := max((w-ansi.StringWidth(b[0]))/2, 0)
		body = overlayLines(body, b, x, max((len(body)-len(b))/2, 0))
	}
	return body
}

// popup is a box of text drawn over the panes: the full list of commands
// (:help), the keys, a diff, or the breakpoints (:b alone), whose lines d
// deletes. It is text the model owns, so that nothing long has to fit the
// message line.
type popup struct {
	title  string
	lines  []string
	cursor int
	offset int
	// bps is set for the breakpoint list: line i is breakpoint i.
	bps []sessions.Breakpoint
}

// openOverlay shows a popup.
func (m *Model) openOverlay(o popup) {
	m.push(&o)
	m.msg, m.msgErr = "", false
}

func (o *popup) kind() mode { return modeOverlay }

func (o *popup) onKey(m *Model, k tea.KeyPressMsg) (tea.Cmd, bool) {
	sk := &m.keys.Scroll
	switch {
	case k.String() == "enter" || key.Matches(k, m.keys.Quit) || key.Matches(k, m.keys.Help):
		return nil, true
	case key.Matches(k, sk.Up):
		o.cursor = clampAdd(o.cursor, -1, len(o.lines))
	case key.Matches(k, sk.Down):
		o.cursor = clampAdd(o.cursor, 1, len(o.lines))
	case key.Matches(k, sk.PageUp):
		o.cursor = clampAdd(o.cursor, -10, len(o.lines))
	case key.Matches(k, sk.PageDown):
		o.cursor = clampAdd(o.cursor, 10, len(o.lines))
	case key.Matches(k, sk.Top):
		o.cursor = 0
	case key.Matches(k, sk.Bottom):
		o.cursor = max(len(o.lines)-1, 0)
	case o.bps != nil && (k.String() == "d" || k.String() == "x" || k.String() == "delete"):
		if o.cursor >= 0 && o.cursor < len(o.bps) {
			b := o.bps[o.cursor]
			m.sess.RemoveBreakpoint(b)
			m.snap.bps = m.sess.Breakpoints()
			cur := o.cursor
			*o = m.breakpointList()
			o.cursor = min(cur, max(len(o.bps)-1, 0))
			m.setMsg("breakpoint deleted: "+b.String(), nil)
		}
	}
	return nil, false
}

func (o *popup) line(m *Model, w int) string {
	s := m.styles
	switch {
	case m.msg != "":
		return "" // what d just did
	case o.bps != nil:
		return fit(s.Prompt.Render("breakpoints: j/k choose, d deletes, esc closes"), w)
	}
	return fit(s.Prompt.Render("j/k scroll, esc closes"), w)
}

// breakpointList is the overlay of the breakpoints, numbered as :delete
// takes them.
func (m *Model) breakpointList() popup {
	bps := m.sess.Breakpoints()
	o := popup{title: "breakpoints: j/k choose, d deletes, esc closes", bps: bps}
	for i, b := range bps {
		o.lines = append(o.lines, fmt.Sprintf("%d: %s", i+1, b))
	}
	if len(bps) == 0 {
		o.lines = []string{"no breakpoints (b on a trace line, B, or :b SPEC sets one)"}
		o.bps = []sessions.Breakpoint{}
	}
	return o
}

// helpOverlay lists every command with what it does, and the keys.
func (m *Model) helpOverlay() popup {
	o := popup{title: "commands (esc closes; ? lists the keys; docs/tui.md)"}
	for _, c := range lineCommands {
		u := ":" + c.name
		if c.alias != "" {
			u += " (:" + c.alias + ")"
		}
		if c.args != "" {
			u += " " + c.args
		}
		o.lines = append(o.lines, u, "    "+c.help)
	}
	o.lines = append(o.lines, "", "tab completes a command's name; a bare number goes to that line")
	return o
}

// box draws the popup to fit a w×h body.
func (o *popup) box(m *Model, w, h int) []string {
	bw := min(w-2, 100)
	inner := bw - 2
	var lines []string
	at := 0 // the first drawn line of the cursor's entry
	for i, l := range o.lines {
		if i == o.cursor {
			at = len(lines)
		}
		parts := []string{l}
		if ansi.StringWidth(l) > inner-2 {
			parts = wrapIndented(l, inner-2)
		}
		for j, part := range parts {
			if i == o.cursor && j == 0 && o.bps != nil {
				part = m.styles.Selected.Render(fit("›"+part, inner))
			} else {
				part = " " + part
			}
			lines = append(lines, part)
		}
	}
	bh := min(len(lines)+2, h)
	rows := bh - 2
	// Keep the cursor's line on screen; a text popup scrolls with it.
	o.offset = min(max(o.offset, at-rows+1), at)
	if o.bps == nil {
		o.offset = at
	}
	o.offset = max(min(o.offset, len(lines)-rows), 0)
	title := o.title
	if ansi.StringWidth(title) > inner-2 {
		title = ansi.Truncate(title, inner-2, "…")
	}
	return box(m.styles, title, window(lines, o.offset, rows), bw, bh, true)
}

// wrapIndented wraps a line keeping its leading spaces on every piece; an
// empty line stays one empty line.
func wrapIndented(l string, w int) []string {
	body := strings.TrimLeft(l, " ")
	ind := strings.Repeat(" ", len(l)-len(body))
	parts := wrap(body, w-len(ind))
	if len(parts) == 0 {
		return []string{""}
	}
	for i := range parts {
		parts[i] = ind + parts[i]
	}
	return parts
}

// picker is the event-kind breakpoint picker (B): every kind, and a
// replay of the node selected in the tree.
type picker struct{ cursor int }

func (p *picker) kind() mode { return modePicker }

func (p *picker) onKey(m *Model, k tea.KeyPressMsg) (tea.Cmd, bool) {
	items := m.pickerItems()
	switch {
	case k.String() == "B" || key.Matches(k, m.keys.Quit):
		return nil, true
	case key.Matches(k, m.keys.Scroll.Up):
		p.cursor = clampAdd(p.cursor, -1, len(items))
	case key.Matches(k, m.keys.Scroll.Down):
		p.cursor = clampAdd(p.cursor, 1, len(items))
	case k.String() == "enter" || k.String() == "space":
		if p.cursor >= 0 && p.cursor < len(items) {
			m.toggleBreakpoint(items[p.cursor])
		}
		return nil, true
	}
	return nil, false
}

func (p *picker) box(m *Model, _, _ int) []string {
	items := m.pickerItems()
	lines := make([]string, 0, len(items))
	for i, b := range items {
		on := "  "
		if slices.Contains(m.snap.bps, b) {
			on = "● "
		}
		l := on + b.String()
		if i == p.cursor {
			l = m.styles.Selected.Render(fit("›"+l, 28))
		} else {
			l = " " + l
		}
		lines = append(lines, l)
	}
	return box(m.styles, "break on event", lines, 32, len(lines)+2, true)
}

func (p *picker) line(m *Model, w int) string {
	return fit(m.styles.Prompt.Render("breakpoint on an event: j/k choose, enter toggles, esc closes"), w)
}

// prompt is a line typed on the message line: go to a line (g), search
// (/), name a bookmark (m), go to one ('), or a command (:). There is one
// line being typed, the root's input, since only the top overlay gets
// keys; the prompt says what it means.
type prompt struct {
	what mode
	// marks are the bookmarks the "go to bookmark" prompt lists.
	marks []sessions.Bookmark
}

// openPrompt opens a prompt with an empty line.
func (m *Model) openPrompt(p *prompt) {
	m.input = ""
	m.push(p)
}

func (p *prompt) kind() mode { return p.what }

func (p *prompt) box(*Model, int, int) []string { return nil }

func (p *prompt) onKey(m *Model, k tea.KeyPressMsg) (tea.Cmd, bool) {
	switch k.String() {
	case "tab":
		if p.what == modeCommand {
			m.input = completeCommand(m.input)
		}
	case "enter":
		// Pop first: what enter does may open another overlay.
		m.pop()
		return p.enter(m, strings.TrimSpace(m.input)), false
	case "backspace":
		if r := []rune(m.input); len(r) > 0 {
			m.input = string(r[:len(r)-1])
		}
	default:
		if p.what == modeGoto && m.input == "" && k.Text != "" && !isLineStart(k.Text) {
			// g is vim's and less's prefix as well as the prompt: gg
			// goes to the top of the focused pane (G, its bottom), and
			// any other letter leaves the prompt and means what it
			// means alone, so that g never swallows keys.
			m.pop()
			if k.Text == "g" {
				c := m.ctx()
				m.component(m.focus).scrollBy(c, -1<<30)
				return nil, false
			}
			return m.key(k), false
		}
		if k.Text != "" && len(m.input) < 200 {
			m.input += k.Text
		}
	}
	return nil, false
}

// isLineStart reports whether text may begin a line number typed into the
// g prompt (digits, or the L of "L32").
func isLineStart(text string) bool {
	return text == "L" || (len(text) == 1 && text[0] >= '0' && text[0] <= '9')
}

// enter does what the typed line asks.
func (p *prompt) enter(m *Model, in string) tea.Cmd {
	switch p.what {
	case modeCommand:
		return m.runLine(in)
	case modeSearch:
		m.search.query, m.search.pane = in, m.focus
		if in == "" {
			m.setMsg("search cleared", nil)
			return nil
		}
		return m.find(1)
	case modeMark:
		if err := m.sess.Bookmark(in); err != nil {
			m.setMsg("", err)
		} else {
			m.setMsg(fmt.Sprintf("bookmark %q at %s", in, m.where(m.snap.pos)), nil)
		}
		return nil
	case modeFilter:
		m.tensors.filter, m.tensors.offset = in, 0
		if in == "" {
			m.setMsg("tensors: filter cleared", nil)
		} else {
			m.setMsg(fmt.Sprintf("tensors: only the rows that contain %q (f, then enter on an empty line, clears it)", in), nil)
		}
		return nil
	case modeJump:
		return m.move(func(s *sessions.Session) (string, error) {
			return fmt.Sprintf("at bookmark %q", in), s.GotoBookmark(in)
		})
	}
	// g says nothing on arrival: the message line shows why the step did
	// what it did, and the status line where it is.
	cmd, err := m.gotoLineText(in, false)
	if err != nil {
		m.setMsg("", fmt.Errorf("go to line: %w", err))
	}
	return cmd
}

func (p *prompt) line(m *Model, w int) string {
	s := m.styles
	switch p.what {
	case modeSearch:
		return fit(s.Prompt.Render(fmt.Sprintf("search %s: /", paneTitles[m.focus]))+m.input+"█", w)
	case modeFilter:
		return fit(s.Prompt.Render("filter tensors (name, state, owner, pool, maker): ")+m.input+"█", w)
	case modeMark:
		return fit(s.Prompt.Render(fmt.Sprintf("bookmark %s as: ", m.where(m.snap.pos)))+m.input+"█", w)
	case modeJump:
		names := make([]string, len(p.marks))
		for i, b := range p.marks {
			names[i] = fmt.Sprintf("%s@%d", b.Name, m.lineOf(b.Pos))
		}
		hint := "no bookmarks yet (m sets one)"
		if len(names) > 0 {
			hint = strings.Join(names, " ")
		}
		return fit(s.Prompt.Render("go to bookmark: ")+m.input+"█  "+s.Dim.Render(hint), w)
	case modeCommand:
		return fit(s.Prompt.Render(":")+m.input+"█  "+s.Dim.Render(commandHint(m.input)), w)
	}
	lo, hi := m.lineRange()
	return fit(s.Prompt.Render(fmt.Sprintf("go to line (%d-%d, 0 the start; g again: top of the pane): ", lo, hi))+m.input+"█", w)
}
