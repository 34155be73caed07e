package main

import (
	"context"
	"fmt"
	"io"
	"os"

	tea "charm.land/bubbletea/v2"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/render"
	"github.com/cgtviz/cgtviz/sessions"
	"github.com/cgtviz/cgtviz/ui"
)

// The TUI's lines in the command table (`cgtviz [TRACE]` and `cgtviz open`).
const (
	tuiUsage   = "[-check] [-save FILE] [TRACE]"
	tuiSummary = "step through a trace in the terminal debugger (no trace: the demo)"
)

// runTUI opens the terminal debugger on a trace, or on the embedded demo
// when none is given. It exits 0 when the user quits, 2 on bad arguments or
// a bad trace, 1 when the terminal fails.
func runTUI(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("tui")
	check := fs.Bool("check", false, "run the engine's invariant checker after every record")
	save := fs.String("save", ui.DefaultSavePath, "the session `file` that s writes")
	pos, code, done := parseArgs(fs, args, stdout, stderr)
	if done {
		return code
	}
	if len(pos) > 1 {
		fmt.Fprintf(stderr, "cgtviz: one trace at most, got %d\n", len(pos))
		return 2
	}
	src := sessions.DemoSource
	if len(pos) == 1 {
		src = pos[0]
	}
	tr, err := sessions.OpenTrace(src)
	if err != nil {
		fmt.Fprintf(stderr, "cgtviz: %v\n", err)
		return 2
	}
	s, err := sessions.New(tr, sessions.Options{Source: src, Check: *check})
	if err != nil {
		fmt.Fprintf(stderr, "cgtviz: %v\n", err)
		return 1
	}
	return tuiRun(ctx, s, *save, stdout, stderr)
}

// tuiRun runs the Bubble Tea program over a session until the user quits.
func tuiRun(ctx context.Context, s *sessions.Session, savePath string, stdout, stderr io.Writer) int {
	defer s.Close()
	m := ui.New(s, ui.Options{
		// NO_COLOR (no-color.org): any non-empty value turns colors off. The
		// renderer also honours it; the styles then differ by glyph alone.
		Color:    os.Getenv("NO_COLOR") == "",
		SavePath: savePath,
		Export:   tuiExport,
	})
	p := tea.NewProgram(m, tea.WithContext(ctx), tea.WithOutput(stdout))
	if _, err := p.Run(); err != nil && ctx.Err() == nil {
		fmt.Fprintf(stderr, "cgtviz: terminal: %v\n", err)
		return 1
	}
	return 0
}

// tuiExport renders the tree as SVG with the last step highlighted; the UI
// calls it from a tea.Cmd.
func tuiExport(ctx context.Context, st *engine.State, step *engine.Step) ([]byte, error) {
	opts := render.TreeOptions{}
	if step != nil {
		opts.SetStep(step)
	}
	dot, err := render.TreeDOT(st, opts)
	if err != nil {
		return nil, err
	}
	return render.SVG(ctx, dot)
}
