package ui

import (
	"context"
	"errors"
	"os/exec"
	"testing"
	"time"
)

// TestE2E runs tools/e2e/tui.sh, which builds cgtviz and drives it in tmux
// as a person would, reading the pane after each key. It needs tmux (CI
// installs it); without it, it skips. When tmux is there but cannot run
// its server (the script's status 3), it skips with tmux's own account of
// why: cmd/cgtviz's TestTUIEndToEnd walks the same path without tmux, on a
// pseudo-terminal of its own, so the walk is still tested.
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
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == tmuxCannotRun {
		t.Skipf("tmux cannot run its server here:\n%s", out)
	}
	if err != nil {
		t.Fatalf("tools/e2e/tui.sh: %v\n%s", err, out)
	}
}

// tmuxCannotRun is tui.sh's exit status when tmux itself fails (its server
// dies or cannot open a session), as opposed to a screen that is wrong.
const tmuxCannotRun = 3
