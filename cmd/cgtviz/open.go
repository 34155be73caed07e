package main

import (
	"context"
	"fmt"
	"io"

	"github.com/cgtviz/cgtviz/sessions"
)

// openUsage is the open command's arguments, for its usage line (and the
// command table).
const openUsage = "[-check] [-device sim|cuda|auto] [-mouse=false] SESSION.json"

// runOpen resumes a saved session (trace, position, breakpoints and
// bookmarks) in the terminal debugger; `s` saves back to the same file.
func runOpen(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("open")
	check := fs.Bool("check", false, "run the engine's invariant checker after every record")
	dev := fs.String("device", "auto", tuiDeviceHelp)
	mouse := fs.Bool("mouse", true, mouseHelp)
	devMem := addDeviceMemoryFlag(fs)
	pos, code, done := parseArgs(fs, args, stdout, stderr)
	if done {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "usage: cgtviz open %s\n", openUsage)
		return 2
	}
	if !tuiDeviceOK(*dev) {
		fmt.Fprintf(stderr, "cgtviz: unknown device %q (want %s)\n", *dev, deviceChoices)
		return 2
	}
	s, err := sessions.LoadContext(ctx, pos[0], sessions.Options{Check: *check, NewDevices: tuiDevicesOf(*dev, devMem)})
	if err != nil {
		if ctx.Err() != nil {
			return exitInterrupted
		}
		// A trace's problems as every command prints them, file:line:
		// msg; anything else with what was being done.
		printProblems(stderr, "cgtviz: ", err)
		return 2
	}
	return tuiRun(ctx, s, pos[0], *mouse, stdout, stderr)
}
