package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
)

// runVersion is `cgtviz version`: the version, and which device backends
// this binary has (with the driver and GPUs on a cuda build).
func runVersion(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("version")
	pos, code, done := parseArgs(fs, args, stdout, stderr)
	if done {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "cgtviz version: takes no arguments, got %q\n", pos)
		return 2
	}
	fmt.Fprintf(stdout, "cgtviz %s (%s, %s/%s)\nbackends:\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	for _, b := range backends() {
		fmt.Fprintf(stdout, "  %s\n", b)
	}
	return 0
}
