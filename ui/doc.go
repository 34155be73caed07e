// Package ui owns the terminal debugger: one Bubble Tea v2 root Model that
// owns layout, focus and the key map, and plain pane structs (tree, pool,
// checkpoint delta, trace, details, tensors, and the timeline under them)
// that render strings from a snapshot of the session. Keys, the ':'
// command line (command.go) and the mouse (mouse.go) all end in the same
// moves on the session.
//
// The UI reads; it changes the engine only through the session, and only in
// tea.Cmds: while a command runs (busy), Update and View touch nothing but
// the last snapshot, so the session is never used from two goroutines.
package ui
