// Package examples holds the example traces: the seed thread's scenarios and
// the scenarios of PyTorch's own tests that the trace format can express,
// each with expect records checked against PyTorch 2.11. They are embedded
// so that `cgtviz` with no trace opens the demo.
package examples

import (
	"embed"
	"io/fs"
	"sort"
)

//go:embed *.cgt.jsonl
var files embed.FS

// DemoName is the file of the demo that `make run` opens.
const DemoName = "seed-a-checkpoint.cgt.jsonl"

// FS returns the embedded example traces.
func FS() fs.FS { return files }

// Names lists the embedded example files, sorted.
func Names() []string {
	ents, _ := fs.ReadDir(files, ".")
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

// Demo returns the demo trace's bytes.
func Demo() []byte {
	b, _ := files.ReadFile(DemoName)
	return b
}
