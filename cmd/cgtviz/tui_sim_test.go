//go:build !cuda

package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// What TestTUIDevices expects of this build: auto is sim, cuda fails.
const (
	autoPrefix = "sim"
	cudaPrefix = ""
	cudaErr    = "without GPU support"
)

// TestTUIDeviceCUDAOnSimBuild: the TUI refuses -device cuda on a build
// without it as run refuses --device cuda: exit 2, the same reason (issue
// 34 item 12: it exited 1).
func TestTUIDeviceCUDAOnSimBuild(t *testing.T) {
	for _, args := range [][]string{
		{"-device", "cuda", "../../examples/s07-chain-handoff.cgt.jsonl"},
		{"run", "--device", "cuda", "../../examples/s07-chain-handoff.cgt.jsonl"},
	} {
		var out, errb bytes.Buffer
		code := run(context.Background(), args, &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), cudaErr) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", args, code, errb.String(), cudaErr)
		}
	}
}
