//go:build linux

package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stopWithin is how soon a command must end after SIGINT or SIGTERM in
// these tests: the goal is 100 ms, and a loaded test machine (or the race
// detector) gets more, but less than main's stopGrace, after which the
// process exits without the command: a test that passed only thanks to it
// would hide a command that does not stop.
const stopWithin = time.Second

// tuiStopWithin is stopWithin for the TUI, which Bubble Tea stops.
const tuiStopWithin = 1500 * time.Millisecond

// mkfifo makes a FIFO in dir, or skips the test where there are none.
func mkfifo(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "trace.fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	return p
}

// feedSteps opens the FIFO for writing (once a reader opens it) and writes
// a header and step records until the reader goes: a trace that streams
// for as long as the command reads.
func feedSteps(fifo string) {
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		return
	}
	defer w.Close()
	if _, err := w.Write([]byte(`{"cgtviz": 1}` + "\n")); err != nil {
		return
	}
	chunk := bytes.Repeat([]byte(`{"op": "step"}`+"\n"), 4096)
	for {
		if _, err := w.Write(chunk); err != nil {
			return // EPIPE: the reader has gone
		}
	}
}

// TestSignalsStopCommands sends SIGINT and SIGTERM to each command while
// it waits for a FIFO's writer and while it streams an endless trace from
// one, and requires it to stop at once, say so, and exit with 128 + the
// signal (issue 31 item 5). check /dev/zero ends by itself, refused at
// the line limit.
func TestSignalsStopCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts 24 processes")
	}
	commands := [][]string{
		{"check", "F"},
		{"run", "F"},
		{"export", "F", "-o", "out.dot"},
		{"fmt", "F"},
		{"snapshot", "F", "-o", "out.pickle"},
		{"report", "F", "-o", "out.html"},
	}
	for _, args := range commands {
		for _, stream := range []bool{false, true} {
			for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
				name := fmt.Sprintf("%s/stream=%v/%v", args[0], stream, sig)
				t.Run(name, func(t *testing.T) {
					dir := t.TempDir()
					fifo := mkfifo(t, dir)
					a := append([]string(nil), args...)
					a[1] = fifo
					cmd := exec.Command(os.Args[0], a...)
					cmd.Dir = dir
					cmd.Env = append(cleanEnv(), asMainEnv+"=1")
					var stdout, stderr bytes.Buffer
					cmd.Stdout, cmd.Stderr = &stdout, &stderr
					if err := cmd.Start(); err != nil {
						t.Fatal(err)
					}
					if stream {
						go feedSteps(fifo)
					}
					time.Sleep(300 * time.Millisecond)
					start := time.Now()
					cmd.Process.Signal(sig)
					exit := make(chan error, 1)
					go func() { exit <- cmd.Wait() }()
					var err error
					select {
					case err = <-exit:
					case <-time.After(10 * time.Second):
						cmd.Process.Kill()
						<-exit
						t.Fatalf("did not stop 10 s after %v", sig)
					}
					took := time.Since(start)
					if !stream {
						// Let the FIFO's open in the ended process go.
						if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
							w.Close()
						}
					}
					var ee *exec.ExitError
					if !errors.As(err, &ee) || ee.ExitCode() != 128+int(sig) {
						t.Errorf("exit %v, want status %d", err, 128+int(sig))
					}
					if took > stopWithin {
						t.Errorf("stopped %v after %v, want within %v", took, sig, stopWithin)
					}
					if want := "cgtviz " + args[0] + ": interrupted"; !strings.Contains(stderr.String(), want) {
						t.Errorf("stderr %q, want %q", stderr.String(), want)
					}
				})
			}
		}
	}
	t.Run("check /dev/zero", func(t *testing.T) {
		if _, err := os.Stat("/dev/zero"); err != nil {
			t.Skip(err)
		}
		cmd := exec.Command(os.Args[0], "check", "/dev/zero")
		cmd.Env = append(cleanEnv(), asMainEnv+"=1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		timer := time.AfterFunc(20*time.Second, func() { cmd.Process.Kill() })
		defer timer.Stop()
		err := cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), "/dev/zero:1: line is longer than 4 MiB (MaxLineBytes) and has no end") {
			t.Errorf("check /dev/zero: %v, stderr %q; want exit 2 and the line refused", err, stderr.String())
		}
	})
}

// TestTUIFIFO opens a FIFO in the TUI (issue 31 item 6): with no writer it
// says what it waits for and q leaves; with one writer, which writes a
// trace and closes, the TUI shows that trace (a second open of the path
// would wait for a second writer for ever).
func TestTUIFIFO(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no end-to-end run")
	}
	t.Run("quit while waiting", func(t *testing.T) {
		dir := t.TempDir()
		fifo := mkfifo(t, dir)
		term := startTUI(t, dir, nil, fifo)
		term.expect("waiting for")
		term.keys("q")
		term.exited()
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
	})
	t.Run("one writer", func(t *testing.T) {
		dir := t.TempDir()
		fifo := mkfifo(t, dir)
		go func() {
			// Late, so that the TUI waits first: a second open of the
			// path, after this writer has gone, would wait for ever.
			time.Sleep(time.Second)
			w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
			if err != nil {
				return
			}
			w.Write([]byte(`{"cgtviz": 1, "name": "fifo"}` + "\n" + strings.Repeat(`{"op": "note", "text": "from the pipe"}`+"\n", 3) + `{"op": "step"}` + "\n"))
			w.Close()
		}()
		term := startTUI(t, dir, nil, fifo)
		term.expect("waiting for")
		term.expect("from the pipe")
		term.expect("start/5")
		term.keys("q")
		term.exited()
	})
}

// TestTUIRestoresTerminal ends the TUI with SIGTERM and SIGINT and checks
// that it left the terminal as it found it: each mode it turned on (the
// alternate screen, mouse tracking) turned off again after (issue 31
// item 5).
func TestTUIRestoresTerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no end-to-end run")
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			term := startTUI(t, t.TempDir(), nil)
			term.expect("start/41")
			start := time.Now()
			term.cmd.Process.Signal(sig)
			select {
			case <-term.exit:
			case <-time.After(10 * time.Second):
				t.Fatalf("the TUI did not stop after %v", sig)
			}
			// About 2 ms here; under the race detector Bubble Tea's
			// shutdown can wait twice for its input loop, 500 ms each
			// (tty.go, waitForReadLoop), which is its, not cgtviz's.
			if took := time.Since(start); took > tuiStopWithin {
				t.Errorf("the TUI stopped %v after %v, want within %v", took, sig, tuiStopWithin)
			}
			time.Sleep(100 * time.Millisecond) // the last bytes
			term.mu.Lock()
			raw := term.raw.String()
			term.mu.Unlock()
			for _, mode := range []string{"1049", "1000", "1002", "1003", "1006"} {
				on := strings.LastIndex(raw, "\x1b[?"+mode+"h")
				if on < 0 {
					continue
				}
				if off := strings.LastIndex(raw, "\x1b[?"+mode+"l"); off < on {
					t.Errorf("mode %s left on after %v", mode, sig)
				}
			}
		})
	}
}
