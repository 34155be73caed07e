package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestProgressOnTerminal: with stderr a terminal (a pseudo-terminal here)
// and stdout a file, check draws its bar while it reads and clears it at
// the end.
func TestProgressOnTerminal(t *testing.T) {
	master, tty, err := openPTY(120, 20)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer master.Close()
	defer tty.Close()
	// A slow input: a pipe fed a line at a time, so the bar has time to show.
	data, err := os.ReadFile("../../examples/seed-a-checkpoint.cgt.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for _, l := range strings.SplitAfter(string(data), "\n") {
			w.WriteString(l)
			time.Sleep(20 * time.Millisecond)
		}
		w.Close()
	}()
	old := os.Stdin
	os.Stdin = r
	defer func() { os.Stdin = old }()
	screen := make(chan string)
	go func() {
		var b bytes.Buffer
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			b.Write(buf[:n])
			if err != nil || strings.Contains(b.String(), "\x1b[K") && strings.Count(b.String(), "\r\x1b[K") >= 2 {
				screen <- b.String()
				return
			}
		}
	}()
	out, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if code := run(context.Background(), []string{"check", "-"}, out, tty); code != 0 {
		t.Fatalf("exit %d", code)
	}
	select {
	case s := <-screen:
		if !strings.Contains(s, "check <stdin>") || !strings.Contains(s, "MB read") {
			t.Fatalf("no progress bar on the terminal: %q", s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("nothing drawn on the terminal")
	}
}
