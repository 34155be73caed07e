package ui

import (
	"context"
	"os/exec"
	"testing"
	"time"
)

// TestE2E runs tools/e2e/tui.sh, which builds cgtviz and drives it in tmux
// as a person would. It needs tmux (CI installs it); without it, it skips.
func TestE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no end-to-end run")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not on PATH")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "bash", "../tools/e2e/tui.sh").CombinedOutput()
	if err != nil {
		t.Fatalf("tools/e2e/tui.sh: %v\n%s", err, out)
	}
}
