package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// repoRoot is the repository, from this package's directory.
const repoRoot = "../.."

// docLine is one `cgtviz ...` command line found in the documentation.
type docLine struct {
	where string // file:line
	text  string
}

// docCommandLines extracts every cgtviz command line from README.md and
// docs/*.md: the lines of code blocks that start with `cgtviz` or
// `$ cgtviz` (a `#` comment and a `| next` pipe cut off), and inline code
// spans that start with `cgtviz ` (a span may run over a line break).
func docCommandLines(t *testing.T) []docLine {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{filepath.Join(repoRoot, "README.md")}, files...)
	span := regexp.MustCompile("`(cgtviz(?: [^`]*)?)`")
	var out []docLine
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repoRoot, f)
		lines := strings.Split(string(data), "\n")
		inCode := false
		for i, l := range lines {
			where := rel + ":" + strconv.Itoa(i+1)
			if strings.HasPrefix(strings.TrimSpace(l), "```") {
				inCode = !inCode
				continue
			}
			if inCode {
				c := strings.TrimPrefix(strings.TrimSpace(l), "$ ")
				if c == "cgtviz" || strings.HasPrefix(c, "cgtviz ") {
					c, _, _ = strings.Cut(c, " #")
					c, _, _ = strings.Cut(c, " | ")
					out = append(out, docLine{where, strings.TrimSpace(c)})
				}
				continue
			}
			// Inline spans: this line joined with the next, for a span
			// broken over the line end; a span is taken on the line it
			// starts on.
			joined := l
			if i+1 < len(lines) {
				joined += " " + lines[i+1]
			}
			for _, m := range span.FindAllStringSubmatchIndex(joined, -1) {
				if m[0] >= len(l) {
					break
				}
				if m[0] > 0 && strings.Count(l[:m[0]], "`")%2 == 1 {
					continue // the backtick closes an earlier span
				}
				out = append(out, docLine{where, strings.Join(strings.Fields(joined[m[2]:m[3]]), " ")})
			}
		}
	}
	return out
}

// docPlaceholders are the names the docs write for what the reader
// supplies, and what the test supplies.
func docPlaceholders(trace, session string) map[string]string {
	return map[string]string{
		"TRACE": trace, "TRACE...": trace, "[TRACE]": trace, "FILE": trace,
		"step.cgt.jsonl": trace, "train.cgt.jsonl": trace,
		"SESSION.json": session, "cgtviz-session.json": session,
		"L": "32", "N": "1", "ID": "0", "D": "0", "[flags]": "",
	}
}

// TestDocsCommandLines runs every cgtviz command line of README.md and
// docs/ through run: a full command (run, check, fmt, export, snapshot,
// version) must exit 0; the terminal UI's lines, and lines that need a GPU
// or are fragments of a command, are checked for their flags only (with
// -h after them, which parses every flag before it and exits 0).
func TestDocsCommandLines(t *testing.T) {
	lines := docCommandLines(t)
	if len(lines) < 20 {
		t.Fatalf("only %d command lines found in the docs: is the extraction broken?", len(lines))
	}
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	trace := filepath.Join(dir, "t.cgt.jsonl")
	seed, err := os.ReadFile(filepath.Join(root, "examples", "seed-a-checkpoint.cgt.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	session := filepath.Join(dir, "s.json")
	t.Chdir(dir)
	for _, dl := range lines {
		t.Run(dl.where+" "+dl.text, func(t *testing.T) {
			// A fresh copy each time: fmt -w rewrites it.
			if err := os.WriteFile(trace, seed, 0o644); err != nil {
				t.Fatal(err)
			}
			sessionOf(t, trace, session)
			args := docArgs(t, dl.text, root, docPlaceholders(trace, session))
			full := isFullCommand(args)
			if !full {
				args = append(args, "-h")
			}
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), args, &stdout, &stderr)
			if code != 0 {
				t.Fatalf("%s: cgtviz %s: exit %d (full run: %v)\nstderr: %.3000s", dl.where, strings.Join(args, " "), code, full, stderr.String())
			}
		})
	}
}

// docArgs splits a documented line into arguments: placeholders replaced,
// "[-w]" taken as "-w", "a\|b" alternatives as their first, repository
// paths made absolute and globs expanded.
func docArgs(t *testing.T, line, root string, ph map[string]string) []string {
	var args []string
	for _, f := range strings.Fields(line)[1:] {
		if v, ok := ph[f]; ok {
			if v != "" {
				args = append(args, v)
			}
			continue
		}
		f = strings.TrimSuffix(strings.TrimPrefix(f, "["), "]")
		if v, ok := ph[f]; ok {
			args = append(args, v)
			continue
		}
		if a, _, ok := strings.Cut(f, `\|`); ok {
			f = a
		}
		if strings.ContainsAny(f, "*?") {
			m, _ := filepath.Glob(filepath.Join(root, f))
			if len(m) == 0 {
				t.Fatalf("%s matches no file", f)
			}
			args = append(args, m...)
			continue
		}
		if strings.Contains(f, "/") {
			if _, err := os.Stat(filepath.Join(root, f)); err == nil {
				f = filepath.Join(root, f)
			}
		}
		args = append(args, f)
	}
	return args
}

// isFullCommand reports whether args are a command that can run here as
// written: not the UI (which needs a terminal), nothing on a GPU, no
// --follow (which waits for the trace to grow), and with
// the trace (and output file) the command needs.
func isFullCommand(args []string) bool {
	if len(args) == 0 {
		return false
	}
	for _, a := range args {
		// A GPU's, and a follow that waits for more on purpose.
		if a == "cuda" || a == "--run-on=cuda" || a == "-device=cuda" || a == "--follow" {
			return false
		}
	}
	hasTrace, hasOut := false, false
	for i, a := range args[1:] {
		if strings.HasSuffix(a, ".jsonl") {
			hasTrace = true
		}
		if a == "-o" && i+2 < len(args) {
			hasOut = true
		}
	}
	switch args[0] {
	case "version":
		return true
	case "run", "check", "fmt":
		return hasTrace
	case "export", "snapshot", "report":
		return hasTrace && hasOut
	}
	return false
}

// sessionOf saves a session on trace to path, for the lines that open one.
func sessionOf(t *testing.T, trace, path string) {
	t.Helper()
	data := `{"cgtviz_session": 1, "trace": "` + trace + `", "position": 3}`
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}
