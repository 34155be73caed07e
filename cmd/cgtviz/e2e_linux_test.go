//go:build linux

package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cgtviz/cgtviz/render/graphviztest"
	"github.com/charmbracelet/x/vt"
)

// asMainEnv makes the test binary act as cgtviz itself (see TestMain), so
// the end-to-end test runs the real command line, with the race detector
// when the tests have it, and needs no go build.
const asMainEnv = "CGTVIZ_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMainEnv) == "1" {
		main() // exits
	}
	// The tests' standard input is /dev/null however go test was started:
	// a command reads a piped one as its trace (orStdin), and the tests of
	// a missing TRACE must not depend on it. withStdin gives a test a pipe.
	if null, err := os.Open(os.DevNull); err == nil {
		os.Stdin = null
	}
	// export to SVG and the TUI's export run cgtviz-graphviz: this tree's,
	// found or built once for every test and the children they start.
	os.Exit(graphviztest.Main(m))
}

// The size of the end-to-end test's terminal.
const e2eCols, e2eRows = 120, 40

// e2eWait is how long a screen may take to show what a step expects: long,
// because CI machines are small and the binary carries the race detector.
const e2eWait = 30 * time.Second

// TestTUIEndToEnd drives the terminal debugger as a person would, on a real
// pseudo-terminal with a terminal emulator reading the screen: it opens the
// embedded demo, steps with n, opens the help with ?, steps back with N,
// goes to the checkpoint's line with g, asks the command line why the root
// is there, searches what the trace shows, sets, lists and deletes a
// breakpoint, runs to a line, diffs two positions (v, V), opens the memory
// timeline (M), copies (y), saves with s, quits with q, and resumes the
// saved session with `cgtviz open` under NO_COLOR, checking after each key
// what the screen shows. Every number typed is a trace line, as the status
// line shows it. tools/e2e/tui.sh (ui's TestE2E) walks the same path in
// tmux; this one needs nothing but the kernel's pseudo-terminals.
func TestTUIEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no end-to-end run")
	}
	dir := t.TempDir()

	term := startTUI(t, dir, nil)
	term.expect("start/41")
	term.expect("1 Tree")
	term.expect("no graphs yet")
	term.refuse("#0 foo")

	term.keys(strings.Repeat("n", 14))
	term.expect("line 15/41")
	term.expect("#0 foo")     // the first recording made a root
	term.expect("← recorded") // the tree marks what this step did
	term.expect("record #0")  // the trace pane's action column
	term.keys("n")
	term.expect("line 16/41")

	term.keys("?")
	term.expect("reverse-continue") // the full help
	term.expect("memory timeline")
	term.keys("?")
	term.keys("N")
	term.expect("line 15/41")

	// The checkpoint at line 32, told cause first: a and b re-allocated.
	term.keys("g")
	term.keys("32\r")
	term.expect("line 32/41")
	term.expect("re-allocated for live tensors (2)")
	term.expect("#2 fee")
	term.expect("#1 cannot replay")

	// The command line: select the root, ask why it is there (w goes to the
	// call that recorded it), and come back by line number.
	term.keys(":node 0\r")
	term.expect("#0 foo on dev 0")
	term.keys("w")
	term.expect("line 15/41")
	term.expect("line 15 recorded #0 foo: new root")
	term.keys(":32\r")
	term.expect("line 32/41")

	// Search what the trace pane shows: its action column.
	term.keys("4/record #2\r")
	term.expect("/record #2 in Trace: line 32")

	// Breakpoints: a typo is refused, one is set, listed, deleted.
	term.keys(":b fn fe\r")
	term.expect(`no function "fe" in this trace`)
	term.keys(":b line 20\r")
	term.expect("breakpoint set: line 20")
	term.keys(":b\r")
	term.expect("1: line 20")
	term.keys("d")
	term.expect("breakpoint deleted: line 20")
	term.keys("\r")
	term.keys(":until 35\r")
	term.expect("ran to line 35")

	// A diff between two positions: line 32 recorded #2.
	term.keys(":31\r")
	term.expect("line 31/41")
	term.keys("v")
	term.expect("diff: marked line 31")
	term.keys("n")
	term.expect("line 32/41")
	term.keys("V")
	term.expect("diff line 31 → line 32")
	term.expect("nodes added (1)")
	term.keys("\r")

	// The memory timeline of the graph pool, and copying out.
	term.keys("M")
	term.expect("memory of the graph pool")
	term.keys("M")
	term.expect("memory timeline hidden")
	term.keys("6")
	term.expect("● live")
	term.keys("y")
	term.expect("to the clipboard (OSC 52)")

	// The mouse: a click on #1 in the tree selects it for the details.
	term.click("#1 fee")
	term.expect("node #1 fee (function")

	// The checks of the NO_COLOR run below must be able to see color.
	if _, _, ok := term.coloredCell(); !ok {
		t.Errorf("the colored run shows no colored cell:\n%s", term.screen())
	}
	term.keys("s")
	term.expect("saved session to cgtviz-session.json")
	if _, err := os.Stat(filepath.Join(dir, "cgtviz-session.json")); err != nil {
		t.Fatalf("s said it saved, but: %v", err)
	}
	term.keys("q")
	term.exited()
	if term.firstColor() == "" {
		t.Errorf("the colored run wrote no color sequence")
	}

	// Resume without color: the same line and screen, and no color on it;
	// states read by glyph and word.
	term = startTUI(t, dir, []string{"NO_COLOR=1"}, "open", "cgtviz-session.json")
	term.expect("line 32/41")
	term.expect("#2 fee")
	term.expect("a 512 B^")
	term.expect("● live")
	if c := term.firstColor(); c != "" {
		t.Errorf("NO_COLOR is set, yet the program wrote a color: %q", c)
	}
	if x, y, ok := term.coloredCell(); ok {
		t.Errorf("NO_COLOR is set, yet the screen has a colored cell at %d,%d\n%s", x, y, term.screen())
	}
	term.keys("q")
	term.exited()
}

