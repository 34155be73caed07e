package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/engine/alloc"
	"github.com/cgtviz/cgtviz/engine/report"
	"github.com/cgtviz/cgtviz/render/html"
	"github.com/cgtviz/cgtviz/sessions"
	"github.com/cgtviz/cgtviz/traces"
)

// The report command's line in the command table.
const (
	reportUsage   = "[--handoff preserve|raise|version] [--device-memory BYTES] [--max-rows N] [--max-nodes N] -o FILE.html TRACE"
	reportSummary = "write a self-contained HTML page of what the tree did and why, to share"
)

// runReport is `cgtviz report`: it runs a trace on the simulated device,
// streamed as `run` does, and writes one HTML page (report.Analysis drawn
// by render/html) whole or not at all. Exit status: 0 with the page
// written, 1 when it could not be written, 2 for a bad trace or flags.
// Failed expectations do not fail the command: the page shows them.
func runReport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("report")
	out := fs.String("o", "", "write the page to `FILE` (- for stdout)")
	maxRows := fs.Int("max-rows", report.DefaultRows, "keep at most `N` rows in the decision log")
	maxNodes := fs.Int("max-nodes", html.DefaultMaxNodes, "draw a device's tree when it has at most `N` nodes")
	handoff := addHandoffFlag(fs)
	devMem := addDeviceMemoryFlag(fs)
	pos, code, done := parseArgs(fs, args, stdout, stderr)
	if done {
		return code
	}
	pos = orStdin(pos)
	msg := ""
	switch {
	case len(pos) != 1:
		msg = fmt.Sprintf("want one TRACE, got %d arguments", len(pos))
	case *out == "":
		msg = "no output file: give -o FILE.html (or -o - for stdout)"
	case *maxRows < 1:
		msg = fmt.Sprintf("--max-rows %d: want at least 1", *maxRows)
	case *maxNodes < 1:
		msg = fmt.Sprintf("--max-nodes %d: want at least 1", *maxNodes)
	case *out != "-" && !strings.EqualFold(filepath.Ext(*out), ".html") && !strings.EqualFold(filepath.Ext(*out), ".htm"):
		msg = fmt.Sprintf("-o %s: the page is HTML; name it .html", *out)
	}
	if msg != "" {
		fmt.Fprintf(stderr, "cgtviz report: %s\n", msg)
		commandUsage(fs, stderr)
		return 2
	}

	in, cr, code := openChecked(ctx, stderr, "report", func() (*traces.Input, error) { return openInputCtx(ctx, pos[0]) })
	if cr == nil {
		return code
	}
	defer in.Close()
	file := in.Name()
	hdr := cr.Header()
	// The simulated device: a page is read after the fact, and a real one
	// would only run slower (run --device cuda replays on a GPU).
	devs, closeDevs, err := openDevices("sim", hdr.Devices, simMemory(*devMem, hdr))
	if err != nil {
		fmt.Fprintf(stderr, "cgtviz report: %v\n", err)
		return 2
	}
	defer closeDevs()
	name := traceTitle(hdr, file)
	stopProgress := startProgress(stdout, stderr, "report", in)
	defer stopProgress()
	defer setRunGC()()
	// As `run`: streamed, no allocator event log (the page never reads it).
	e, err := engine.New(hdr, engine.Options{Devices: devs, File: file, Handoff: *handoff, AllocOptions: alloc.Options{TraceMax: -1}})
	if err != nil {
		fmt.Fprintf(stderr, "cgtviz report: %v\n", err)
		return 2
	}
	rep := report.New(name, devs[0].Name())
	col := rep.Collect(hdr, e, report.Limits{Rows: *maxRows})
	defs := newDefSources(cr)
	col.Sources(defs.of)
	_, err = e.Stream(ctx, defs, func(s *engine.Step) bool {
		col.Step(s)
		return true
	})
	stopProgress()
	if interrupted(ctx, stderr, "report") {
		return exitInterrupted
	}
	if err != nil {
		printProblems(stderr, "cgtviz report: ", err)
		return 2
	}
	st := e.State()
	a := col.Finish(st)
	page, warnings, err := html.Render(ctx, &html.Page{Report: rep, Analysis: a, State: st, File: file, Version: version},
		html.Options{MaxNodes: *maxNodes})
	if err != nil {
		fmt.Fprintf(stderr, "cgtviz report: %v\n", err)
		return 1
	}
	errw := bufio.NewWriter(stderr)
	for _, w := range warnings {
		fmt.Fprintf(errw, "cgtviz report: warning: %v\n", w)
	}
	errw.Flush()
	if *out == "-" {
		if _, err := stdout.Write(page); err != nil {
			fmt.Fprintf(stderr, "cgtviz report: write stdout: %v\n", err)
			return 1
		}
		return 0
	}
	if err := sessions.WriteFileAtomic(*out, page, 0o644); err != nil {
		fmt.Fprintf(stderr, "cgtviz report: %v\n", err)
		return 1
	}
	return 0
}
