// Package examples holds the example traces: the seed thread's scenarios and
// the scenarios of PyTorch's own tests that the trace format can express,
// each with expect records checked against PyTorch 2.11. They are embedded
// so that `cgtviz` with no trace opens the demo.
package examples

import (
	"bytes"
	"embed"
	"io"
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

// DemoSource is how a command line names the demo: `cgtviz run demo`.
const DemoSource = "demo"

// OpenDemo returns a reader of the demo trace and the name it is read as:
// the one way every command and the session open it.
func OpenDemo() (io.Reader, string) { return bytes.NewReader(Demo()), DemoName }

// Demo returns the demo trace's bytes.
func Demo() []byte {
	b, _ := files.ReadFile(DemoName)
	return b
}
