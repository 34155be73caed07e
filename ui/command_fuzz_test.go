package ui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
)

// FuzzCommandLine types any line into the ':' command line: no panic, the
// prompt closes, and the UI stays at a valid position with its message
// line set or the command run.
func FuzzCommandLine(f *testing.F) {
	for _, line := range []string{
		"31", "step 5", "st 6", "line 32", "node 2", "graph #0", "why", "tensor a", "freed a",
		"b fn fee record", "break replay #2", "b line 32", "b rerecord", "clear", "help", "b", "b fn fe", "b line 999",
		"until", "until 35", "until 2", "delete 1", "del x",
		"export", "export graph", "s 4", "", " ", "b #", "b replay #-1", "line -1", "step 99999999999999999999",
		"node 1 2", "b fn", "tensor ", ":", "save", "quit",
	} {
		f.Add(line)
	}
	m := newModel(f, seedA, 120, 40, Options{SavePath: "/dev/null/unwritable"})
	gotoStep(f, m, "31")
	f.Fuzz(func(t *testing.T, line string) {
		if len(line) > 200 || strings.ContainsAny(line, "\r\n") {
			return
		}
		if strings.HasPrefix(strings.TrimSpace(line), "sa") {
			return // save writes files: not here
		}
		cmd := m.runLine(line)
		if cmd != nil {
			msg := cmd()
			if _, quit := msg.(tea.QuitMsg); !quit {
				m.Update(msg)
			}
		}
		if m.mode == modeOverlay {
			// :help and :b alone open a popup; a key closes it.
			m.Update(keyMsg("esc"))
		}
		if m.mode != modeNormal || m.Busy() {
			t.Fatalf("%q left mode %d, busy %v", line, m.mode, m.Busy())
		}
		if p := m.Pos(); p < 0 || p > m.snap.n || p != m.sess.Pos() {
			t.Fatalf("%q: position %d (session %d) of %d", line, p, m.sess.Pos(), m.snap.n)
		}
		if len(strings.Split(m.Render(), "\n")) != 40 {
			t.Fatalf("%q: the screen is not 40 lines", line)
		}
	})
}
