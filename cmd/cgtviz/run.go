package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/engine/report"
	"github.com/cgtviz/cgtviz/render"
	"github.com/cgtviz/cgtviz/traces"
)

// runRun is `cgtviz run`: it runs a trace and prints what the tree did and
// why. Exit status: 0 when every expectation held, 1 when one failed (or,
// with --stop-on-error, a record raised), 2 when the trace could not be read.
func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("run")
	asJSON := fs.Bool("json", false, "print the report as JSON (the format of spec trace-v1, \"Reports\")")
	logLines := fs.Bool("log", false, "print every decision as TORCH_LOGS=cudagraphs lines (to stderr with --json)")
	devName := fs.String("device", defaultDevice, "device: "+deviceChoices)
	stopOnErr := fs.Bool("stop-on-error", false, "stop at the first record that raises an error")
	check := fs.Bool("check", false, "check the engine's invariants after every record")
	handoff := addHandoffFlag(fs)
	pos, code, done := parseArgs(fs, args, stdout, stderr)
	if done {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "cgtviz run: want one TRACE, got %d arguments\n", len(pos))
		commandUsage(fs, stderr)
		return 2
	}
	// Check the whole file first (streaming), then stream its records
	// through the engine: a trace of any length is never held in memory.
	r, closeTrace, err := openTraceStream(pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		return 2
	}
	defer closeTrace()
	hdr := r.Header()
	file := pos[0]
	devs, closeDevs, err := openDevices(*devName, hdr.Devices)
	if err != nil {
		fmt.Fprintf(stderr, "cgtviz run: %v\n", err)
		return 2
	}
	defer closeDevs()
	name := hdr.Name
	if name == "" {
		name = file
	}
	rep := report.New(name, devs[0].Name())
	logw := stdout
	if *asJSON {
		logw = stderr
	}
	// Steps are written as they run, so that memory stays flat however long
	// the trace is.
	var writeJSON func(*report.Step) error
	if *asJSON {
		writeJSON = rep.WriteJSONStream(stdout)
	} else {
		fmt.Fprintf(stdout, "trace: %s (device %s)\n", rep.Trace, rep.Device)
		if *handoff == engine.HandoffRaise {
			fmt.Fprintln(stdout, "handoff: raise (PyTorch 2.11: an output handed to the next call across a generation is freed)")
		}
	}
	var werr error
	failedErr := false
	var hint handoffHint
	e, err := engine.RunReader(ctx, r, engine.Options{Devices: devs, Check: *check, File: file, Handoff: *handoff}, func(s *engine.Step) bool {
		hint.see(s)
		rs := rep.Count(s)
		if writeJSON != nil {
			if err := writeJSON(&rs); err != nil && werr == nil {
				werr = err
			}
		} else {
			rs.WriteText(stdout)
		}
		if *logLines {
			for _, ev := range s.Events {
				if l := engine.LogLine(file, ev); l != "" {
					fmt.Fprintln(logw, l)
				}
			}
		}
		if s.Err != nil && *stopOnErr {
			failedErr = true
			return false
		}
		return true
	})
	if err != nil {
		fmt.Fprintf(stderr, "cgtviz run: %v\n", err)
		return 2
	}
	rep.Finish(e.State())
	if *asJSON {
		if err := writeJSON(nil); err != nil || werr != nil {
			fmt.Fprintf(stderr, "cgtviz run: write the report: %v\n", errors.Join(err, werr))
			return 2
		}
	} else {
		st := e.State()
		tree := ""
		for d := range st.Devices {
			if len(st.Devices) > 1 {
				tree += fmt.Sprintf("device %d (%s):\n", d, st.Devices[d].Name)
			}
			tree += render.TreeText(st, d)
		}
		if err := rep.WriteSummary(stdout, tree); err != nil {
			return 2
		}
	}
	if hint.applies(*handoff) {
		fmt.Fprintln(logw, handoffHintText)
	}
	if len(rep.Expectations.Failed) > 0 || failedErr {
		return 1
	}
	return 0
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

const handoffHintText = "hint: the trace expects PyTorch 2.11's overwritten error where cgtviz kept an output handed to the next compiled call (its default, PyTorch's later fix); run it with --handoff raise to replay 2.11 exactly"

// openTraceStream checks a trace file (or the embedded demo for "demo")
// and opens it for streaming; every problem is in the returned error.
func openTraceStream(path string) (*traces.Reader, func(), error) {
	if path == "demo" {
		tr, err := demoTrace()
		if err != nil {
			return nil, nil, err
		}
		var buf bytes.Buffer
		if err := tr.Write(&buf); err != nil {
			return nil, nil, err
		}
		r, err := traces.NewReader(&buf, tr.File)
		return r, func() {}, err
	}
	if ps := traces.CheckFile(path); len(ps) > 0 {
		return nil, nil, traces.Problems(ps)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	r, err := traces.NewReader(f, path)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return r, func() { f.Close() }, nil
}

// readTrace checks and reads a trace file, or the embedded demo for "demo".
func readTrace(path string) (*traces.Trace, error) {
	if path == "demo" {
		return demoTrace()
	}
	return traces.ReadFile(path)
}
