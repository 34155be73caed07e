package ui

import (
	"path/filepath"
	"strconv"
	"testing"

	"github.com/cgtviz/cgtviz/tools/golden"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/cgtviz/cgtviz/sessions"
)

// seedA is the demo trace: the seed thread's first example.
const seedA = "../examples/seed-a-checkpoint.cgt.jsonl"

// newModel opens a trace in a session and a UI of size w×h.
func newModel(t testing.TB, path string, w, h int, opts Options) *Model {
	t.Helper()
	tr, err := sessions.OpenTrace(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := sessions.New(tr, sessions.Options{Source: path})
	if err != nil {
		t.Fatal(err)
	}
	m := New(s, opts)
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	return m
}

// keyMsg makes the key press a terminal sends for name: one character, or
// a key name ("enter", "esc", "tab", "shift+tab", "backspace", "space",
// "ctrl+n", "ctrl+c", "up", "down").
func keyMsg(name string) tea.KeyPressMsg {
	switch name {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "shift+tab":
		return tea.KeyPressMsg{Code: tea.KeyTab, Mod: tea.ModShift}
	case "backspace":
		return tea.KeyPressMsg{Code: tea.KeyBackspace}
	case "space":
		return tea.KeyPressMsg{Code: tea.KeySpace, Text: " "}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "ctrl+n":
		return tea.KeyPressMsg{Code: 'n', Mod: tea.ModCtrl}
	case "ctrl+c":
		return tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	}
	r := []rune(name)
	return tea.KeyPressMsg{Code: r[0], Text: name}
}

// press sends keys to the model and runs the commands they return, as the
// Bubble Tea runtime would, feeding each command's message back. It returns
// the last command's message (nil when none).
func press(t testing.TB, m *Model, keys ...string) tea.Msg {
	t.Helper()
	var last tea.Msg
	for _, k := range keys {
		_, cmd := m.Update(keyMsg(k))
		if msg := runCmd(m, cmd); msg != nil {
			last = msg
			if _, quit := msg.(tea.QuitMsg); quit {
				return msg
			}
		}
	}
	return last
}

// runCmd runs a command and everything it leads to, one at a time (a batch's
// commands in order), feeding each message to the model. It returns the
// last message, or the QuitMsg that ends it.
func runCmd(m *Model, cmd tea.Cmd) tea.Msg {
	var last tea.Msg
	queue := []tea.Cmd{cmd}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		if c == nil {
			continue
		}
		msg := c()
		if batch, ok := msg.(tea.BatchMsg); ok {
			queue = append(queue, batch...)
			continue
		}
		last = msg
		if _, quit := msg.(tea.QuitMsg); quit {
			return msg
		}
		_, next := m.Update(msg)
		queue = append(queue, next)
	}
	return last
}

// typed returns the keys that type s.
func typed(s string) []string {
	var out []string
	for _, r := range s {
		if r == ' ' {
			out = append(out, "space")
		} else {
			out = append(out, string(r))
		}
	}
	return out
}

// gotoStep goes to position n (records run) the way a user does: g, the
// trace line of the record n has run (0 for the start), enter.
func gotoStep(t testing.TB, m *Model, n string) {
	t.Helper()
	pos, err := strconv.Atoi(n)
	if err != nil {
		t.Fatal(err)
	}
	press(t, m, append(append([]string{"g"}, typed(strconv.Itoa(m.lineOf(pos)))...), "enter")...)
	if m.Pos() != pos {
		t.Fatalf("g %d: at position %d, want %d", m.lineOf(pos), m.Pos(), pos)
	}
}

// screen is the model's frame without styles.
func screenText(m *Model) string { return ansi.Strip(m.View().Content) }

// checkGolden compares got with testdata/name.golden, or rewrites it with
// -update.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", name+".golden"), []byte(got))
}
