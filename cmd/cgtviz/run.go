package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/engine/alloc"
	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/engine/device/sim"
	"github.com/cgtviz/cgtviz/engine/report"
	"github.com/cgtviz/cgtviz/examples"
	"github.com/cgtviz/cgtviz/render"
	"github.com/cgtviz/cgtviz/traces"
)

// runRun is `cgtviz run`: it runs a trace and prints what the tree did and
// why. Exit status: 0 when every expectation held, 1 when one failed (or,
// with --stop-on-error, a record raised), 2 when the trace could not be read.
//
// The input is read once, as a stream (a pipe works as a file does): each
// record is checked as it comes and run only once it has checked, so a bad
// record is reported as file:line before the engine acts on it, and the
// rest of the trace is still checked so that every problem is reported.
func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("run")
	asJSON := fs.Bool("json", false, "print the report as JSON (the format of spec trace-v1, \"Reports\")")
	logLines := fs.Bool("log", false, "print every decision as TORCH_LOGS=cudagraphs lines, and every note at its line (to stderr with --json)")
	devName := fs.String("device", defaultDevice, "device: "+deviceChoices)
	stopOnErr := fs.Bool("stop-on-error", false, "stop at the first record that raises an error")
	check := fs.Bool("check", false, "check the engine's invariants after every record")
	follow := fs.Bool("follow", false, "follow a trace still being written (as less +F): wait at its end for more records; a pipe ends when its writer closes it, a file on Ctrl-C or after --follow-timeout")
	idle := fs.Duration("follow-timeout", 0, "with --follow, end after this `duration` with nothing new (0: wait until Ctrl-C)")
	handoff := addHandoffFlag(fs)
	devMem := addDeviceMemoryFlag(fs)
	pos, code, done := parseArgs(fs, args, stdout, stderr)
	if done {
		return code
	}
	pos = orStdin(pos)
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "cgtviz run: want one TRACE, got %d arguments\n", len(pos))
		commandUsage(fs, stderr)
		return 2
	}
	if *idle < 0 {
		fmt.Fprintf(stderr, "cgtviz run: --follow-timeout %v: want 0 or more\n", *idle)
		return 2
	}
	in, cr, code := openChecked(ctx, stderr, "run", func() (*traces.Input, error) {
		if *follow {
			return traces.OpenFollow(ctx, pos[0], *idle)
		}
		return openInputCtx(ctx, pos[0])
	})
	if cr == nil {
		return code
	}
	defer in.Close()
	file := in.Name()
	hdr := cr.Header()
	devs, closeDevs, err := openDevices(*devName, hdr.Devices, simMemory(*devMem, hdr))
	if err != nil {
		fmt.Fprintf(stderr, "cgtviz run: %v\n", err)
		return 2
	}
	defer closeDevs()
	name := traceTitle(hdr, file)
	// Output is buffered (one write(2) per 64 KiB, not per record) and
	// flushed at the end, on every error path and, when following, after
	// each record so that a followed run shows records as they land.
	out := bufio.NewWriterSize(stdout, 64<<10)
	errOut := bufio.NewWriterSize(stderr, 16<<10)
	flush := func() error { return errors.Join(out.Flush(), errOut.Flush()) }
	defer flush()
	rule, handoffText := resolveHandoffFlag(*handoff, hdr)
	rep := report.New(name, devs[0].Name())
	logw := out
	if *asJSON {
		logw = errOut
	}
	// Steps are written as they run, so that memory stays flat however long
	// the trace is, each straight from the engine's Step (report.AppendText,
	// report.StepWriter): no entry is made per record.
	var jsonSteps *report.StepWriter
	if *asJSON {
		jsonSteps = rep.JSONSteps(&jsonControls{w: out})
	}
	// The text report's first lines are printed once the first record
	// has checked (or at the end of a trace with none): a trace refused
	// at its first record prints nothing on stdout.
	started := *asJSON
	start := func() {
		if started {
			return
		}
		started = true
		fmt.Fprintf(out, "trace: %s (device %s)\n", traces.Printable(rep.Trace), rep.Device)
		if handoffText != "" {
			fmt.Fprintln(out, handoffText)
		}
		if note := versionNote(*handoff, hdr); note != "" {
			fmt.Fprintln(out, note)
		}
	}
	stopProgress := startProgress(stdout, stderr, "run", in)
	defer stopProgress()
	// A followed run ends when its input does (the follower watches ctx):
	// the engine must not stop first, or Ctrl-C would lose the summary.
	runCtx := ctx
	if *follow {
		runCtx = context.WithoutCancel(ctx)
	}
	var werr error
	failedErr := false
	stoppedAt := 0 // the line --stop-on-error stopped at
	var hint handoffHint
	var line []byte // the text report's line, reused
	// The Steps are the engine's reused buffers (RunStream): nothing here
	// keeps one past its call. A followed trace runs with Run: RunStream
	// reads ahead on a goroutine, which, stopped early, it would wait for,
	// and a followed input can wait long for its next record.
	// On a GPU too: there RunStream once read a kernel's output as zeros
	// (docs/gpu-runs/2026-12-01-h200.md, run 12), and until that is
	// understood a real device runs on the one goroutine of Run.
	runEngine := engine.RunStream
	if *follow || !allSim(devs) {
		runEngine = engine.Run
	}
	defer setRunGC()()
	// No allocator event log: a run's report never reads it (memory
	// snapshots do: `cgtviz snapshot`, the TUI), and a big tree fills it
	// (12 MB at 10,000 nodes).
	opts := engine.Options{Devices: devs, Check: *check, File: file, Handoff: rule,
		AllocOptions: alloc.Options{TraceMax: -1}}
	var recs engine.Records = cr
	var notes *srcNotes
	if *logLines {
		notes = newSrcNotes(cr)
		recs = notes
	}
	lastLine := 1 // the last record's line (the header's before any)
	e, err := runEngine(runCtx, hdr, recs, opts, func(s *engine.Step) bool {
		lastLine = s.Line
		hint.see(s)
		start()
		if jsonSteps != nil {
			if err := jsonSteps.Step(s); err != nil && werr == nil {
				werr = err
			}
		} else {
			rep.Tally(s)
			if line = report.AppendText(line[:0], s); len(line) > 0 {
				if _, err := out.Write(line); err != nil && werr == nil {
					werr = err
				}
			}
		}
		if *logLines {
			if s.Note != "" {
				fmt.Fprintf(logw, "%s:%d: note: %s\n", file, s.Line, traces.Printable(s.Note))
			}
			src := notes.take(s.Line)
			for _, ev := range s.Events {
				if l := engine.LogLine(file, ev); l != "" {
					if src != nil {
						// The user's line before the step's first line.
						fmt.Fprintln(logw, srcLogLine(file, s.Line, src))
						src = nil
					}
					fmt.Fprintln(logw, l)
				}
			}
		}
		if *follow {
			if err := flush(); err != nil && werr == nil {
				werr = err
			}
		}
		if s.Err != nil && *stopOnErr {
			failedErr, stoppedAt = true, s.Line
			return false
		}
		return werr == nil
	})
	stopProgress()
	if err != nil {
		flush()
		if interrupted(ctx, stderr, "run") {
			return exitInterrupted
		}
		printProblems(stderr, "cgtviz run: ", err)
		return 2
	}
	start()
	if werr != nil {
		fmt.Fprintf(stderr, "cgtviz run: write the report: %v\n", werr)
		return 2
	}
	// One State for the summary: at 10,000 nodes one costs 10-20 ms.
	st := e.State()
	rep.Finish(st)
	if *asJSON {
		if err := jsonSteps.End(); err != nil {
			fmt.Fprintf(stderr, "cgtviz run: write the report: %v\n", err)
			return 2
		}
	} else {
		tree := ""
		for d := range st.Devices {
			if len(st.Devices) > 1 {
				tree += fmt.Sprintf("device %d (%s):\n", d, st.Devices[d].Name)
			}
			tree += render.TreeText(st, d)
		}
		if err := rep.WriteSummary(out, tree); err != nil {
			fmt.Fprintf(stderr, "cgtviz run: write the report: %v\n", err)
			return 2
		}
		writeNoCallNotes(out, file, rep)
	}
	if hint.applies(rule) {
		fmt.Fprintln(logw, handoffHintText)
	}
	if h := intSizesHint(st); h != "" {
		fmt.Fprintln(logw, h)
	}
	if stoppedAt > 0 {
		// The exit status is 1 for that error; say why beside the
		// expectations' count, which only covers the records that ran.
		fmt.Fprintf(logw, "stopped at line %d: its record raised an error (--stop-on-error); the records after it did not run\n", stoppedAt)
	}
	if c := cr.Cut(); c != nil {
		// The records before it ran: say the trace stopped there.
		fmt.Fprintf(logw, "%s\n", c)
	} else if hdr.Unended() {
		// (Located, as every line of the log is: after the last record.)
		fmt.Fprintf(logw, "%s:%d: note: %s\n", file, lastLine, traces.UnendedNote)
	}
	if err := flush(); err != nil {
		fmt.Fprintf(stderr, "cgtviz run: write the report: %v\n", err)
		return 2
	}
	if len(rep.Expectations.Failed) > 0 || failedErr {
		return 1
	}
	return 0
}

