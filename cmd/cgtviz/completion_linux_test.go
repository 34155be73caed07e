package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestCompletionShells: each shell, given its script, completes through
// the binary (this test binary acting as cgtviz, as TestMain lets it): a
// flag's value in bash, a directory in zsh and fish. zsh's compadd is stood in for (it
// only works inside the completion system), printing what it is given.
func TestCompletionShells(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	wrapper := "#!/bin/sh\n" + asMainEnv + "=1 exec '" + self + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "cgtviz"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	scripts := map[string]string{
		"bash": `source <(cgtviz completion bash)
COMP_WORDS=(cgtviz run --handoff r); COMP_CWORD=3; _cgtviz; echo "${COMPREPLY[*]}"`,
		"zsh": `compadd() { shift $(( ${@[(i)--]} )); print -l -- "$@"; }
source <(cgtviz completion zsh)
words=(cgtviz check rec); CURRENT=3; _cgtviz`,
		"fish": `cgtviz completion fish | source
complete -C "cgtviz check rec"`,
	}
	// Each completion starts the binary (with the race detector when the
	// tests have it): one word each, TestComplete covers the kinds of word.
	want := map[string]string{"bash": "raise\n", "zsh": "recorded/\n", "fish": "recorded/\n"}
	t.Chdir("../../examples")
	for _, sh := range []string{"bash", "zsh", "fish"} {
		t.Run(sh, func(t *testing.T) {
			path, err := exec.LookPath(sh)
			if err != nil {
				t.Skipf("no %s", sh)
			}
			cmd := exec.Command(path, "-c", scripts[sh])
			cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
			got, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", sh, err, got)
			}
			if string(got) != want[sh] {
				t.Errorf("%s completes %q, want %q", sh, got, want[sh])
			}
		})
	}
}
