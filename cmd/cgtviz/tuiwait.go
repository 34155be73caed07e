package main

import (
	"context"
	"io"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/cgtviz/cgtviz/sessions"
	"github.com/cgtviz/cgtviz/traces"
)

// tuiWaitAfter is how long the TUI waits for a trace's header before it
// says what it waits for: a FIFO with no writer yet, a pipe whose writer
// has written nothing, keep it waiting for as long as they like.
const tuiWaitAfter = 250 * time.Millisecond

// openedIndex is the result of opening a trace to read on demand.
type openedIndex struct {
	ix  *traces.Index
	err error
}

// openIndexWaiting opens src as sessions.OpenIndexed does. When that
// takes longer than tuiWaitAfter and there is a terminal, a line says
// what is awaited, and q, esc or ctrl+c give up (quit is then true, and
// the open is abandoned); SIGINT and SIGTERM (ctx) give up too. The input
// is opened once: a FIFO's first writer is the one read.
func openIndexWaiting(ctx context.Context, src string, follow bool, stdout io.Writer) (ix *traces.Index, quit bool, err error) {
	octx, cancel := context.WithCancel(ctx)
	var res openedIndex
	done := make(chan struct{})
	go func() {
		res.ix, res.err = sessions.OpenIndexed(octx, src, follow)
		close(done)
	}()
	// giveUp abandons the open and closes what it opens after all.
	giveUp := func() {
		cancel()
		go func() {
			<-done
			if res.ix != nil {
				res.ix.Close()
			}
		}()
	}
	result := func() (*traces.Index, bool, error) {
		if res.err != nil {
			cancel()
			return nil, false, res.err
		}
		// The index's pass runs under octx until ix.Close ends it; octx
		// itself ends with ctx.
		return res.ix, false, nil
	}
	t := time.NewTimer(tuiWaitAfter)
	defer t.Stop()
	select {
	case <-done:
		return result()
	case <-ctx.Done():
		giveUp()
		return nil, false, ctx.Err()
	case <-t.C:
	}
	if !haveTTY() {
		select {
		case <-done:
			return result()
		case <-ctx.Done():
			giveUp()
			return nil, false, ctx.Err()
		}
	}
	opts, closeTTY, terr := teaOptions(ctx, src, stdout)
	if terr != nil {
		giveUp()
		return nil, false, terr
	}
	m := &waitModel{src: src, done: done}
	_, perr := tea.NewProgram(m, opts...).Run()
	closeTTY()
	select {
	case <-done:
		if !m.quit {
			return result()
		}
	default:
	}
	giveUp()
	switch {
	case m.quit:
		return nil, true, nil
	case ctx.Err() != nil:
		return nil, false, ctx.Err()
	}
	return nil, false, perr
}

// waitModel is the screen of a TUI waiting for its trace's header.
type waitModel struct {
	src  string
	done <-chan struct{}
	quit bool
}

type waitOver struct{}

func (m *waitModel) Init() tea.Cmd {
	return func() tea.Msg {
		<-m.done
		return waitOver{}
	}
}

func (m *waitModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case waitOver:
		return m, tea.Quit
	case tea.KeyPressMsg:
		switch msg.String() {
		case "q", "esc", "ctrl+c":
			m.quit = true
			return m, tea.Quit
		}
	}
	return m, nil
}

func (m *waitModel) View() tea.View {
	name := m.src
	if name == traces.Stdin {
		name = traces.StdinName
	}
	return tea.NewView("cgtviz: waiting for " + traces.Printable(name) + " to start (a pipe or FIFO with no writer yet?); q quits\n")
}