// printProblems prints an error reading a trace: each problem on its own
// line (file:line: message), anything else after prefix.
func printProblems(w io.Writer, prefix string, err error) {
	var ps traces.Problems
	var p *traces.Problem
	switch {
	case errors.As(err, &ps):
		for _, p := range ps {
			fmt.Fprintln(w, p.String())
		}
	case errors.As(err, &p):
		fmt.Fprintln(w, p.String())
	default:
		fmt.Fprintf(w, "%s%v\n", prefix, err)
	}
}

// writeNoCallNotes shows, under the summary of a trace that held no
// compiled call, the notes that say why (report.NoCallNotes), instead of a
// bare empty tree.
func writeNoCallNotes(w io.Writer, file string, rep *report.Report) {
	notes, more := rep.NoCallNotes()
	if len(notes) == 0 {
		return
	}
	fmt.Fprintf(w, "no compiled calls in %s; its notes say:\n", file)
	for _, n := range notes {
		fmt.Fprintf(w, "  line %d: %s\n", n.Line, traces.Printable(n.Text))
	}
	if more > 0 {
		fmt.Fprintf(w, "  (and %d more)\n", more)
	}
}

// handoffHint notices a trace that expects PyTorch 2.11's overwritten error
// where the engine, under the default rule, preserved an output handed to
// the next call: a recording of a 2.11 program that met the chained-call
// failure. run then suggests --handoff raise.
type handoffHint struct{ preserved, wantedOverwritten bool }

