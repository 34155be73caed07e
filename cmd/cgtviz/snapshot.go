package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/engine/alloc"
)

// runSnapshot is `cgtviz snapshot`: the caching allocator's state and event
// log after running a trace (to a line, or to the end), as a PyTorch memory
// snapshot pickle that pytorch.org/memory_viz and
// `python -m torch.cuda._memory_viz` open.
func runSnapshot(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("snapshot")
	line := fs.Int("line", 0, "stop after the record on this line (default: the end of the trace)")
	out := fs.String("o", "", "the pickle file to write (- for stdout)")
	devName := fs.String("device", defaultDevice, "device: "+deviceChoices)
	handoff := addHandoffFlag(fs)
	pos, code, done := parseArgs(fs, args, stdout, stderr)
	if done {
		return code
	}
	if len(pos) != 1 || *out == "" {
		fmt.Fprintf(stderr, "cgtviz snapshot: want TRACE and -o FILE.pickle\n")
		commandUsage(fs, stderr)
		return 2
	}
	tr, err := readTrace(pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		return 2
	}
	if *line < 0 {
		fmt.Fprintf(stderr, "cgtviz snapshot: --line %d: lines count from 1\n", *line)
		return 2
	}
	devs, closeDevs, err := openDevices(*devName, tr.Header.Devices)
	if err != nil {
		fmt.Fprintf(stderr, "cgtviz snapshot: %v\n", err)
		return 2
	}
	defer closeDevs()
	e, err := engine.RunTrace(ctx, tr, engine.Options{Devices: devs, Handoff: *handoff}, func(s *engine.Step) bool {
		return *line == 0 || s.Line < *line
	})
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
		err = os.WriteFile(*out, buf.Bytes(), 0o644)
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
