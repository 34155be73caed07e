package traces

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cgtviz/cgtviz/tools/golden"
)

// TestCheckGolden checks that each testdata/bad trace gives exactly the
// problems in its .golden file.
func TestCheckGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/bad/*.cgt.jsonl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no bad traces: %v", err)
	}
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(strings.TrimSuffix(name, ".cgt.jsonl"), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			ps := Check(bytes.NewReader(data), name)
			if len(ps) == 0 {
				t.Fatalf("%s checks clean; a bad trace must have problems", name)
			}
			got := Problems(ps).Error() + "\n"
			golden.Check(t, strings.TrimSuffix(path, ".cgt.jsonl")+".golden", []byte(got))
		})
	}
}

// TestCheckClean checks that the good traces here and the examples users
// get have no problems.
func TestCheckClean(t *testing.T) {
	good, _ := filepath.Glob("testdata/good/*.cgt.jsonl")
	if len(good) == 0 {
		t.Fatal("no good traces in testdata/good")
	}
	examples, _ := filepath.Glob("../examples/*.cgt.jsonl")
	for _, path := range append(good, examples...) {
		t.Run(path, func(t *testing.T) {
			if ps := CheckFile(path); len(ps) > 0 {
				t.Errorf("%s", Problems(ps).Error())
			}
		})
	}
}

func TestExamplesClean(t *testing.T) {
	examples, _ := filepath.Glob("../examples/*.cgt.jsonl")
	if len(examples) == 0 {
		t.Skip("no examples yet in ../examples")
	}
	for _, path := range examples {
		n, ps := CheckFileCount(path)
		if len(ps) > 0 {
			t.Errorf("%s", Problems(ps).Error())
		}
		if n == 0 {
			t.Errorf("%s: no records", path)
		}
	}
}
