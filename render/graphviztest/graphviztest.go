// Package graphviztest gives tests a cgtviz-graphviz to render with, so
// that `go test ./...` needs nothing built beforehand: $CGTVIZ_GRAPHVIZ when
// set (make unit builds one for every package), else one beside the test
// binary (the GPU machine's, carried there by make gpu-build), else one
// built with `go build` into a temporary folder. PATH is not looked at: a
// test must render with this tree's helper, not an installed one.
package graphviztest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Env and Name are render.GraphvizEnv and render.GraphvizName (not imported:
// render's own tests use this package).
const (
	Env  = "CGTVIZ_GRAPHVIZ"
	Name = "cgtviz-graphviz"
	pkg  = "github.com/cgtviz/cgtviz/cmd/cgtviz/cgtviz-graphviz"
)

// Setup finds or builds cgtviz-graphviz and sets $CGTVIZ_GRAPHVIZ to it for
// this process and its children. Call it from TestMain before m.Run; run
// the returned cleanup after (it removes what Setup built).
func Setup() (cleanup func(), err error) {
	if p := os.Getenv(Env); p != "" {
		if _, err := os.Stat(p); err != nil {
			return func() {}, fmt.Errorf("graphviztest: $%s is %s: %w", Env, p, err)
		}
		return func() {}, nil
	}
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), Name)
		if _, err := os.Stat(p); err == nil {
			return func() {}, os.Setenv(Env, p)
		}
	}
	dir, err := os.MkdirTemp("", "cgtviz-graphviz-test-")
	if err != nil {
		return func() {}, fmt.Errorf("graphviztest: %w", err)
	}
	cleanup = func() { os.RemoveAll(dir) }
	p := filepath.Join(dir, Name)
	out, err := exec.Command("go", "build", "-o", p, pkg).CombinedOutput()
	if err != nil {
		cleanup()
		return func() {}, fmt.Errorf("graphviztest: go build %s: %w\n%s", pkg, err, out)
	}
	if err := os.Setenv(Env, p); err != nil {
		cleanup()
		return func() {}, fmt.Errorf("graphviztest: %w", err)
	}
	return cleanup, nil
}

// Main is a TestMain's body for a package whose tests render: Setup, the
// tests, the cleanup; it returns the exit code for os.Exit.
func Main(m *testing.M) int {
	cleanup, err := Setup()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer cleanup()
	return m.Run()
}
