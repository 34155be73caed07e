package ui

import (
	tea "charm.land/bubbletea/v2"

	"github.com/cgtviz/cgtviz/sessions"
)

// wheelLines is how far one turn of the wheel moves a pane.
const wheelLines = 3

// paneAt returns the pane drawn at cell (x, y), and the row of its body
// there (-1 on its border).
func (m *Model) paneAt(x, y int) (pane, int, bool) {
	sc := m.layout()
	for p := range numPanes {
		r := sc.rects[p]
		if !sc.shown[p] || x < r.x || x >= r.x+r.w || y < r.y || y >= r.y+r.h {
			continue
		}
		row := y - r.y - 1
		if row < 0 || row >= r.h-2 || x == r.x || x == r.x+r.w-1 {
			row = -1
		}
		return p, row, true
	}
	return 0, 0, false
}

// mouse handles the mouse: a left click focuses the pane under it and, in
// the tree or the trace, puts the cursor on the line clicked; a click on
// the trace line already under the cursor goes to that record (just after
// it runs). The wheel scrolls the pane under the pointer without focusing
// it. The mouse does nothing while a prompt is open or a move runs: the
// keys typed meanwhile are the user's intent, and a click must not jump
// ahead of them.
func (m *Model) mouse(msg tea.MouseMsg) tea.Cmd {
	if m.busy || len(m.pending) > 0 || m.mode != modeNormal {
		return nil
	}
	ms := msg.Mouse()
	switch msg.(type) {
	case tea.MouseWheelMsg:
		if p, _, ok := m.paneAt(ms.X, ms.Y); ok {
			switch ms.Button {
			case tea.MouseWheelUp:
				m.component(p).scrollBy(m.ctx(), -wheelLines)
			case tea.MouseWheelDown:
				m.component(p).scrollBy(m.ctx(), wheelLines)
			}
		}
		return nil
	case tea.MouseClickMsg:
		if ms.Button != tea.MouseLeft {
			return nil
		}
	default:
		return nil
	}
	if ms.Y == m.layout().bodyH {
		// The timeline, right under the panes: go to the cell clicked.
		i := m.timeline.recordAt(ms.X, m.snap.n, max(m.width, 20))
		if i < 0 {
			return nil
		}
		return m.move(func(s *sessions.Session) (string, error) { return "", s.Goto(i + 1) })
	}
	p, row, ok := m.paneAt(ms.X, ms.Y)
	if !ok {
		return nil
	}
	m.focusPane(p)
	if row < 0 {
		return nil
	}
	switch p {
	case panePool:
		// A click on the memory timeline's bars or axis goes to the
		// position of the column clicked.
		if !m.mem.on || row < m.mem.titleRows || row >= m.mem.titleRows+memChartRows {
			return nil
		}
		r := m.layout().rects[panePool]
		at := memColumnAt(ms.X-r.x-1-memLabelW, m.recs.len(), r.w-2)
		if at < 0 {
			return nil
		}
		return m.move(func(s *sessions.Session) (string, error) { return "", s.Goto(at) })
	case paneTree:
		if i := m.tree.offset + row; i < len(m.tree.lines) {
			m.tree.cursor = i
		}
	case paneTrace:
		i := m.trace.offset + row
		if i >= m.recs.len() {
			return nil
		}
		if i == m.trace.cursor && i+1 != m.snap.pos {
			return m.move(func(s *sessions.Session) (string, error) { return "", s.Goto(i + 1) })
		}
		m.trace.cursor = i
		m.refresh()
	}
	return nil
}
