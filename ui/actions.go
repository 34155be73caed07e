package ui

import (
	"errors"
	"fmt"
	"strconv"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/cgtviz/cgtviz/sessions"
)

// action is one of the root's keys: what no overlay and no focused pane
// took. The root's keys move the session, open prompts and popups, and
// act on the UI as a whole; each pane's own keys are its section of the
// KeyMap (pane.go).
type action struct {
	key *key.Binding
	do  func(m *Model, k tea.KeyPressMsg) tea.Cmd
}

// rootActions binds the root's keys of km to what they do.
func rootActions(km *KeyMap) []action {
	do := func(f func(m *Model)) func(*Model, tea.KeyPressMsg) tea.Cmd {
		return func(m *Model, _ tea.KeyPressMsg) tea.Cmd { f(m); return nil }
	}
	cmd := func(f func(m *Model) tea.Cmd) func(*Model, tea.KeyPressMsg) tea.Cmd {
		return func(m *Model, _ tea.KeyPressMsg) tea.Cmd { return f(m) }
	}
	ask := func(what mode) func(*Model, tea.KeyPressMsg) tea.Cmd {
		return do(func(m *Model) { m.openPrompt(&prompt{what: what}) })
	}
	return []action{
		{&km.Quit, cmd(func(*Model) tea.Cmd { return tea.Quit })},
		{&km.Help, do((*Model).toggleHelp)},
		{&km.Device, do((*Model).nextDevice)},
		{&km.NextPane, do(func(m *Model) { m.focusPane((m.focus + 1) % numPanes) })},
		{&km.PrevPane, do(func(m *Model) { m.focusPane((m.focus + numPanes - 1) % numPanes) })},
		{&km.Pane, func(m *Model, k tea.KeyPressMsg) tea.Cmd {
			if d, err := strconv.Atoi(k.String()); err == nil {
				m.focusPane(pane(d - 1))
			}
			return nil
		}},
		{&km.Zoom, do(func(m *Model) {
			m.zoom = !m.zoom
			if m.zoom {
				m.setMsg(fmt.Sprintf("%s zoomed: + again shows every pane", paneTitles[m.focus]), nil)
			} else {
				m.setMsg("", nil)
			}
			m.refresh()
		})},
		{&km.Next, cmd((*Model).stepForward)},
		{&km.Prev, cmd((*Model).stepBack)},
		{&km.Continue, cmd((*Model).continueForward)},
		{&km.Reverse, cmd((*Model).continueBack)},
		{&km.Goto, ask(modeGoto)},
		{&km.Search, ask(modeSearch)},
		{&km.Mark, ask(modeMark)},
		{&km.Jump, do(func(m *Model) { m.openPrompt(&prompt{what: modeJump, marks: m.sess.Bookmarks()}) })},
		{&km.Command, ask(modeCommand)},
		{&km.Why, cmd(func(m *Model) tea.Cmd {
			cmd, err := m.why()
			if err != nil {
				m.setMsg("", fmt.Errorf("why: %w", err))
			}
			return cmd
		})},
		{&km.NextMatch, cmd(func(m *Model) tea.Cmd { return m.find(1) })},
		{&km.PrevMatch, cmd(func(m *Model) tea.Cmd { return m.find(-1) })},
		{&km.Breakpoint, do((*Model).toggleLineBreakpoint)},
		{&km.KindBreak, do(func(m *Model) { m.push(&picker{}) })},
		{&km.Copy, cmd(func(m *Model) tea.Cmd { return m.copyOut(m.selectionText()) })},
		{&km.CopyMsg, cmd(func(m *Model) tea.Cmd {
			if m.msg == "" {
				m.setMsg("", errors.New("copy: no message to copy"))
				return nil
			}
			return m.copyOut(m.msg)
		})},
		{&km.Memory, cmd((*Model).toggleMemory)},
		{&km.MemPool, do(func(m *Model) {
			if m.mem.on {
				m.mem.pool = 1 - m.mem.pool
			}
		})},
		{&km.Mark2, do((*Model).markDiff)},
		{&km.Diff, do((*Model).showDiff)},
		{&km.Save, cmd((*Model).save)},
		{&km.Export, cmd((*Model).export)},
	}
}

// toggleHelp shows or hides the full key help (?).
func (m *Model) toggleHelp() {
	m.help.ShowAll = !m.help.ShowAll
	if m.help.ShowAll {
		// Too short a screen for every key under the panes: all of them
		// in a popup instead, none cut.
		all := m.help.fullLines(&m.keys, max(m.width, 20)-6)
		if room := max(m.height, 8) - 4 - 3; len(all) > room {
			m.help.ShowAll = false
			m.openOverlay(popup{title: "keys (j/k scroll, esc closes; :help lists the commands)", lines: all})
		}
	}
	m.refresh()
}

// nextDevice shows the pool and tensors of the next device (d).
func (m *Model) nextDevice() {
	if st := m.snap.state; st != nil && len(st.Devices) > 0 {
		m.dev = (m.dev + 1) % len(st.Devices)
		m.setMsg(fmt.Sprintf("pool and tensors of dev %d (a step shows its own device again)", m.dev), nil)
	}
}

// stepForward runs the next record (n).
func (m *Model) stepForward() tea.Cmd {
	return m.move(func(s *sessions.Session) (string, error) {
		if _, ok := s.Step(); !ok {
			if h := s.Horizon(); h != "" {
				return h, nil
			}
			return endOfTrace(s, "end of trace"), nil
		}
		return "", nil
	})
}

// endOfTrace is the message at the end of a trace wholly read: base, and
// where the trace's header says the recording did not end (the program
// died after its last record: traces.Header.Unended), that too.
func endOfTrace(s *sessions.Session, base string) string {
	if s.Header().Unended() {
		return base + "; the recording did not end here: the program died after this record"
	}
	return base
}

// stepBack goes back one record (N).
func (m *Model) stepBack() tea.Cmd {
	return m.move(func(s *sessions.Session) (string, error) {
		if err := s.Back(); errors.Is(err, sessions.ErrAtStart) {
			return "at the start of the trace", nil
		} else if err != nil {
			return "", err
		}
		return "", nil
	})
}

// continueForward runs to the next breakpoint (c).
func (m *Model) continueForward() tea.Cmd {
	return m.move(func(s *sessions.Session) (string, error) {
		h, err := s.Continue()
		end := endOfTrace(s, "end of trace: no breakpoint hit")
		if hz := s.Horizon(); hz != "" {
			end = hz + ": no breakpoint hit"
		}
		return m.hitText(h, end), err
	})
}

// continueBack goes back to the previous breakpoint (C).
func (m *Model) continueBack() tea.Cmd {
	return m.move(func(s *sessions.Session) (string, error) {
		h, err := s.ReverseContinue()
		return m.hitText(h, "start of trace: no breakpoint hit"), err
	})
}
