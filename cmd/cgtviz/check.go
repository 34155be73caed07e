package main

import (
	"context"
	"fmt"
	"io"

	"github.com/cgtviz/cgtviz/traces"
)

// runCheck checks each trace: problems go to stderr as file:line: message,
// "TRACE: ok (N records)" to stdout for each clean one.
func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("check")
	quiet := fs.Bool("q", false, "print only problems")
	files, code, done := parseArgs(fs, args, stdout, stderr)
	if done {
		return code
	}
	if len(files) == 0 {
		fmt.Fprintf(stderr, "cgtviz check: no trace given\n")
		commandUsage(fs, stderr)
		return 2
	}
	status := 0
	for _, f := range files {
		if ctx.Err() != nil {
			return 1
		}
		n, ps := traces.CheckFileCount(f)
		for _, p := range ps {
			fmt.Fprintln(stderr, p.String())
		}
		if len(ps) > 0 {
			status = 2
			continue
		}
		if !*quiet {
			fmt.Fprintf(stdout, "%s: ok (%d records)\n", f, n)
		}
	}
	return status
}
