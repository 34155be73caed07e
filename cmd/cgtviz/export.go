package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/render"
	"github.com/cgtviz/cgtviz/sessions"
)

// The export command's line in the command table.
const (
	exportUsage   = "TRACE [--line L | --step N] [--format dot|svg] [--node ID] [--graph] [--device D] [--rankdir TB|LR] [--max-nodes N] [--handoff preserve|raise|version] [--device-memory BYTES] -o FILE"
	exportSummary = "write the tree, or one node's CUDA graph, as Graphviz DOT or SVG"
)

// exportFlags are the parsed flags of `cgtviz export`.
type exportFlags struct {
	line, step int
	format     string
	node       int
	graph      bool
	device     int
	rankdir    string
	maxNodes   int
	out        string
	runOn      string          // the backend the trace runs on
	handoff    *engine.Handoff // the engine's handoff rule
	devMem     *int64          // --device-memory (0: simMemory's default)
	set        map[string]bool // flags given on the command line
}

// runExport runs a trace on the simulated device up to a line or step (or
// to its end) and writes the tree, or one node's CUDA graph, as DOT or SVG.
// It exits 0 on success, 2 on a bad trace or bad flags, 1 when running or
// rendering fails.
func runExport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("export")
	f := exportFlags{node: -1}
	fs.IntVar(&f.line, "line", 0, "export the state after the record on trace line `L`")
	fs.IntVar(&f.step, "step", 0, "export the state after record `N` (counted from 1)")
	fs.StringVar(&f.format, "format", "", "output `format`: dot or svg (default: from -o's extension, .svg, .dot or .gv; else dot)")
	fs.Var(nodeFlag{&f.node}, "node", "export only the subtree of graph `ID` (with --graph: that node's CUDA graph)")
	fs.BoolVar(&f.graph, "graph", false, "export the CUDA graph of the node given by --node")
	fs.IntVar(&f.device, "device", 0, "the device `D` of --node")
	fs.StringVar(&f.rankdir, "rankdir", "TB", "rank `direction` of the tree: TB or LR")
	fs.IntVar(&f.maxNodes, "max-nodes", render.DefaultMaxNodes, "refuse trees with more than `N` nodes")
	fs.StringVar(&f.out, "o", "", "write to `FILE` (- for stdout)")
	fs.StringVar(&f.runOn, "run-on", "sim", "run the trace on `backend` "+deviceChoices+"; with --graph on a GPU the graph is the driver's cuGraphDebugDotPrint")
	f.handoff = addHandoffFlag(fs)
	f.devMem = addDeviceMemoryFlag(fs)
	pos, code, done := parseArgs(fs, args, stdout, stderr)
	if done {
		return code
	}
	pos = orStdin(pos)
	f.set = map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })
	if msg := f.validate(pos); msg != "" {
		fmt.Fprintf(stderr, "cgtviz export: %s\n", msg)
		commandUsage(fs, stderr)
		return 2
	}

	pr, err := runTracePrefix(ctx, stdout, stderr, "export", pos[0], f.target, f.runOn, *f.handoff, *f.devMem)
	if pr != nil {
		defer pr.closeDevs()
	}
	if err != nil {
		return prefixExit(ctx, stderr, "export", err)
	}
	e, last := pr.e, pr.last
	st := e.State()
	if msg := f.checkTarget(st); msg != "" {
		fmt.Fprintf(stderr, "cgtviz export: %s\n", msg)
		return 2
	}

	var out []byte
	if f.graph {
		gpuDOT := ""
		if !strings.HasPrefix(e.DeviceName(f.device), "sim") {
			if gpuDOT, err = e.GraphDOT(f.device, f.node); err != nil {
				fmt.Fprintf(stderr, "cgtviz export: %v\n", err)
				return 1
			}
		}
		out, err = render.NodeGraphDOT(st, f.device, f.node, gpuDOT)
	} else {
		opts := render.TreeOptions{
			RankDir:  f.rankdir,
			MaxNodes: f.maxNodes,
			Subtree:  f.node >= 0,
			Device:   f.device,
			Root:     f.node,
			Title:    title(pr.sum),
		}
		opts.SetStep(last)
		out, err = render.TreeDOT(st, opts)
	}
	if err == nil && f.format == "svg" {
		out, err = render.SVG(ctx, out)
	}
	if err != nil {
		fmt.Fprintf(stderr, "cgtviz export: %v\n", err)
		return 1
	}
	if f.out == "-" {
		if _, err = stdout.Write(out); err != nil {
			fmt.Fprintf(stderr, "cgtviz export: write stdout: %v\n", err)
			return 1
		}
		return 0
	}
	if err := sessions.WriteFileAtomic(f.out, out, 0o644); err != nil {
		fmt.Fprintf(stderr, "cgtviz export: %v\n", err)
		return 1
	}
	return 0
}