func (h *handoffHint) see(s *engine.Step) {
	for _, ev := range s.Events {
		if ev.Kind == engine.EvPreserve {
			h.preserved = true
		}
	}
	for _, f := range s.ExpectFailures {
		// The trace wants PyTorch's overwritten error and the engine raised
		// none, or another.
		if f.Field == "error" && strings.Contains(f.WantError, "overwritten") {
			h.wantedOverwritten = true
		}
	}
}

func (h *handoffHint) applies(rule engine.Handoff) bool {
	return rule == engine.HandoffPreserve && h.preserved && h.wantedOverwritten
}

// intSizesHint says report.FindIntSizes' graph, "" when there is none.
func intSizesHint(st *engine.State) string {
	is, ok := report.FindIntSizes(st)
	if !ok {
		return ""
	}
	return fmt.Sprintf("hint: %s's compiled graph got a function of its own for %d more sizes whose tensors all have its shapes, "+
		"each warmed up and recorded before it replays: %s", traces.Printable(is.Graph), len(is.Fns), report.IntSizesAdvice)
}

const handoffHintText = "hint: the trace expects PyTorch 2.11's overwritten error where cgtviz kept an output handed to the next compiled call (its default, PyTorch's later fix); run it with --handoff raise to replay 2.11 exactly"

