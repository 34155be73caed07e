package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/cgtviz/cgtviz/engine"
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
	pos, code, done := parseArgs(fs, args, stdout, stderr)
	if done {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "cgtviz run: want one TRACE, got %d arguments\n", len(pos))
		commandUsage(fs, stderr)
		return 2
	}
	tr, err := readTrace(pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		return 2
	}
	devs, closeDevs, err := openDevices(*devName, tr.Header.Devices)
	if err != nil {
		fmt.Fprintf(stderr, "cgtviz run: %v\n", err)
		return 2
	}
	defer closeDevs()
	name := tr.Header.Name
	if name == "" {
		name = tr.File
	}
	rep := engine.NewReport(name, devs[0].Name())
	logw := stdout
	if *asJSON {
		logw = stderr
	}
	failedErr := false
	e, err := engine.RunTrace(ctx, tr, engine.Options{Devices: devs, Check: *check}, func(s *engine.Step) bool {
		rep.Add(s)
		if *logLines {
			for _, ev := range s.Events {
				if l := engine.LogLine(tr.File, ev); l != "" {
					fmt.Fprintln(logw, l)
				}
			}
		}
		if s.Err != "" && *stopOnErr {
			failedErr = true
			return false
		}
		return true
	})
	if err != nil {
		fmt.Fprintf(stderr, "cgtviz run: %v\n", err)
		return 2
	}
	rep.Finish(e)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintf(stderr, "cgtviz run: %v\n", err)
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
		if err := rep.WriteText(stdout, tree); err != nil {
			return 2
		}
	}
	if len(rep.Expectations.Failed) > 0 || failedErr {
		return 1
	}
	return 0
}

// readTrace checks and reads a trace file, or the embedded demo for "demo".
func readTrace(path string) (*traces.Trace, error) {
	if path == "demo" {
		return demoTrace()
	}
	return traces.ReadFile(path)
}
