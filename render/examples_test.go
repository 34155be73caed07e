package render

import (
	"bytes"
	"context"
	"io/fs"
	"regexp"
	"strings"
	"testing"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/engine/device/sim"
	"github.com/cgtviz/cgtviz/examples"
	"github.com/cgtviz/cgtviz/traces"
)

// readExample reads an embedded example trace.
func readExample(t *testing.T, name string) *traces.Trace {
	t.Helper()
	b, err := fs.ReadFile(examples.FS(), name)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := traces.Read(bytes.NewReader(b), name)
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return tr
}

// runExample runs the first n records of tr on simulated devices and
// returns the state after them and the last step. The seed traces raise no
// errors and every expect holds, so any failure means the state drawn is
// not the one the golden files describe.
func runExample(t *testing.T, tr *traces.Trace, n int) (*engine.State, *engine.Step) {
	t.Helper()
	prefix := *tr
	prefix.Records = tr.Records[:n]
	devs := sim.Devices(tr.Header.Devices)
	var last *engine.Step
	e, err := engine.RunTrace(context.Background(), &prefix, engine.Options{Devices: devs, File: tr.File, Check: true}, func(s *engine.Step) bool {
		if s.Err != nil {
			t.Errorf("%s", s.Err)
		}
		for _, f := range s.ExpectFailures {
			t.Errorf("%s line %d: %s", tr.File, s.Line, f)
		}
		last = s
		return true
	})
	if err != nil {
		t.Fatalf("run %s: %v", tr.File, err)
	}
	return e.State(), last
}

// checkpointRecords returns how many records of tr lead up to and include
// the call that checkpointed: the call just before the first expect that
// says "checkpoints": 1.
func checkpointRecords(t *testing.T, tr *traces.Trace) int {
	t.Helper()
	call := -1
	for i, r := range tr.Records {
		if r.Op == traces.OpCall {
			call = i
		}
		if r.Op == traces.OpExpect && r.Expect != nil && r.Expect.Checkpoints != nil && *r.Expect.Checkpoints == 1 {
			if call < 0 {
				t.Fatalf("%s: expect on line %d follows no call", tr.File, r.Line)
			}
			return call + 1
		}
	}
	t.Fatalf("%s has no expect with checkpoints 1", tr.File)
	return 0
}

func TestExampleGoldens(t *testing.T) {
	seedA := readExample(t, "seed-a-checkpoint.cgt.jsonl")
	tests := []struct {
		name   string
		trace  *traces.Trace
		n      int // records to run
		golden string
		// wantStep are lines the highlighted step must put in the DOT.
		wantStep []string
	}{
		{"seed A at its checkpoint", seedA, checkpointRecords(t, seedA), "seed-a-checkpoint-at-checkpoint.dot",
			[]string{"line 32: call fee: record #2 after a checkpoint", "this step: recorded", "checkpoint restored"}},
		{"seed A at the end", seedA, len(seedA.Records), "seed-a-checkpoint.dot", nil},
	}
	for _, name := range []string{"seed-b-all-dead-root.cgt.jsonl", "seed-c-live-child.cgt.jsonl"} {
		tr := readExample(t, name)
		tests = append(tests, struct {
			name     string
			trace    *traces.Trace
			n        int
			golden   string
			wantStep []string
		}{name + " at the end", tr, len(tr.Records), strings.TrimSuffix(name, ".cgt.jsonl") + ".dot", nil})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, last := runExample(t, tc.trace, tc.n)
			opts := TreeOptions{Title: tc.trace.Header.Name}
			opts.SetStep(last)
			dot, err := TreeDOT(st, opts)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tc.golden, dot)
			for _, w := range tc.wantStep {
				if !bytes.Contains(dot, []byte(w)) {
					t.Errorf("DOT lacks %q", w)
				}
			}
			checkSVGCounts(t, st, dot)
		})
	}
}

