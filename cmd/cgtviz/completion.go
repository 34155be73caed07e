package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// The completion scripts ask the binary itself (`cgtviz __complete WORDS...
// CURRENT`), so that they always know the commands and flags of the
// cgtviz that is installed, as cobra-made CLIs do.
const (
	bashCompletion = `# bash completion for cgtviz: source it, or put it in
# ~/.local/share/bash-completion/completions/cgtviz
_cgtviz() {
	local IFS=$'\n'
	COMPREPLY=($(cgtviz __complete "${COMP_WORDS[@]:1:$COMP_CWORD}" 2>/dev/null))
	if [[ ${#COMPREPLY[@]} -eq 1 && ${COMPREPLY[0]} == */ ]]; then
		compopt -o nospace 2>/dev/null
	fi
}
complete -F _cgtviz cgtviz
`
	zshCompletion = `#compdef cgtviz
# zsh completion for cgtviz: put it in a directory of $fpath as _cgtviz,
# or source it after compinit.
_cgtviz() {
	local -a c
	c=("${(@f)$(cgtviz __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}")
	local -a dirs others
	for x in $c; do
		[[ -z $x ]] && continue
		if [[ $x == */ ]]; then dirs+=($x); else others+=($x); fi
	done
	(( ${#dirs} )) && compadd -Q -S '' -- $dirs
	(( ${#others} )) && compadd -Q -- $others
	(( ${#dirs} + ${#others} ))
}
if (( $+functions[compdef] )); then compdef _cgtviz cgtviz; fi
`
	fishCompletion = `# fish completion for cgtviz: put it in
# ~/.config/fish/completions/cgtviz.fish
complete -c cgtviz -f -a '(cgtviz __complete (commandline -opc)[2..-1] (commandline -ct) 2>/dev/null)'
`
)

// runCompletion is `cgtviz completion bash|zsh|fish`: the shell's script.
func runCompletion(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("completion")
	pos, code, done := parseArgs(fs, args, stdout, stderr)
	if done {
		return code
	}
	scripts := map[string]string{"bash": bashCompletion, "zsh": zshCompletion, "fish": fishCompletion}
	if len(pos) != 1 || scripts[pos[0]] == "" {
		fmt.Fprintf(stderr, "cgtviz completion: want one shell: bash, zsh or fish\n")
		commandUsage(fs, stderr)
		return 2
	}
	fmt.Fprint(stdout, scripts[pos[0]])
	return 0
}

// runComplete is the hidden `cgtviz __complete WORDS... CURRENT`: the
// candidates for the word being typed, one a line.
func runComplete(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		args = []string{""}
	}
	for _, c := range complete(args[:len(args)-1], args[len(args)-1]) {
		fmt.Fprintln(stdout, c)
	}
	return 0
}

// flagValues are the values a flag takes, where they are few.
var flagValues = map[string][]string{
	"handoff": {"preserve", "raise", "version"},
	"device":  {"sim", "cuda", "auto"},
	"run-on":  {"sim", "cuda", "auto"},
	"format":  {"dot", "svg"},
	"rankdir": {"TB", "LR"},
}

// complete returns the candidates for cur after the words before it.
func complete(before []string, cur string) []string {
	cmd := "tui"
	rest := before
	if len(before) > 0 {
		if _, ok := byName[before[0]]; ok {
			cmd, rest = before[0], before[1:]
		}
	}
	flags := commandFlags(cmd)
	// The value of a flag given as its own word.
	if len(rest) > 0 || (cmd == "tui" && len(before) > 0) {
		prev := before[len(before)-1]
		if name := strings.TrimLeft(prev, "-"); strings.HasPrefix(prev, "-") && !strings.Contains(prev, "=") {
			if takesValue, known := flags[name]; known && takesValue {
				if vs := flagValues[name]; vs != nil && !(name == "device" && cmd == "export") {
					return withPrefix(vs, cur)
				}
				return fileCandidates(cur, nil)
			}
		}
	}
	if strings.HasPrefix(cur, "-") {
		dash := "--"
		if cmd == "tui" || cmd == "open" {
			dash = "-" // as docs/tui.md writes them
		}
		var out []string
		for name := range flags {
			out = append(out, dash+name)
		}
		if len(before) == 0 {
			out = append(out, "-h", "--version")
		}
		slices.Sort(out)
		return withPrefix(out, cur)
	}
	var out []string
	if len(before) == 0 {
		for _, c := range commands {
			out = append(out, c.name)
		}
		out = withPrefix(out, cur)
	}
	switch cmd {
	case "open":
		return append(out, fileCandidates(cur, []string{".json"})...)
	case "version", "completion":
		if cmd == "completion" {
			return withPrefix([]string{"bash", "fish", "zsh"}, cur)
		}
		return out
	}
	return append(out, fileCandidates(cur, traceExts)...)
}

// traceExts are the endings of trace files.
var traceExts = []string{".jsonl", ".jsonl.gz", ".jsonl.zst"}

func withPrefix(words []string, prefix string) []string {
	var out []string
	for _, w := range words {
		if strings.HasPrefix(w, prefix) {
			out = append(out, w)
		}
	}
	return out
}

// fileCandidates lists the directories (with a trailing slash) and the
// files ending in one of exts (any file when exts is nil) that start with
// cur.
func fileCandidates(cur string, exts []string) []string {
	dir, base := filepath.Split(cur)
	d := dir
	if d == "" {
		d = "."
	}
	ents, err := os.ReadDir(d)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, base) || (strings.HasPrefix(name, ".") && !strings.HasPrefix(base, ".")) {
			continue
		}
		isDir := e.IsDir()
		if e.Type()&os.ModeSymlink != 0 {
			if st, err := os.Stat(filepath.Join(d, name)); err == nil {
				isDir = st.IsDir()
			}
		}
		switch {
		case isDir:
			out = append(out, dir+name+"/")
		case exts == nil || slices.ContainsFunc(exts, func(x string) bool { return strings.HasSuffix(name, x) }):
			out = append(out, dir+name)
		}
	}
	return out
}

// flagLine is a line of flag.PrintDefaults naming a flag: "  -name" for a
// boolean, "  -name type" for one that takes a value.
var flagLine = regexp.MustCompile(`(?m)^  -(\S+)( \S+)?$`)

// commandFlags returns a command's flags, each with whether it takes a
// value, read from its own -h: the one place the flags are defined.
func commandFlags(cmd string) map[string]bool {
	var buf bytes.Buffer
	if cmd == "tui" {
		fs, _ := newTUIFlags()
		fs.SetOutput(&buf)
		fs.PrintDefaults()
	} else if c, ok := byName[cmd]; ok {
		c.run(context.Background(), []string{"-h"}, &buf, io.Discard)
	}
	out := map[string]bool{}
	for _, m := range flagLine.FindAllStringSubmatch(buf.String(), -1) {
		out[m[1]] = m[2] != ""
	}
	return out
}
