package ui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/cgtviz/cgtviz/sessions"
)

// overlay is a box drawn over the panes: the full list of commands
// (:help), or the breakpoints (:b alone), whose lines d deletes. It is
// text the model owns, so that nothing long has to fit the message line.
type popup struct {
	title  string
	lines  []string
	cursor int
	offset int
	// bps is set for the breakpoint list: line i is breakpoint i.
	bps []sessions.Breakpoint
}

// openOverlay shows an overlay.
func (m *Model) openOverlay(o popup) {
	m.over = o
	m.mode = modeOverlay
	m.msg, m.msgErr = "", false
}

// overlayKey handles a key while an overlay is open.
func (m *Model) overlayKey(k tea.KeyPressMsg) tea.Cmd {
	o := &m.over
	switch {
	case k.String() == "esc" || k.String() == "enter" || key.Matches(k, m.keys.Quit) || key.Matches(k, m.keys.Help):
		m.mode = modeNormal
	case key.Matches(k, m.keys.Up):
		o.cursor = clampAdd(o.cursor, -1, len(o.lines))
	case key.Matches(k, m.keys.Down):
		o.cursor = clampAdd(o.cursor, 1, len(o.lines))
	case key.Matches(k, m.keys.PageUp):
		o.cursor = clampAdd(o.cursor, -10, len(o.lines))
	case key.Matches(k, m.keys.PageDown):
		o.cursor = clampAdd(o.cursor, 10, len(o.lines))
	case key.Matches(k, m.keys.Top):
		o.cursor = 0
	case key.Matches(k, m.keys.Bottom):
		o.cursor = max(len(o.lines)-1, 0)
	case o.bps != nil && (k.String() == "d" || k.String() == "x" || k.String() == "delete"):
		if o.cursor >= 0 && o.cursor < len(o.bps) {
			b := o.bps[o.cursor]
			m.sess.RemoveBreakpoint(b)
			m.snap.bps = m.sess.Breakpoints()
			m.openOverlay(m.breakpointList())
			m.setMsg("breakpoint deleted: "+b.String(), nil)
			m.over.cursor = min(o.cursor, max(len(m.over.bps)-1, 0))
		}
	}
	return nil
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

// overlayBox draws the open overlay to fit a w×h body.
func (m *Model) overlayBox(w, h int) []string {
	o := &m.over
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
