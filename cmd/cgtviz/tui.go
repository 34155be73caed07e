package main

import (
	"context"
	"fmt"
	"io"
	"os"

	tea "charm.land/bubbletea/v2"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/render"
	"github.com/cgtviz/cgtviz/sessions"
	"github.com/cgtviz/cgtviz/ui"
)

// The TUI's lines in the command table (`cgtviz [TRACE]` and `cgtviz open`).
const (
	tuiUsage   = "[-check] [-device sim|cuda|auto] [-handoff preserve|raise] [-save FILE] [-mouse=false] [TRACE]"
	tuiSummary = "step through a trace in the terminal debugger (no trace: the demo)"
)

// runTUI opens the terminal debugger on a trace, or on the embedded demo
// when none is given. It exits 0 when the user quits, 2 on bad arguments or
// a bad trace, 1 when the terminal fails.
func runTUI(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("tui")
	check := fs.Bool("check", false, "run the engine's invariant checker after every record")
	dev := fs.String("device", "sim", tuiDeviceHelp)
	save := fs.String("save", ui.DefaultSavePath, "the session `file` that s writes")
	mouse := fs.Bool("mouse", true, mouseHelp)
	handoff := addHandoffFlag(fs)
	pos, code, done := parseArgs(fs, args, stdout, stderr)
	if done {
		return code
	}
	if len(pos) > 1 {
		fmt.Fprintf(stderr, "cgtviz: one trace at most, got %d\n", len(pos))
		return 2
	}
	if !tuiDeviceOK(*dev) {
		fmt.Fprintf(stderr, "cgtviz: unknown device %q (want %s)\n", *dev, deviceChoices)
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
	s, err := sessions.New(tr, sessions.Options{Source: src, Check: *check, NewDevices: tuiDevices(*dev), Handoff: *handoff})
	if err != nil {
		fmt.Fprintf(stderr, "cgtviz: %v\n", err)
		return 1
	}
	return tuiRun(ctx, s, *save, *mouse, stdout, stderr)
}

// mouseHelp documents -mouse, which tui and open share.
const mouseHelp = "clicks focus panes and pick lines, the wheel scrolls; false leaves the mouse to the terminal (to select text)"

// tuiDeviceHelp documents -device. The TUI defaults to the simulated
// device even in a cuda build: it snapshots, so going back is instant; on a
// GPU going back re-runs the trace from the start.
const tuiDeviceHelp = "`device`: " + deviceChoices + "; on a GPU, going back re-runs the trace from the start"

// tuiDeviceOK reports whether -device names a backend openDevices knows.
func tuiDeviceOK(name string) bool {
	return name == "sim" || name == "cuda" || name == "auto"
}

// tuiDevices opens the session's devices (again at each re-run from the
// start); the session closes them.
func tuiDevices(name string) func(n int) ([]device.Device, error) {
	return func(n int) ([]device.Device, error) {
		devs, _, err := openDevices(name, n)
		return devs, err
	}
}

// tuiRun runs the Bubble Tea program over a session until the user quits.
func tuiRun(ctx context.Context, s *sessions.Session, savePath string, mouse bool, stdout, stderr io.Writer) int {
	defer s.Close()
	m := ui.New(s, ui.Options{
		// NO_COLOR (no-color.org): any non-empty value turns colors off. The
		// renderer also honours it; the styles then differ by glyph alone.
		Color:       os.Getenv("NO_COLOR") == "",
		SavePath:    savePath,
		Export:      tuiExport,
		ExportGraph: tuiExportGraph,
		NoMouse:     !mouse,
	})
	p := tea.NewProgram(m, tea.WithContext(ctx), tea.WithOutput(stdout))
	if _, err := p.Run(); err != nil && ctx.Err() == nil {
		fmt.Fprintf(stderr, "cgtviz: terminal: %v\n", err)
		return 1
	}
	return 0
}

// tuiExportGraph renders a node's CUDA graph as SVG, as the simulated
// device records it (on a GPU, `cgtviz export --run-on cuda --graph` prints
// the driver's own); the UI calls it from a tea.Cmd.
func tuiExportGraph(ctx context.Context, st *engine.State, dev, id int) ([]byte, error) {
	dot, err := render.NodeGraphDOT(st, dev, id, "")
	if err != nil {
		return nil, err
	}
	return render.SVG(ctx, dot)
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
