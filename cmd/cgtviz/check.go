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
	files = orStdin(files)
	if len(files) == 0 {
		fmt.Fprintf(stderr, "cgtviz check: no trace given\n")
		commandUsage(fs, stderr)
		return 2
	}
	status := 0
	for _, f := range files {
		name, n, cr, err := checkRecords(ctx, stdout, stderr, f)
		if interrupted(ctx, stderr, "check") {
			return exitInterrupted
		}
		switch {
		case cr == nil: // (not opened, or no header: err says why)
		case cr.Cut() != nil:
			// Not a problem: what a crashed recording leaves (exit 0 when
			// the records before it check).
			fmt.Fprintf(stderr, "cgtviz check: %s\n", cr.Cut())
		case cr.Header().Unended():
			// The same, cut between two lines: only the header says so.
			fmt.Fprintf(stderr, "cgtviz check: %s: %s\n", name, traces.UnendedNote)
		}
		if err != nil {
			printProblems(stderr, "cgtviz check: ", err)
			status = 2
			continue
		}
		if !*quiet {
			fmt.Fprintf(stdout, "%s: ok (%d records)\n", name, n)
		}
	}
	return status
}

// checkRecords checks one trace (a file, "-" or "demo") in one pass and
// returns its name and how many records it has, or its problems, with the
// reader (nil when the trace could not be opened or has no header), which
// says whether the trace ends mid-record and what its header holds.
func checkRecords(ctx context.Context, stdout, stderr io.Writer, path string) (string, int, *traces.CheckedReader, error) {
	in, err := openInputCtx(ctx, path)
	if err != nil {
		return path, 0, nil, err
	}
	defer in.Close()
	stop := startProgress(stdout, stderr, "check "+in.Name(), in)
	defer stop()
	cr, err := traces.NewCheckedReader(in, in.Name())
	if err != nil {
		return in.Name(), 0, nil, err
	}
	for {
		_, err := cr.Next()
		if err == io.EOF {
			return in.Name(), cr.Records(), cr, nil
		}
		if err != nil {
			return in.Name(), cr.Records(), cr, err
		}
	}
}
