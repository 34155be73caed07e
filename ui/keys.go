package ui

import "charm.land/bubbles/v2/key"

// KeyMap holds every key binding of the UI. Stepping follows gdb's SingleKey
// convention: lowercase goes forward, shift goes back. The flat bindings
// are the root's (rootActions): they work whatever pane has the focus. The
// sections are the panes' own: Scroll every pane answers, the others only
// the pane named, when focused.
type KeyMap struct {
	Next, Prev         key.Binding
	Continue, Reverse  key.Binding
	Goto               key.Binding
	Breakpoint         key.Binding
	KindBreak          key.Binding
	NextPane, PrevPane key.Binding
	Pane               key.Binding
	Zoom               key.Binding
	Search, NextMatch  key.Binding
	PrevMatch          key.Binding
	Mark, Jump         key.Binding
	Device             key.Binding
	Export             key.Binding
	Save               key.Binding
	Copy, CopyMsg      key.Binding
	Mark2, Diff        key.Binding
	Memory, MemPool    key.Binding
	Command            key.Binding
	Why                key.Binding
	Help               key.Binding
	Quit               key.Binding

	Scroll  ScrollKeys
	Tree    TreeKeys
	Trace   TraceKeys
	Tensors TensorKeys
	Details DetailsKeys
}

// DetailsKeys are the details pane's.
type DetailsKeys struct {
	// Expand lists every argument and input, or folds the params again.
	Expand key.Binding
}

// ScrollKeys move the cursor of a list pane, or scroll a text pane; the
// popups scroll with them too.
type ScrollKeys struct {
	Up, Down         key.Binding
	PageUp, PageDown key.Binding
	Top, Bottom      key.Binding
}

// TreeKeys are the tree pane's.
type TreeKeys struct {
	Fold key.Binding
}

// TraceKeys are the trace pane's.
type TraceKeys struct {
	// RunTo runs to the record under the cursor: forward, stopping at a
	// breakpoint on the way, or back to it.
	RunTo key.Binding
}

// TensorKeys are the tensors pane's: its table scrolls sideways.
type TensorKeys struct {
	Left, Right key.Binding
	// Sort cycles the rows' order; Filter keeps the rows that contain a
	// text.
	Sort, Filter key.Binding
}

