package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/term"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/render"
	"github.com/cgtviz/cgtviz/sessions"
	"github.com/cgtviz/cgtviz/traces"
	"github.com/cgtviz/cgtviz/ui"
)

// The TUI's lines in the command table (`cgtviz [TRACE]` and `cgtviz open`).
const (
	tuiUsage   = "[-check] [-device sim|cuda|auto] [-follow] [-keyframe-mb N] [-handoff preserve|raise|version] [-save FILE] [-mouse=false] [TRACE]"
	tuiSummary = "step through a trace in the terminal debugger (no trace: the demo)"
)

// runTUI opens the terminal debugger on a trace, or on the embedded demo
// when none is given. It exits 0 when the user quits, 2 on bad arguments or
// a bad trace, 1 when the terminal fails.
func runTUI(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, f := newTUIFlags()
	check, dev, save, mouse, handoff, kfmb, follow := f.check, f.dev, f.save, f.mouse, f.handoff, f.keyframeMB, f.follow
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
	if *dev == "cuda" && !hasCUDA {
		// As run says it, and with its exit status: a flag this binary
		// cannot honour is a bad argument, not a failing terminal.
		_, _, err := cudaDevices(1)
		fmt.Fprintf(stderr, "cgtviz: -device cuda: %v\n", err)
		return 2
	}
	if *kfmb < 0 {
		fmt.Fprintf(stderr, "cgtviz: -keyframe-mb %d: want 0 (no cap) or more\n", *kfmb)
		return 2
	}
	src := sessions.DemoSource
	if len(pos) == 1 {
		src = pos[0]
	}
	opts := sessions.Options{Source: src, Check: *check, NewDevices: tuiDevicesOf(*dev, f.devMem), Handoff: *handoff, KeyframeBytes: keyframeBytes(*kfmb)}
	recs, closeRecs, code := tuiRecords(ctx, src, *follow, &opts, stdout, stderr)
	if recs == nil {
		return code
	}
	defer closeRecs()
	s, err := sessions.NewRecords(recs, opts)
	if err != nil {
		printProblems(stderr, "cgtviz: ", err)
		return 1
	}
	return tuiRun(ctx, s, *save, *mouse, stdout, stderr)
}

// tuiQuickCheck is how long the TUI waits for the background check of a
// trace read on demand before it shows the first screen: a small trace is
// checked whole by then, and one with problems is refused with all of them
// as before; a big one opens at once and shows its problems where they are
// when the check reaches them.
const tuiQuickCheck = 100 * time.Millisecond

// tuiRecords opens the trace the TUI steps through: the demo in memory,
// anything else read on demand (sessions.OpenIndexed): a plain file
// indexed and checked in the background (followed with -follow); standard
// input, a pipe or FIFO, a compressed file read once into a temporary
// file and indexed there, so that memory is bounded as for a plain file.
// An input that keeps the TUI waiting for its header (a FIFO with no
// writer yet) shows a waiting screen that q and ctrl+c leave. It returns
// nil and the exit code when it cannot; the returned function closes what
// it opened.
func tuiRecords(ctx context.Context, src string, follow bool, opts *sessions.Options, stdout, stderr io.Writer) (sessions.Records, func(), int) {
	if src == sessions.DemoSource {
		tr, fp, err := sessions.OpenTraceFingerprint(src)
		if err != nil {
			printProblems(stderr, "cgtviz: ", err)
			return nil, nil, 2
		}
		opts.Fingerprint = fp
		return sessions.InMemory(tr), func() {}, 0
	}
	ix, quit, err := openIndexWaiting(ctx, src, follow, stdout)
	switch {
	case quit:
		return nil, nil, 0
	case ctx.Err() != nil:
		return nil, nil, exitInterrupted
	case follow && errors.Is(err, traces.ErrNotIndexable):
		fmt.Fprintf(stderr, "cgtviz: -follow: %s: %v (follow a plain file)\n", src, err)
		return nil, nil, 2
	case err != nil:
		printProblems(stderr, "cgtviz: ", err)
		return nil, nil, 2
	}
	if ps := quickProblems(ix, tuiQuickCheck); len(ps) > 0 {
		ix.Close()
		printProblems(stderr, "cgtviz: ", traces.Problems(ps))
		return nil, nil, 2
	}
	// A followed or spooled trace has no size to go by; a user's
	// GOMEMLIMIT stands.
	if fi, err := os.Stat(src); err == nil && fi.Mode().IsRegular() && !follow && os.Getenv("GOMEMLIMIT") == "" && opts.KeyframeBytes > 0 && ix.Progress().Size >= 0 {
		kf, size := opts.KeyframeBytes, fi.Size()
		debug.SetMemoryLimit(tuiMemoryLimit(kf, size, 0))
		opts.OnGrow = func(nodes int) { debug.SetMemoryLimit(tuiMemoryLimit(kf, size, nodes)) }
	}
	return sessions.Indexed(ix), func() { ix.Close() }, 0
}

