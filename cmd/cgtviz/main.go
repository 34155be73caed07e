package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/cgtviz/cgtviz/examples"
	"github.com/charmbracelet/x/term"
)

// version is the release, set at build time with
// -ldflags "-X main.version=v1.2.3".
var version = "dev"

// command is one subcommand. Adding a command is a new file with its run
// function and one line in commands.
type command struct {
	name    string
	usage   string // arguments after the name, e.g. "[-w] TRACE"
	summary string // one line for `cgtviz -h`
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// commands is every subcommand, in the order `cgtviz -h` lists them.
var commands = []command{
	{"check", "[-q] TRACE...", "check traces and report every problem", runCheck},
	{"fmt", "[-w] TRACE", "rewrite a trace in canonical form", runFmt},
	{"tui", tuiUsage, tuiSummary, runTUI},
	{"open", openUsage, "resume a saved debugging session in the terminal UI", runOpen},
	{"export", exportUsage, exportSummary, runExport},
	{"snapshot", "[--line L] [--device D] [--device-memory BYTES] [--handoff preserve|raise|version] -o FILE.pickle TRACE", "write the allocator's state and events as a PyTorch memory snapshot", runSnapshot},
	{"version", "", "print the version and the device backends of this binary", runVersion},
	{"run", "[--json] [--log] [--device sim|cuda|auto] [--stop-on-error] [--check] [--handoff preserve|raise|version] [--device-memory BYTES] [--follow [--follow-timeout D]] TRACE", "run a trace and report what the tree did and why", runRun},
	{"report", reportUsage, reportSummary, runReport},
	{"completion", "bash|zsh|fish", "print the shell completion script (commands, flags, trace files)", runCompletion},
}

// byName indexes commands. It is filled in init, not in its declaration:
// commands' run functions print their usage from it, and a declaration
// would make an initialization cycle.
var byName = map[string]command{}

func init() {
	for _, c := range commands {
		byName[c.name] = c
	}
}

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	var got atomic.Value // the first signal
	go func() {
		sig := <-sigs
		got.Store(sig)
		// Every command's loops watch ctx, and its reads end with it
		// (traces.OpenContext): it stops within milliseconds.
		cancel()
		// A second signal, or a command that has not stopped within
		// stopGrace, ends the process at once: a signal must always stop
		// cgtviz.
		t := time.NewTimer(stopGrace)
		select {
		case <-sigs:
		case <-t.C:
			fmt.Fprintf(os.Stderr, "cgtviz: still running %v after %v: exiting\n", stopGrace, sig)
		}
		os.Exit(signalStatus(sig))
	}()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	if sig, ok := got.Load().(os.Signal); ok && code == exitInterrupted {
		code = signalStatus(sig)
	}
	os.Exit(code)
}

// stopGrace is how long a command may take to stop after SIGINT or
// SIGTERM before the process exits without it.
const stopGrace = 2 * time.Second

// signalStatus is the exit status of a process ended by sig, as a shell
// reports it: 128 + the signal's number.
func signalStatus(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return exitInterrupted
}

