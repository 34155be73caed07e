package render

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// GraphvizName is the executable that lays out DOT with Graphviz
// (cmd/cgtviz/cgtviz-graphviz). It is a process of its own because the Graphviz
// bindings (github.com/goccy/go-graphviz) compile a WebAssembly module in
// a package init, a cost every process linking them pays at start; run as
// a child, only the renders pay it.
const GraphvizName = "cgtviz-graphviz"

// GraphvizEnv names an environment variable that, when set, is the path of
// the cgtviz-graphviz to run, before any other place is looked at (tests
// and packagers set it).
const GraphvizEnv = "CGTVIZ_GRAPHVIZ"

// ErrNoGraphviz is wrapped by SVG's error when cgtviz-graphviz is nowhere
// to be found; the message says where it was looked for and how to build
// it.
var ErrNoGraphviz = errors.New(GraphvizName + " not found")

// GraphvizError is a render that cgtviz-graphviz refused or failed: a DOT
// syntax error, a Graphviz failure, or the process dying.
type GraphvizError struct {
	Path   string // the executable that ran
	Code   int    // its exit status; -1 when a signal ended it
	Stderr string // what it said, trimmed
}

// Error is what the child said (it names itself, "cgtviz-graphviz: ..."),
// or how it ended when it said nothing.
func (e *GraphvizError) Error() string {
	switch {
	case e.Stderr != "":
		return e.Stderr
	case e.Code < 0:
		return fmt.Sprintf("%s: killed by a signal, nothing on stderr", e.Path)
	}
	return fmt.Sprintf("%s: exit status %d, nothing on stderr", e.Path, e.Code)
}

// FindGraphviz returns the path of the cgtviz-graphviz to run: $CGTVIZ_GRAPHVIZ
// when set, else the one beside this executable (where `make build` puts
// it, beside ./cgtviz), else the first on PATH. Beside comes before PATH
// so that a build runs its own helper, not an older installed one.
func FindGraphviz() (string, error) {
	if p := os.Getenv(GraphvizEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%w: $%s is %s: %v", ErrNoGraphviz, GraphvizEnv, p, err)
		}
		return p, nil
	}
	var looked []string
	if self, err := os.Executable(); err == nil {
		// The link as started and the file it resolves to: a symlinked
		// cgtviz in ~/bin may have its helper beside either.
		dirs := []string{filepath.Dir(self)}
		if real, err := filepath.EvalSymlinks(self); err == nil && filepath.Dir(real) != dirs[0] {
			dirs = append(dirs, filepath.Dir(real))
		}
		for _, d := range dirs {
			p := filepath.Join(d, GraphvizName)
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
				return p, nil
			}
			looked = append(looked, d)
		}
	}
	if p, err := exec.LookPath(GraphvizName); err == nil {
		return p, nil
	}
	looked = append(looked, "$PATH")
	// What to do comes first, the places looked in last: the TUI's
	// message line may cut the end off.
	return "", fmt.Errorf("%w: it renders SVG; build it with `make build` (it lands beside ./cgtviz) or `go build -o DIR/%s ./cmd/cgtviz/cgtviz-graphviz` for a DIR beside cgtviz or on $PATH; -o FILE.dot needs no Graphviz (looked in %s)",
		ErrNoGraphviz, GraphvizName, strings.Join(looked, ", "))
}

// SVG lays out dot with Graphviz's dot engine and returns the picture as
// SVG. It runs cgtviz-graphviz (see FindGraphviz) as a child process, one
// per call: calls may run concurrently, a failure of one never affects the
// next, and ctx bounds the layout (a cancelled ctx ends the child). Errors
// wrap ErrNoGraphviz when there is no cgtviz-graphviz, a *GraphvizError
// when it failed (a DOT syntax error included), or ctx's error.
func SVG(ctx context.Context, dot []byte) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("render: svg: %w", err)
	}
	path, err := FindGraphviz()
	if err != nil {
		return nil, fmt.Errorf("render: svg: %w", err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, path, "-T", "svg")
	cmd.Stdin = bytes.NewReader(dot)
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	err = cmd.Run()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("render: svg: %w", ctx.Err())
	}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return nil, fmt.Errorf("render: svg: %w", &GraphvizError{Path: path, Code: exit.ExitCode(), Stderr: strings.TrimSpace(stderr.String())})
	case err != nil:
		return nil, fmt.Errorf("render: svg: run %s: %w", path, err)
	}
	return stdout.Bytes(), nil
}