// terminal is one run of cgtviz on a pseudo-terminal, with a terminal
// emulator keeping the screen it draws.
type terminal struct {
	t      *testing.T
	cmd    *exec.Cmd
	master *os.File
	exit   chan error // the program's exit, once

	mu  sync.Mutex
	emu *vt.Emulator
	raw bytes.Buffer // every byte the program wrote
}

// startTUI runs `cgtviz ARGS...` in dir on a fresh 120x40 terminal, with
// env added to the environment.
func startTUI(t *testing.T, dir string, env []string, args ...string) *terminal {
	t.Helper()
	master, tty, err := openPTY(e2eCols, e2eRows)
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	newCmd := func(session bool) *exec.Cmd {
		cmd := exec.Command(os.Args[0], args...)
		cmd.Dir = dir
		cmd.Env = append(cleanEnv(), append([]string{asMainEnv + "=1", "TERM=xterm-256color"}, env...)...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
		// A session of its own with the terminal as its controlling
		// terminal, as a shell would start it.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: session, Setctty: session}
		return cmd
	}
	cmd := newCmd(true)
	if err := cmd.Start(); err != nil {
		// A sandbox may refuse a new session or a controlling terminal;
		// the program needs neither (it reads the size from its
		// output), only the terminal on its standard streams.
		t.Logf("start cgtviz in a session of its own: %v; again in the test's", err)
		cmd = newCmd(false)
		if err := cmd.Start(); err != nil {
			master.Close()
			tty.Close()
			t.Fatalf("start cgtviz: %v", err)
		}
	}
	tty.Close() // the child holds it now

	term := &terminal{t: t, cmd: cmd, master: master, exit: make(chan error, 1), emu: vt.NewEmulator(e2eCols, e2eRows)}
	go func() { term.exit <- cmd.Wait() }()
	go term.readScreen()
	// The emulator answers the program's queries (device attributes,
	// cursor position, colors) through its input pipe.
	answers := term.emu.InputPipe().(*io.PipeWriter)
	go io.Copy(master, term.emu) //nolint:errcheck // ends when answers closes
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill() //nolint:errcheck
			<-term.exit
		}
		answers.Close()
		master.Close()
	})
	return term
}

// cleanEnv is the test's environment without what would change the
// program's looks: the test sets TERM and NO_COLOR itself.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "NO_COLOR", "TERM", "COLORTERM", "CLICOLOR_FORCE", "TMUX", asMainEnv:
			continue
		}
		env = append(env, kv)
	}
	return env
}

