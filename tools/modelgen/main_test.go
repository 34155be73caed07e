package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cgtviz/cgtviz/traces"
)

func TestRun(t *testing.T) {
	out := filepath.Join(t.TempDir(), "m.cgt.jsonl")
	var so, se bytes.Buffer
	if code := run([]string{"-layers", "2", "-width", "64", "-o", out}, &so, &se); code != 0 {
		t.Fatalf("exit %d: %s", code, se.String())
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := traces.ReadChecked(f, out); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]string{{"-layers", "0"}, {"extra"}, {"-width", "x"}} {
		se.Reset()
		if code := run(bad, &so, &se); code != 2 || se.Len() == 0 {
			t.Errorf("%v: exit %d, stderr %q", bad, code, se.String())
		}
	}
	if code := run([]string{"-layers", "1", "-width", "8", "-o", filepath.Join(t.TempDir(), "no", "x")}, &so, &se); code != 1 || !strings.Contains(se.String(), "modelgen:") {
		t.Errorf("unwritable: exit %d", code)
	}
}