// DefaultKeyMap returns the bindings documented in docs/tui.md.
func DefaultKeyMap() KeyMap {
	return KeyMap{
		Next:       key.NewBinding(key.WithKeys("n"), key.WithHelp("n", "step")),
		Prev:       key.NewBinding(key.WithKeys("N"), key.WithHelp("N", "back")),
		Continue:   key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "continue")),
		Reverse:    key.NewBinding(key.WithKeys("C"), key.WithHelp("C", "reverse-continue")),
		Goto:       key.NewBinding(key.WithKeys("g"), key.WithHelp("g", "go to line")),
		Breakpoint: key.NewBinding(key.WithKeys("b"), key.WithHelp("b", "break on line")),
		KindBreak:  key.NewBinding(key.WithKeys("B"), key.WithHelp("B", "break on event")),
		NextPane:   key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "next pane")),
		PrevPane:   key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("shift+tab", "previous pane")),
		Pane:       key.NewBinding(key.WithKeys("1", "2", "3", "4", "5", "6"), key.WithHelp("1-6", "pane")),
		Zoom:       key.NewBinding(key.WithKeys("+"), key.WithHelp("+", "zoom the pane")),
		Search:     key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "search the pane")),
		NextMatch:  key.NewBinding(key.WithKeys("ctrl+n"), key.WithHelp("ctrl+n", "next match")),
		PrevMatch:  key.NewBinding(key.WithKeys("ctrl+p"), key.WithHelp("ctrl+p", "previous match")),
		Mark:       key.NewBinding(key.WithKeys("m"), key.WithHelp("m", "bookmark here")),
		Jump:       key.NewBinding(key.WithKeys("'"), key.WithHelp("'", "go to bookmark")),
		Device:     key.NewBinding(key.WithKeys("d"), key.WithHelp("d", "next device")),
		Export:     key.NewBinding(key.WithKeys("e"), key.WithHelp("e", "export SVG")),
		Save:       key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "save session")),
		Copy:       key.NewBinding(key.WithKeys("y"), key.WithHelp("y", "copy the pane's selection (OSC 52)")),
		CopyMsg:    key.NewBinding(key.WithKeys("Y"), key.WithHelp("Y", "copy the message line")),
		Memory:     key.NewBinding(key.WithKeys("M"), key.WithHelp("M", "memory timeline")),
		MemPool:    key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "timeline: other pool")),
		Mark2:      key.NewBinding(key.WithKeys("v"), key.WithHelp("v", "mark for diff")),
		Diff:       key.NewBinding(key.WithKeys("V"), key.WithHelp("V", "diff mark → here")),
		Command:    key.NewBinding(key.WithKeys(":"), key.WithHelp(":", "commands")),
		Why:        key.NewBinding(key.WithKeys("w"), key.WithHelp("w", "why: go to the node's recording")),
		Help:       key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Quit:       key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
		Scroll: ScrollKeys{
			Up:       key.NewBinding(key.WithKeys("k", "up"), key.WithHelp("k/↑", "up")),
			Down:     key.NewBinding(key.WithKeys("j", "down"), key.WithHelp("j/↓", "down")),
			PageUp:   key.NewBinding(key.WithKeys("pgup", "ctrl+u"), key.WithHelp("pgup", "page up")),
			PageDown: key.NewBinding(key.WithKeys("pgdown", "ctrl+d"), key.WithHelp("pgdn", "page down")),
			Top:      key.NewBinding(key.WithKeys("home"), key.WithHelp("home/gg", "top")),
			Bottom:   key.NewBinding(key.WithKeys("end", "G"), key.WithHelp("end/G", "bottom")),
		},
		Tree:    TreeKeys{Fold: key.NewBinding(key.WithKeys("enter", "space"), key.WithHelp("enter", "tree: fold node"))},
		Trace:   TraceKeys{RunTo: key.NewBinding(key.WithKeys("enter", "space"), key.WithHelp("enter", "trace: run to cursor"))},
		Details: DetailsKeys{Expand: key.NewBinding(key.WithKeys("enter", "space"), key.WithHelp("enter", "details: list every argument"))},
		Tensors: TensorKeys{Left: key.NewBinding(key.WithKeys("h", "left"), key.WithHelp("h/←", "scroll left (tensors)")), Right: key.NewBinding(key.WithKeys("l", "right"), key.WithHelp("l/→", "scroll right (tensors)")),
			Sort: key.NewBinding(key.WithKeys("o"), key.WithHelp("o", "tensors: order (outputs first, size, state, id)")), Filter: key.NewBinding(key.WithKeys("f"), key.WithHelp("f", "tensors: filter"))},
	}
}

// ShortHelp is the one-line help at the bottom of the screen.
func (k KeyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.Next, k.Prev, k.Continue, k.Reverse, k.Goto, k.Command, k.Breakpoint, k.Help, k.Quit}
}

// FullHelp is the help `?` shows, in columns: moving, then the commands
// and the way out (on a short screen the first band is what shows first),
// then the rest.
func (k KeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.Next, k.Prev, k.Continue, k.Reverse, k.Goto},
		{k.Why, k.Command, k.Export, k.Save, k.Help, k.Quit},
		{k.Breakpoint, k.KindBreak, k.Search, k.NextMatch, k.PrevMatch, k.Mark, k.Jump},
		{k.NextPane, k.PrevPane, k.Pane, k.Zoom, k.Tree.Fold, k.Trace.RunTo, k.Details.Expand, k.Device},
		{k.Scroll.Up, k.Scroll.Down, k.Tensors.Left, k.Tensors.Right, k.Tensors.Sort, k.Tensors.Filter, k.Scroll.PageUp, k.Scroll.PageDown, k.Scroll.Top, k.Scroll.Bottom},
		{k.Memory, k.MemPool, k.Mark2, k.Diff, k.Copy, k.CopyMsg},
	}
}
