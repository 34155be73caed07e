// Package ui owns the terminal debugger: one Bubble Tea v2 root Model that
// owns the layout, the focus, the session's moves and the root's keys
// (actions.go); six panes, each a component (pane.go: tree, pool,
// checkpoint delta, trace, details, tensors) that owns its cursor, its
// section of the KeyMap, its view and its text, which search and copy ask
// it for; and one stack of overlays over them (overlay.go: the prompts,
// the breakpoint picker, the popups), whose top gets every key first and
// which Esc pops. Keys, the ':' command line (command.go) and the mouse
// (mouse.go) all end in the same moves on the session.
//
// The session is used from one goroutine at a time: every move, and every
// search, runs in a tea.Cmd while the model is busy, and delivers a new
// snapshot (or the match) by message; while busy, Update and View read
// only the last snapshot and the records, which are safe for concurrent
// use. Update and View read at most what is on screen: the trace rows
// shown, the record of the step and of the trace cursor (through the
// records' small cache), the summaries of the rows shown. Whatever reads
// the trace beyond the screen (a move, a search, :tensor's look-back for
// a name's last binding, the memory timeline's samples) runs in a tea.Cmd.
package ui
