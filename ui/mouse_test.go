package ui

import (
	"testing"

	tea "charm.land/bubbletea/v2"
)

// click sends a left click at (x, y) and runs what it starts.
func click(t *testing.T, m *Model, x, y int) {
	t.Helper()
	_, cmd := m.Update(tea.MouseClickMsg{X: x, Y: y, Button: tea.MouseLeft})
	runCmd(m, cmd)
}

func wheel(m *Model, x, y int, b tea.MouseButton) {
	m.Update(tea.MouseWheelMsg{X: x, Y: y, Button: b})
}

// TestMouse clicks and scrolls the 120x40 full layout at the demo's end:
// the tree is at the top left, the trace under it, the details beside it.
func TestMouse(t *testing.T) {
	m := newModel(t, seedA, 120, 40, Options{})
	gotoStep(t, m, "40")
	m.Render() // lays the panes out and clamps their windows, as a frame does
	sc := m.layout()
	tree, trace, details := sc.rects[paneTree], sc.rects[paneTrace], sc.rects[paneDetails]

	// A click on the tree's third line (#1 fee, under dev 0 and #0 foo)
	// focuses the tree and selects it; the details follow.
	click(t, m, tree.x+5, tree.y+1+2)
	if l, ok := m.tree.selected(); m.focus != paneTree || !ok || l.kind != treeNode || l.id != 1 {
		t.Fatalf("click on the tree's third line: focus %d, selected %+v", m.focus, l)
	}
	// On a border: focus only.
	click(t, m, trace.x+3, trace.y)
	if m.focus != paneTrace {
		t.Fatalf("click on the trace's border: focus %d", m.focus)
	}
	// The trace: the first click puts the cursor on the line, the second
	// goes to that record.
	m.Render()
	row := 4
	want := m.trace.offset + row
	click(t, m, trace.x+10, trace.y+1+row)
	if m.trace.cursor != want || m.Pos() != 40 {
		t.Fatalf("first click on trace row %d: cursor %d (want %d), step %d", row, m.trace.cursor, want, m.Pos())
	}
	click(t, m, trace.x+10, trace.y+1+row)
	if m.Pos() != want+1 {
		t.Fatalf("second click on record %d: step %d, want %d", want, m.Pos(), want+1)
	}
	// The wheel scrolls the pane under the pointer and leaves the focus.
	m.focusPane(paneTree)
	before := m.trace.cursor
	wheel(m, trace.x+5, trace.y+5, tea.MouseWheelDown)
	if m.focus != paneTree || m.trace.cursor != before+wheelLines {
		t.Errorf("wheel down over the trace: focus %d, cursor %d (was %d)", m.focus, m.trace.cursor, before)
	}
	wheel(m, details.x+5, details.y+5, tea.MouseWheelDown)
	if m.details.offset != wheelLines {
		t.Errorf("wheel down over the details: offset %d", m.details.offset)
	}
	wheel(m, details.x+5, details.y+5, tea.MouseWheelUp)
	if m.details.offset != 0 {
		t.Errorf("wheel up over the details: offset %d", m.details.offset)
	}

	// Nothing happens in a prompt, or below the panes, or on a right click.
	press(t, m, "g")
	click(t, m, trace.x+10, trace.y+2)
	if m.focus != paneTree || m.mode != modeGoto {
		t.Errorf("click in the go-to prompt: focus %d, mode %d", m.focus, m.mode)
	}
	press(t, m, "esc")
	click(t, m, 5, sc.bodyH+1)
	m.Update(tea.MouseClickMsg{X: trace.x + 10, Y: trace.y + 2, Button: tea.MouseRight})
	if m.focus != paneTree {
		t.Errorf("a click on the status line or a right click moved the focus to %d", m.focus)
	}
}

// TestMouseMode checks that the view asks for the mouse unless told not to.
func TestMouseMode(t *testing.T) {
	if got := newModel(t, seedA, 80, 24, Options{}).View().MouseMode; got != tea.MouseModeCellMotion {
		t.Errorf("mouse mode %v, want cell motion", got)
	}
	if got := newModel(t, seedA, 80, 24, Options{NoMouse: true}).View().MouseMode; got != tea.MouseModeNone {
		t.Errorf("NoMouse: mouse mode %v, want none", got)
	}
}