// quickProblems waits up to d for an index's check to end and returns its
// problems when it ended with some; nil when it is clean or still running
// (followed, or too big to check in d).
func quickProblems(ix *traces.Index, d time.Duration) []traces.Problem {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ix.Done():
		return ix.Progress().Problems
	case <-t.C:
		return nil
	}
}

// tuiFlags are the TUI's flags (cgtviz [flags] [TRACE] and cgtviz tui).
type tuiFlags struct {
	check, mouse *bool
	dev, save    *string
	handoff      *engine.Handoff
	keyframeMB   *int64
	follow       *bool
	devMem       *int64
}

// newTUIFlags defines the TUI's flags; `cgtviz -h` prints them too.
func newTUIFlags() (*flag.FlagSet, tuiFlags) {
	fs := newFlags("tui")
	var f tuiFlags
	f.check = fs.Bool("check", false, "run the engine's invariant checker after every record")
	f.dev = fs.String("device", "auto", tuiDeviceHelp)
	f.keyframeMB = fs.Int64("keyframe-mb", sessions.DefaultKeyframeBytes>>20, "the `MiB` of memory the keyframes of going back may hold (device memory on a GPU); past it they thin; 0: no cap")
	f.save = fs.String("save", ui.DefaultSavePath, "the session `file` that s writes")
	f.mouse = fs.Bool("mouse", true, mouseHelp)
	f.follow = fs.Bool("follow", false, "follow a trace still being written: new records appear as they land (as less +F does)")
	f.handoff = addHandoffFlag(fs)
	f.devMem = addDeviceMemoryFlag(fs)
	return fs, f
}

// mouseHelp documents -mouse, which tui and open share.
const mouseHelp = "clicks focus panes and pick lines, the wheel scrolls; false leaves the mouse to the terminal (to select text)"

// keyframeBytes turns -keyframe-mb into Options.KeyframeBytes (0: no cap,
// which the session spells negative).
func keyframeBytes(mb int64) int64 {
	if mb == 0 {
		return -1
	}
	return mb << 20
}

// What a session of a trace read on demand holds besides its keyframes,
// for the TUI's soft memory limit (tuiMemoryLimit): about
// tuiBytesPerRecord a record (index, history, timeline; BENCHMARKS.md),
// where a record takes at least tuiMinRecordBytes of the file
// (`{"op":"step"}` and its newline), and tuiBytesPerNode a node of the
// tree (the live engine, its State and the UI's views: 64 MB of heap at
// 10,000 nodes with one keyframe, BENCHMARKS.md).
const (
	tuiBytesPerRecord = 9
	tuiMinRecordBytes = 14
	tuiBytesPerNode   = 6400
)