// nodeFlag is --node: a graph id, -1 until given. It prints no default in
// the help, where "-1" would read as a valid choice: its zero value (no
// int) prints "", as does -1, so flag sees the default as the zero one
// (with a named int type the zero value printed "0", and the help read
// "(default )").
type nodeFlag struct{ n *int }

func (f nodeFlag) String() string {
	if f.n == nil || *f.n < 0 {
		return ""
	}
	return strconv.Itoa(*f.n)
}

func (f nodeFlag) Set(s string) error {
	v, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("not a graph id: %q", s)
	}
	*f.n = v
	return nil
}

// validate checks the flags that need no trace, and fills in the format.
// It returns "" or what is wrong.
func (f *exportFlags) validate(pos []string) string {
	switch {
	case len(pos) == 0:
		return "no trace given"
	case len(pos) > 1:
		return fmt.Sprintf("one trace at a time (got %d: %s)", len(pos), strings.Join(pos, " "))
	case f.out == "":
		return "no output file: give -o FILE (or -o - for stdout)"
	case f.set["line"] && f.set["step"]:
		return "--line and --step both given: choose one"
	case f.set["line"] && f.line < 1:
		return fmt.Sprintf("--line %d: lines count from 1", f.line)
	case f.set["step"] && f.step < 1:
		return fmt.Sprintf("--step %d: steps count from 1", f.step)
	case f.maxNodes < 1:
		return fmt.Sprintf("--max-nodes %d: want at least 1", f.maxNodes)
	case f.device < 0:
		return fmt.Sprintf("--device %d: devices count from 0", f.device)
	case f.set["node"] && f.node < 0:
		return fmt.Sprintf("--node %d: graph ids count from 0", f.node)
	case f.graph && !f.set["node"]:
		return "--graph needs --node ID: the node whose CUDA graph to export"
	case !tuiDeviceOK(f.runOn):
		return fmt.Sprintf("--run-on %s: want %s", f.runOn, deviceChoices)
	}
	f.rankdir = strings.ToUpper(f.rankdir)
	if f.rankdir != "TB" && f.rankdir != "LR" {
		return fmt.Sprintf("--rankdir %s: want TB or LR", f.rankdir)
	}
	// The format is the output file's: .svg is SVG, .dot and .gv are DOT.
	// Any other extension is refused, so that x.png never holds DOT text.
	byExt := ""
	if f.out != "-" {
		switch ext := strings.ToLower(filepath.Ext(f.out)); ext {
		case ".svg":
			byExt = "svg"
		case ".dot", ".gv":
			byExt = "dot"
		case "":
		default:
			return fmt.Sprintf("-o %s: cgtviz writes SVG (.svg) or Graphviz DOT (.dot, .gv), not %s (for PNG: dot -Tpng)", f.out, ext)
		}
	}
	switch format := strings.ToLower(f.format); format {
	case "":
		f.format = cmp.Or(byExt, "dot")
	case "dot", "svg":
		if byExt != "" && byExt != format {
			return fmt.Sprintf("--format %s but -o %s is %s: choose one", format, f.out, strings.ToUpper(byExt))
		}
		f.format = format
	default:
		return fmt.Sprintf("--format %s: want dot or svg", f.format)
	}
	return ""
}

// target returns which records to run: all of them, those up to and
// including line --line, or the first --step; with a message when the
// trace (sum.records < 0: not known yet) has not that many.
func (f *exportFlags) target(sum traceSummary) (prefixTarget, string) {
	switch {
	case f.set["step"]:
		if sum.records >= 0 && f.step > sum.records {
			return prefixTarget{}, fmt.Sprintf("--step %d: %s has %d records", f.step, sum.file, sum.records)
		}
		return prefixTarget{n: f.step}, ""
	case f.set["line"]:
		return lineTarget(sum, f.line)
	}
	return prefixTarget{n: -1}, ""
}

// checkTarget checks --device and --node against the state, so that a
// wrong id is a usage error (exit 2), not a rendering failure.
func (f *exportFlags) checkTarget(st *engine.State) string {
	if f.device >= len(st.Devices) {
		return fmt.Sprintf("--device %d: the trace has %d device(s)", f.device, len(st.Devices))
	}
	if f.node < 0 {
		return ""
	}
	d := &st.Devices[f.device]
	for i := range d.Nodes {
		if d.Nodes[i].ID == f.node {
			return ""
		}
	}
	return fmt.Sprintf("--node %d: device %d has no node #%d at this point (it has %d)", f.node, f.device, f.node, len(d.Nodes))
}

// title names the trace in the picture: the header's name, else the file.
func title(sum traceSummary) string {
	if sum.hdr.Name != "" {
		return sum.hdr.Name
	}
	return filepath.Base(sum.file)
}
