package ui

import (
	"fmt"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/cgtviz/cgtviz/sessions"
)

func TestSmoke(t *testing.T) {
	tr, err := sessions.OpenTrace(sessions.DemoSource)
	if err != nil {
		t.Fatal(err)
	}
	s, err := sessions.New(tr, sessions.Options{Source: sessions.DemoSource})
	if err != nil {
		t.Fatal(err)
	}
	m := New(s, Options{})
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	for i := 0; i < 32; i++ {
		_, cmd := m.Update(tea.KeyPressMsg{Code: 'n', Text: "n"})
		if cmd != nil {
			m.Update(cmd())
		}
	}
	fmt.Println(ansi.Strip(m.Render()))
}
