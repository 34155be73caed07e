package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestCompletionBash: bash, given the script, completes through the binary
// (this test binary acting as cgtviz, as TestMain lets it).
func TestCompletionBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	wrapper := "#!/bin/sh\n" + asMainEnv + "=1 exec '" + self + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "cgtviz"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	script := `source <(cgtviz completion bash)
COMP_WORDS=(cgtviz run --handoff r); COMP_CWORD=3; _cgtviz; echo "${COMPREPLY[*]}"
COMP_WORDS=(cgtviz sn); COMP_CWORD=1; _cgtviz; echo "${COMPREPLY[*]}"`
	cmd := exec.Command(bash, "-c", script)
	cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	got, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, got)
	}
	if string(got) != "raise\nsnapshot\n" {
		t.Errorf("bash completes %q, want raise, snapshot", got)
	}
}