// openInput opens a trace for reading: the embedded demo for "demo",
// standard input for "-", else a file (gzip and zstd decompressed).
func openInput(path string) (*traces.Input, error) {
	if path == examples.DemoSource {
		return traces.NewInput(examples.OpenDemo())
	}
	return traces.Open(path)
}

// problemOf is err as a problem about file.
func problemOf(err error, file string) traces.Problem {
	var p *traces.Problem
	if errors.As(err, &p) {
		return *p
	}
	return traces.Problem{File: file, Msg: err.Error()}
}

// allSim reports whether every device is the simulated one.
func allSim(devs []device.Device) bool {
	for _, d := range devs {
		if _, ok := d.(*sim.Device); !ok {
			return false
		}
	}
	return true
}

// runGCPercent is the collector's GOGC during a run, unless $GOGC says.
// A run's heap is mostly the tree, which only grows: at the default 100
// the collector marks all of it again each time it doubles, which was a
// sixth of the time of growing a tree of 10,000 nodes (the 50,001
// records that grow the scale trace's: 0.53-0.64 s at 100, 0.45-0.49 s
// at 400, BENCHMARKS.md), while a replay allocates next to nothing. The
// cost is a heap up to 5 times the live one where the default keeps 2:
// the 1M-record 10-node scale trace peaks at 25 MB of RSS (19 MB at
// 100), the 10,000-node one at 165 MB (137 MB).
const runGCPercent = 400

// runGC counts the runs of this process that have the collector set:
// tests run many commands in one process, some at once, and the setting
// is the process's; the first to start sets it, the last to end puts back
// what was before.
var runGC struct {
	sync.Mutex
	runs, old int
}

// setRunGC sets the collector for a run and returns what puts it back.
func setRunGC() (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	runGC.Lock()
	defer runGC.Unlock()
	if runGC.runs == 0 {
		runGC.old = debug.SetGCPercent(runGCPercent)
	}
	runGC.runs++
	return func() {
		runGC.Lock()
		defer runGC.Unlock()
		if runGC.runs--; runGC.runs == 0 {
			debug.SetGCPercent(runGC.old)
		}
	}
}

// jsonControls escapes the control characters encoding/json leaves raw in
// its strings, DEL and the C1 controls (U+0080 to U+009F: CSI is
// U+009B), as \u00XX: the same JSON, which can no longer drive a terminal
// it is printed on. They can only stand within strings, so the escape
// means what the raw character meant. Each Write must be whole UTF-8 (the
// report writes whole entries).
type jsonControls struct{ w io.Writer }

func (j *jsonControls) Write(p []byte) (int, error) {
	clean := true
	for i := 0; i < len(p) && clean; i++ {
		clean = p[i] != 0x7f && !(p[i] == 0xc2 && i+1 < len(p) && p[i+1] >= 0x80 && p[i+1] <= 0x9f)
	}
	if clean {
		return j.w.Write(p)
	}
	b := make([]byte, 0, len(p)+16)
	for i := 0; i < len(p); i++ {
		switch {
		case p[i] == 0x7f:
			b = append(b, `\u007f`...)
		case p[i] == 0xc2 && i+1 < len(p) && p[i+1] >= 0x80 && p[i+1] <= 0x9f:
			b = fmt.Appendf(b, `\u%04x`, p[i+1])
			i++
		default:
			b = append(b, p[i])
		}
	}
	if _, err := j.w.Write(b); err != nil {
		return 0, err
	}
	return len(p), nil
}