func TestExampleSeedA(t *testing.T) {
	tr := readExample(t, "seed-a-checkpoint.cgt.jsonl")
	st, _ := runExample(t, tr, len(tr.Records))
	// foo's root with fee's two recordings under it: the first expects
	// foo's a dead, the second was recorded when a stayed alive.
	want := "" +
		"#0 foo (replays 3) [path]\n" +
		"├─ #1 fee (replays 1)\n" +
		"└─ #2 fee (replays 1) [current]\n"
	if got := TreeText(st, 0); got != want {
		t.Errorf("TreeText:\n%s\nwant:\n%s", got, want)
	}
	dot, err := TreeDOT(st, TreeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		"expects (0,0)",
		"no existing recording passed its invariants",
		"expected dead indices before graph are live",
	} {
		if !bytes.Contains(dot, []byte(w)) {
			t.Errorf("DOT lacks %q:\n%s", w, dot)
		}
	}
	for id := range st.Devices[0].Nodes {
		g, err := NodeGraphDOT(st, 0, id, "")
		if err != nil {
			t.Fatal(err)
		}
		checkGolden(t, "seed-a-node"+string(rune('0'+id))+".dot", g)
		if _, err := SVG(t.Context(), g); err != nil {
			t.Errorf("node %d: %v", id, err)
		}
	}
}

// TestAllExamples draws every example trace after every record: whatever
// state the engine reaches, TreeDOT, TreeText and NodeGraphDOT draw every
// node once, and the final SVG has the nodes and edges the state implies.
// (Whether the engine reaches the right states is for the engine's tests.)
func TestAllExamples(t *testing.T) {
	decl := regexp.MustCompile(`(?m)^\t\td\d+_[nw]\d+ \[label=`)
	for _, name := range examples.Names() {
		t.Run(name, func(t *testing.T) {
			tr := readExample(t, name)
			devs := sim.Devices(tr.Header.Devices)
			e, err := engine.New(tr.Header, engine.Options{Devices: devs, File: tr.File})
			if err != nil {
				t.Fatal(err)
			}
			var st *engine.State
			for i := range tr.Records {
				s := e.Apply(&tr.Records[i])
				st = e.State()
				opts := TreeOptions{MaxNodes: 1 << 20}
				opts.SetStep(s)
				dot, err := TreeDOT(st, opts)
				if err != nil {
					t.Fatalf("line %d: %v", s.Line, err)
				}
				total := 0
				for d, dev := range st.Devices {
					total += len(dev.Nodes) + len(dev.Warmups)
					lines := strings.Count(TreeText(st, d), "\n")
					if want := max(1, len(dev.Nodes)+len(dev.Warmups)); lines != want {
						t.Errorf("line %d: device %d: TreeText has %d lines, want %d:\n%s", s.Line, d, lines, want, TreeText(st, d))
					}
					for _, n := range dev.Nodes {
						if _, err := NodeGraphDOT(st, d, n.ID, ""); err != nil {
							t.Fatalf("line %d: %v", s.Line, err)
						}
					}
				}
				if got := len(decl.FindAll(dot, -1)); got != total {
					t.Errorf("line %d: DOT declares %d nodes, the state has %d", s.Line, got, total)
				}
			}
			dot, err := TreeDOT(st, TreeOptions{MaxNodes: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			checkSVGCounts(t, st, dot)
		})
	}
}

// checkSVGCounts renders dot and checks that the SVG has one box per graph
// node and warmup node, a start point per device and the legend, and an
// edge per graph and warmup node of st.
func checkSVGCounts(t *testing.T, st *engine.State, dot []byte) {
	t.Helper()
	svg, err := SVG(t.Context(), dot)
	if err != nil {
		t.Fatal(err)
	}
	wantNodes, wantEdges := 1, 0
	for _, d := range st.Devices {
		wantNodes += 1 + len(d.Nodes) + len(d.Warmups)
		wantEdges += len(d.Nodes) + len(d.Warmups)
	}
	nodes, edges, _ := svgCounts(t, svg)
	if nodes != wantNodes || edges != wantEdges {
		t.Errorf("SVG has %d nodes and %d edges, want %d and %d", nodes, edges, wantNodes, wantEdges)
	}
}
