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
	target := func(sum traceSummary) (prefixTarget, string) {
		if set["line"] {
			return lineTarget(sum, *line)
		}
		return prefixTarget{n: -1}, ""
	}
	pr, err := runTracePrefix(ctx, stdout, stderr, "snapshot", pos[0], target, *devName, *handoff, *devMem)
	if pr != nil {
		defer pr.closeDevs()
	}
	if err != nil {
		return prefixExit(ctx, stderr, "snapshot", err)
	}
	e := pr.e
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
