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
		name, n, err := checkOne(ctx, stdout, stderr, f)
		if interrupted(ctx, stderr, "check") {
			return exitInterrupted
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

// checkOne checks one trace (a file, "-" or "demo") in one pass and
// returns its name and how many records it has, or its problems.
func checkOne(ctx context.Context, stdout, stderr io.Writer, path string) (string, int, error) {
	in, err := openInputCtx(ctx, path)
	if err != nil {
		return path, 0, err
	}
	defer in.Close()
	stop := startProgress(stdout, stderr, "check "+in.Name(), in)
	defer stop()
	cr, err := traces.NewCheckedReader(in, in.Name())
	if err != nil {
		return in.Name(), 0, err
	}
	for {
		_, err := cr.Next()
		if err == io.EOF {
			return in.Name(), cr.Records(), nil
		}
		if err != nil {
			return in.Name(), cr.Records(), err
		}
	}
}