// readScreen feeds what the program writes into the emulator until the
// terminal closes (EIO once the program has exited).
func (term *terminal) readScreen() {
	buf := make([]byte, 64<<10)
	for {
		n, err := term.master.Read(buf)
		if n > 0 {
			term.mu.Lock()
			term.raw.Write(buf[:n])
			term.emu.Write(buf[:n]) //nolint:errcheck // never fails while open
			term.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// screen is the terminal's text now, rows joined by newlines.
func (term *terminal) screen() string {
	term.mu.Lock()
	defer term.mu.Unlock()
	return term.emu.String()
}

// keys types s (a key per byte, \r for Enter).
func (term *terminal) keys(s string) {
	term.t.Helper()
	if _, err := term.master.Write([]byte(s)); err != nil {
		term.t.Fatalf("type %q: %v", s, err)
	}
}

// expect waits until the screen shows s.
func (term *terminal) expect(s string) {
	term.t.Helper()
	deadline := time.Now().Add(e2eWait)
	for {
		scr := term.screen()
		if strings.Contains(scr, s) {
			return
		}
		if time.Now().After(deadline) {
			term.t.Fatalf("the screen never showed %q; it shows:\n%s", s, scr)
		}
		select {
		case err := <-term.exit:
			term.exit <- err
			term.t.Fatalf("cgtviz exited (%v) before the screen showed %q; it shows:\n%s", err, s, term.screen())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// refuse fails when the screen shows s now.
func (term *terminal) refuse(s string) {
	term.t.Helper()
	if scr := term.screen(); strings.Contains(scr, s) {
		term.t.Fatalf("the screen shows %q:\n%s", s, scr)
	}
}

// exited waits for the program to end and checks that it ended with 0.
func (term *terminal) exited() {
	term.t.Helper()
	select {
	case err := <-term.exit:
		term.exit <- err
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			term.t.Fatalf("cgtviz exited with status %d; the screen:\n%s", ee.ExitCode(), term.screen())
		}
		if err != nil {
			term.t.Fatalf("cgtviz: %v", err)
		}
	case <-time.After(e2eWait):
		term.t.Fatalf("cgtviz did not exit; the screen:\n%s", term.screen())
	}
}

// click clicks the left button on the first cell showing s, as a terminal
// in SGR mouse mode reports it (1-based cells, press then release).
func (term *terminal) click(s string) {
	term.t.Helper()
	x, y, ok := term.find(s)
	if !ok {
		term.t.Fatalf("no %q on the screen to click:\n%s", s, term.screen())
	}
	term.keys(fmt.Sprintf("\x1b[<0;%d;%dM\x1b[<0;%d;%dm", x+1, y+1, x+1, y+1))
}

// find returns the cell where s starts on the screen.
func (term *terminal) find(s string) (x, y int, ok bool) {
	term.mu.Lock()
	defer term.mu.Unlock()
	want := []rune(s)
	for y := range e2eRows {
		var row []rune // one rune per cell
		for x := range e2eCols {
			c := term.emu.CellAt(x, y)
			r := ' '
			if c != nil && c.Content != "" {
				r = []rune(c.Content)[0]
			}
			row = append(row, r)
		}
		for x := 0; x+len(want) <= len(row); x++ {
			if string(row[x:x+len(want)]) == s {
				return x, y, true
			}
		}
	}
	return 0, 0, false
}

// sgr matches one Select Graphic Rendition sequence and its parameters.
var sgr = regexp.MustCompile("\x1b\\[([0-9;:]*)m")

// firstColor is the first SGR sequence the program wrote that sets a
// color (foreground, background or underline; basic, bright, 256 or RGB),
// or "" when it wrote none.
func (term *terminal) firstColor() string {
	term.mu.Lock()
	defer term.mu.Unlock()
	for _, m := range sgr.FindAllSubmatch(term.raw.Bytes(), -1) {
		for _, p := range strings.Split(string(m[1]), ";") {
			p, _, _ = strings.Cut(p, ":") // 38:2:r:g:b and 4:3 sub-parameters
			n, err := strconv.Atoi(p)
			if err != nil {
				continue
			}
			if n >= 30 && n <= 38 || n >= 40 && n <= 48 || n >= 90 && n <= 97 || n >= 100 && n <= 107 || n == 58 {
				return string(m[0])
			}
		}
	}
	return ""
}

// coloredCell finds a cell of the screen drawn with a color.
func (term *terminal) coloredCell() (x, y int, ok bool) {
	term.mu.Lock()
	defer term.mu.Unlock()
	for y := range e2eRows {
		for x := range e2eCols {
			c := term.emu.CellAt(x, y)
			if c != nil && (c.Style.Fg != nil || c.Style.Bg != nil || c.Style.UnderlineColor != nil) {
				return x, y, true
			}
		}
	}
	return 0, 0, false
}