// tuiMemoryLimit is the soft memory limit (runtime/debug.SetMemoryLimit)
// of the TUI on a trace file of size bytes read on demand, with the
// keyframes capped at kf bytes, once the tree has nodes nodes: twice what
// the session may hold, the keyframes at their cap and the rest, which is
// the collector's goal for that heap. It complements the keyframes' cap,
// it does not replace it: the collector lets the heap grow to twice what
// it found live at its last cycle, and on a loaded machine a cycle's mark
// lasts long enough (up to a second) that what a jump allocates meanwhile
// counts as live, so the goal ran to 550-980 MB at 10,000 nodes
// (BENCHMARKS.md) where the heap truly live was 165-250 MB. The limit
// follows the tree as it grows (sessions.Options.OnGrow), so that a bigger
// tree, whose live engine needs more, is not held to a small tree's
// figure. 0 for kf <= 0 (no cap): no limit either.
func tuiMemoryLimit(kf, size int64, nodes int) int64 {
	if kf <= 0 || size < 0 || nodes < 0 {
		return 0
	}
	return 2 * (kf + tuiBytesPerRecord*(size/tuiMinRecordBytes) + tuiBytesPerNode*int64(nodes))
}

// tuiDeviceHelp documents -device. The TUI defaults to auto: a cuda build
// runs the engine live on the GPU when there is one (the GPU clones, so
// going back restores keyframes there as on sim), else the simulated device.
const tuiDeviceHelp = "`device`: " + deviceChoices + "; auto is the GPU when this binary has the cuda backend and a GPU is there, else sim"

// tuiDeviceOK reports whether -device names a backend openDevices knows.
func tuiDeviceOK(name string) bool {
	return name == "sim" || name == "cuda" || name == "auto"
}

// tuiDevices opens the session's devices (again at each re-run from the
// start); the session closes them. auto is settled at the first call: the
// GPU when it opens, else sim, and the same backend at every later call,
// so that a re-run never moves the session from one backend to another.
func tuiDevices(name string) func(n int) ([]device.Device, error) {
	return tuiDevicesOf(name, new(int64))
}

// tuiDevicesOf is tuiDevices with --device-memory (0: an H200's: the
// session opens its devices before a caller could see the header).
func tuiDevicesOf(name string, devMem *int64) func(n int) ([]device.Device, error) {
	return func(n int) ([]device.Device, error) {
		if name == "auto" {
			if !hasCUDA {
				name = "sim"
			} else if devs, _, err := cudaDevices(n); err == nil {
				name = "cuda"
				return devs, nil
			} else {
				// No GPU (or no driver): the simulated device, as auto says.
				name = "sim"
			}
		}
		devs, _, err := openDevices(name, n, simMemory(*devMem, traces.Header{}))
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
	opts, closeTTY, err := teaOptions(ctx, s.Source(), stdout)
	if err != nil {
		fmt.Fprintf(stderr, "cgtviz: %v\n", err)
		return 1
	}
	defer closeTTY()
	p := tea.NewProgram(m, opts...)
	m.SetSend(p.Send)
	if _, err := p.Run(); err != nil && ctx.Err() == nil {
		// Bubble Tea has put the terminal back (it does on every
		// way out of Run, a panic included); the error is printed on
		// the screen the user had.
		fmt.Fprintf(stderr, "cgtviz: terminal: %v\n", err)
		return 1
	}
	return 0
}

// teaOptions are the options of the TUI's programs: ctx ends them, and
// when the trace comes down standard input the keys come from the
// terminal (/dev/tty; the returned function closes it).
func teaOptions(ctx context.Context, src string, stdout io.Writer) ([]tea.ProgramOption, func(), error) {
	opts := []tea.ProgramOption{tea.WithContext(ctx), tea.WithOutput(stdout)}
	if src == traces.Stdin && !term.IsTerminal(os.Stdin.Fd()) {
		tty, err := os.Open("/dev/tty")
		if err != nil {
			return nil, nil, fmt.Errorf("the trace came from standard input and there is no terminal for the keys: %w", err)
		}
		return append(opts, tea.WithInput(tty)), func() { tty.Close() }, nil
	}
	return opts, func() {}, nil
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
