package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/cgtviz/cgtviz/engine/alloc"
	"github.com/cgtviz/cgtviz/sessions"
)

// runSnapshot is `cgtviz snapshot`: the caching allocator's state and event
// log after running a trace (to a line, or to the end), as a PyTorch memory
// snapshot pickle that pytorch.org/memory_viz and
// `python -m torch.cuda._memory_viz` open.
func runSnapshot(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("snapshot")
	line := fs.Int("line", 0, "stop after the record on trace line `L` (default: the end of the trace)")
	out := fs.String("o", "", "the pickle file to write (- for stdout)")
	devName := fs.String("device", defaultDevice, "device: "+deviceChoices)
	handoff := addHandoffFlag(fs)
	devMem := addDeviceMemoryFlag(fs)
	pos, code, done := parseArgs(fs, args, stdout, stderr)
	if done {
		return code
	}
	pos = orStdin(pos)
	if len(pos) != 1 || *out == "" {
		fmt.Fprintf(stderr, "cgtviz snapshot: want TRACE and -o FILE.pickle\n")
		commandUsage(fs, stderr)
		return 2
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if set["line"] && *line < 1 {
		fmt.Fprintf(stderr, "cgtviz snapshot: --line %d: lines count from 1\n", *line)
		return 2
	}
	if !tuiDeviceOK(*devName) {
		fmt.Fprintf(stderr, "cgtviz snapshot: --device %s: want %s\n", *devName, deviceChoices)
		return 2
	}
	tr, err := readTraceProgress(stdout, stderr, "snapshot", pos[0])
	if err != nil {
		printProblems(stderr, "cgtviz snapshot: ", err)
		return 2
	}
	n := len(tr.Records)
	if set["line"] {
		var msg string
		if n, msg = recordsToLine(tr, *line); msg != "" {
			fmt.Fprintf(stderr, "cgtviz snapshot: %s\n", msg)
			return 2
		}
	}
	e, _, closeDevs, err := runPrefix(ctx, tr, n, *devName, *handoff, *devMem)
	defer closeDevs()
	if err != nil {
		fmt.Fprintf(stderr, "cgtviz snapshot: %v\n", err)
		return 1
	}
	var allocs []*alloc.Allocator
	for i := 0; i < e.NumDevices(); i++ {
		allocs = append(allocs, e.Allocator(i))
	}
	var buf bytes.Buffer
	if err := alloc.WriteSnapshot(&buf, allocs); err != nil {
		fmt.Fprintf(stderr, "cgtviz snapshot: %v\n", err)
		return 1
	}
	if *out == "-" {
		_, err = stdout.Write(buf.Bytes())
	} else {
		err = sessions.WriteFileAtomic(*out, buf.Bytes(), 0o644)
	}
	if err != nil {
		fmt.Fprintf(stderr, "cgtviz snapshot: %v\n", err)
		return 1
	}
	if *out != "-" {
		fmt.Fprintf(stdout, "%s: allocator snapshot of %d device(s) after %d records (open it at pytorch.org/memory_viz)\n", *out, len(allocs), e.Steps())
	}
	return 0
}