// run is the whole program, testable: it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		// No command: the TUI on the embedded demo trace, when there is a
		// terminal to show it on.
		if !haveTTY() {
			fmt.Fprintf(stderr, "cgtviz: no terminal for the TUI (run it in a terminal, or use a command)\n\n")
			usage(stderr)
			return 2
		}
		return runTUI(ctx, nil, stdout, stderr)
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage(stdout)
		return 0
	case "-version", "--version":
		fmt.Fprintf(stdout, "cgtviz %s\n", version)
		return 0
	}
	if c, ok := byName[args[0]]; ok {
		return c.run(ctx, args[1:], stdout, stderr)
	}
	if args[0] == "__complete" {
		// Hidden: what the completion scripts ask.
		return runComplete(ctx, args[1:], stdout, stderr)
	}
	if isTraceArg(args[0]) || strings.HasPrefix(args[0], "-") {
		// cgtviz [TUI flags] [TRACE]: the TUI, flags before or after the
		// trace (README and docs/tui.md write `cgtviz -check TRACE`).
		return runTUI(ctx, args, stdout, stderr)
	}
	fmt.Fprintf(stderr, "cgtviz: unknown command %q\nRun 'cgtviz -h' for usage.\n", args[0])
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "cgtviz shows how PyTorch's CUDAGraph Trees run a trace.\n\nUsage:\n\n\tcgtviz <command> [flags] [args]\n\nCommands:\n\n")
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	for _, c := range commands {
		fmt.Fprintf(tw, "\t%s\t%s\n", c.name, c.summary)
	}
	tw.Flush()
	fmt.Fprintf(w, "\n\tcgtviz [flags] [TRACE]\t(no command) the terminal UI on TRACE, or on the embedded demo\n")
	fmt.Fprintf(w, "\nFlags:\n\n\t-h, --help\tthis help\n\t--version\tprint the version\n")
	fmt.Fprintf(w, "\nFlags of the terminal UI (cgtviz [flags] [TRACE], before or after TRACE):\n\n")
	fs, _ := newTUIFlags()
	fs.SetOutput(w)
	fs.PrintDefaults()
	fmt.Fprintf(w, "\nTRACE may be a file (.gz and .zst are read as they are) or - for standard input.\nRun 'cgtviz <command> -h' for a command's flags.\n")
}

// newFlags returns the flag set of a command. Its errors and help are
// printed by parseArgs, not by the flag package.
func newFlags(c string) *flag.FlagSet {
	fs := flag.NewFlagSet(c, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parseArgs parses flags and positional arguments in any order (users type
// `cgtviz check t.cgt.jsonl -q`); "--" ends the flags. It returns the
// positional arguments and, when parsing ends the command (-h or a bad
// flag), the exit status to return: 0 after help on stdout, 2 after an
// error on stderr.
// orStdin is pos, or "-" when pos is empty and standard input is a pipe
// or a file (`cat t | cgtviz run`, `cgtviz check < t`): the commands that
// take a trace read it then, as they read "-". A terminal or /dev/null
// gives none, so that a forgotten TRACE still says so.
func orStdin(pos []string) []string {
	if len(pos) > 0 {
		return pos
	}
	fi, err := os.Stdin.Stat()
	if err != nil || fi.Mode()&os.ModeNamedPipe == 0 && !fi.Mode().IsRegular() {
		return pos
	}
	return []string{"-"}
}

func parseArgs(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) ([]string, int, bool) {
	var pos []string
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			commandUsage(fs, stdout)
			return nil, 0, true
		}
		if err != nil {
			fmt.Fprintf(stderr, "cgtviz %s: %v\n", fs.Name(), err)
			commandUsage(fs, stderr)
			return nil, 2, true
		}
		rest := fs.Args()
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), 0, false
		}
		if len(rest) == 0 {
			return pos, 0, false
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func commandUsage(fs *flag.FlagSet, w io.Writer) {
	if c, ok := byName[fs.Name()]; ok {
		fmt.Fprintf(w, "usage: cgtviz %s %s\n\n%s.\n", c.name, c.usage, strings.ToUpper(c.summary[:1])+c.summary[1:])
	}
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprintf(w, "\nFlags:\n")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
}

// isTraceArg reports whether a first argument that is not a command names
// a trace file (cgtviz TRACE opens the TUI on it).
func isTraceArg(a string) bool {
	if strings.HasPrefix(a, "-") {
		return false
	}
	if strings.HasSuffix(a, ".jsonl") || a == examples.DemoSource {
		return true
	}
	st, err := os.Stat(a)
	return err == nil && !st.IsDir()
}

// haveTTY reports whether a terminal is there for the TUI: standard input
// and output on one (a terminal that is not the process's controlling
// terminal will do), or a controlling terminal to open.
func haveTTY() bool {
	if term.IsTerminal(os.Stdin.Fd()) && term.IsTerminal(os.Stdout.Fd()) {
		return true
	}
	f, err := os.Open("/dev/tty")
	if err != nil {
		return false
	}
	f.Close()
	return true
}
