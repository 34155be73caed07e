package render

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/cgtviz/cgtviz/engine"
)

func TestTreeDOTGolden(t *testing.T) {
	tests := []struct {
		name  string
		st    *engine.State
		opts  TreeOptions
		files string
	}{
		{"hand recorded step", handState(), TreeOptions{Title: "hand", StepAction: StepRecorded, StepNode: 2, StepCheckpoint: true, StepCheckpointNode: 0, StepLine: 33, StepText: "line 33: call fee: record #2 after a checkpoint"}, "hand-recorded.dot"},
		{"hand LR no step", handState(), TreeOptions{RankDir: "lr"}, "hand-lr.dot"},
		{"hand subtree", handState(), TreeOptions{Subtree: true, Root: 2, StepAction: StepReplayed, StepNode: 2}, "hand-subtree.dot"},
		{"warmup chain two devices", warmState(), TreeOptions{StepAction: StepWarmed, StepLine: 9, StepText: "line 9: call fee: warmup"}, "warm.dot"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := TreeDOT(tc.st, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tc.files, got)
		})
	}
}

func TestTreeDOTContent(t *testing.T) {
	got, err := TreeDOT(handState(), TreeOptions{StepAction: StepRecorded, StepNode: 2})
	if err != nil {
		t.Fatal(err)
	}
	s := string(got)
	for _, want := range []string{
		`d0_n0 [label="#0 foo\nreplays: 2\noutputs: 2 live, 0 dead"`,
		`d0_n1 [label="#1 fee\nreplays: 1\noutputs: 0 live, 1 dead"]`,
		`current node\nthis step: recorded" color="#1f6feb" penwidth=3 fillcolor="#fde68a"`,
		`d0_start -> d0_n0 [label="new root"`,
		`d0_n0 -> d0_n1 [label="path is recording\nexpects (0,0) a dead"]`,
		`d0_n0 -> d0_n2 [label="no existing recording passed its invariants\n#1: expected dead indices before graph are live:\n  (0,0) a"`,
		`subgraph cluster_dev0`,
		`subgraph cluster_legend`,
		`<TD STYLE="rounded" BGCOLOR="#fde68a">this step: recorded</TD>`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("DOT lacks %q:\n%s", want, s)
		}
	}
	// Every run gives the same bytes: no map order leaks into the output.
	for i := 0; i < 20; i++ {
		again, err := TreeDOT(handState(), TreeOptions{StepAction: StepRecorded, StepNode: 2})
		if err != nil || !bytes.Equal(again, got) {
			t.Fatalf("run %d differs (err %v)", i, err)
		}
	}
}

// nodeLine matches the line that declares a graph node of device 0.
var nodeLine = regexp.MustCompile(`(?m)^\t\td0_n\d+ \[label=`)

func TestTreeDOTLimit(t *testing.T) {
	st := bigState(5000)
	tests := []struct {
		name    string
		opts    TreeOptions
		wantErr string
		nodes   int
	}{
		{"default limit", TreeOptions{}, "tree has 5,000 nodes; over the limit of 2,000: export a subtree with --node ID or raise --max-nodes", 0},
		{"low limit", TreeOptions{MaxNodes: 10}, "tree has 5,000 nodes; over the limit of 10: export a subtree with --node ID or raise --max-nodes", 0},
		{"raised limit", TreeOptions{MaxNodes: 5000}, "", 5000},
		// In a 5,000-node heap, node 1's subtree has 1+2+...+1024 nodes on
		// full levels and 905 on the last: 2,952, still too many.
		{"subtree over", TreeOptions{Subtree: true, Root: 1}, "tree has 2,952 nodes; over the limit of 2,000: export a subtree with --node ID or raise --max-nodes", 0},
		// Node 7's: 1+2+...+256 on full levels and 512 on the last.
		{"subtree under", TreeOptions{Subtree: true, Root: 7}, "", 1023},
		{"negative limit", TreeOptions{MaxNodes: -1}, "render: tree: node limit -1: want a positive number, or 0 for the default", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := TreeDOT(st, tc.opts)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n := len(nodeLine.FindAll(got, -1)); n != tc.nodes {
				t.Errorf("%d graph nodes drawn, want %d", n, tc.nodes)
			}
		})
	}
}

func TestTreeDOTSubtree(t *testing.T) {
	tests := []struct {
		name    string
		opts    TreeOptions
		want    []string // graph nodes drawn
		wantErr string
	}{
		{"root", TreeOptions{Subtree: true, Root: 0}, []string{"d0_n0 ", "d0_n1 ", "d0_n2 "}, ""},
		{"leaf", TreeOptions{Subtree: true, Root: 1}, []string{"d0_n1 "}, ""},
		{"missing node", TreeOptions{Subtree: true, Root: 9}, nil, "render: tree: device 0 has no node #9 (it has 3 nodes)"},
		{"missing device", TreeOptions{Subtree: true, Device: 3, Root: 0}, nil, "render: tree: no device 3 (the state has 1)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := TreeDOT(handState(), tc.opts)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var drawn []string
			for _, id := range []string{"d0_n0 ", "d0_n1 ", "d0_n2 "} {
				if strings.Contains(string(got), "\t\t"+id+"[label=") {
					drawn = append(drawn, id)
				}
			}
			if strings.Join(drawn, ",") != strings.Join(tc.want, ",") {
				t.Errorf("drew %q, want %q", drawn, tc.want)
			}
			// The subtree's root hangs from the start point, with its cause.
			root := "d0_n" + string(rune('0'+tc.opts.Root))
			if !strings.Contains(string(got), "d0_start -> "+root+" ") {
				t.Errorf("subtree root %s is not attached to the start point:\n%s", root, got)
			}
		})
	}
}

func TestTreeDOTMalformed(t *testing.T) {
	dup := handState()
	dup.Devices[0].Nodes[1].ID = 0
	badChild := handState()
	badChild.Devices[0].Nodes[0].Children = []int{1, 7}
	cycle := handState()
	cycle.Devices[0].Nodes[2].Children = []int{0}
	tests := []struct {
		name    string
		st      *engine.State
		opts    TreeOptions
		wantErr string
	}{
		{"nil state", nil, TreeOptions{}, "render: tree: no state"},
		{"bad rankdir", handState(), TreeOptions{RankDir: "XY"}, `render: tree: rank direction "XY": want TB or LR`},
		{"duplicate id", dup, TreeOptions{}, "render: tree: device 0 lists node #0 twice"},
		{"missing child", badChild, TreeOptions{Subtree: true, Root: 0}, "render: tree: device 0: node #0 lists child #7, which does not exist"},
		{"cycle is drawn once", cycle, TreeOptions{Subtree: true, Root: 0}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := TreeDOT(tc.st, tc.opts)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || err.Error() != tc.wantErr {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// escapeState has one node whose function name holds every character that
// means something to DOT, records or XML.
func escapeState() *engine.State {
	st := handState()
	st.Devices[0].Nodes[0].Fn = `a"b\c<d>`
	st.Devices[0].Nodes[0].Outputs[0].Tensor = "x\ny"
	st.Devices[0].Nodes[1].ExpectedDeadBefore = []engine.OutputIndex{{Depth: 0, Index: 0}}
	return st
}

func TestTreeDOTEscaping(t *testing.T) {
	dot, err := TreeDOT(escapeState(), TreeOptions{Title: `trace "q" \ end`})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`label="#0 a\"b\\c<d>\nreplays: 2`,
		`expects (0,0) x\\ny dead`,
		`label="trace \"q\" \\ end\lCUDAGraph tree`,
	} {
		if !strings.Contains(string(dot), want) {
			t.Errorf("DOT lacks %q:\n%s", want, dot)
		}
	}
	svg, err := SVG(t.Context(), dot)
	if err != nil {
		t.Fatal(err)
	}
	_, _, texts := svgCounts(t, svg)
	for _, want := range []string{`#0 a"b\c<d>`, `expects (0,0) x\ny dead`, `trace "q" \ end`} {
		found := false
		for _, tx := range texts {
			found = found || tx == want
		}
		if !found {
			t.Errorf("SVG has no text %q; texts: %q", want, texts)
		}
	}
}

func TestEscLine(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{`q"`, `q\"`},
		{`b\`, `b\\`},
		{`\E`, `\\E`},
		{"tab\there", `tab\\there`},
		{"bad\xffutf8", "bad\uFFFDutf8"},
	}
	for _, tc := range tests {
		if got := escLine(tc.in); got != tc.want {
			t.Errorf("escLine(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestShort(t *testing.T) {
	tests := []struct{ in, want string }{
		{"foo", "foo"},
		{strings.Repeat("x", 48), strings.Repeat("x", 48)},
		{strings.Repeat("é", 49), strings.Repeat("é", 47) + "…"},
	}
	for _, tc := range tests {
		if got := short(tc.in); got != tc.want {
			t.Errorf("short(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 2000: "2,000", 1234567: "1,234,567", -5000: "-5,000"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestTreeOneDeviceAndLinks checks OneDevice (one device's whole tree) and
// NodeLinks (each node linked to its row of a page).
func TestTreeOneDeviceAndLinks(t *testing.T) {
	tests := []struct {
		name      string
		st        *engine.State
		opts      TreeOptions
		want, not []string
		err       string
	}{
		{"links", handState(), TreeOptions{NodeLinks: "#n-"},
			[]string{`d0_n0 [label=`, `URL="#n-d0-0"`, `URL="#n-d0-2"`}, nil, ""},
		{"no links by default", handState(), TreeOptions{}, nil, []string{"URL="}, ""},
		{"a link that needs quoting is left out", handState(), TreeOptions{NodeLinks: `#"x`}, nil, []string{"URL="}, ""},
		{"one device", warmState(), TreeOptions{OneDevice: true, Device: 1}, []string{"cluster_dev1"}, []string{"cluster_dev0"}, ""},
		{"one missing device", handState(), TreeOptions{OneDevice: true, Device: 3}, nil, nil, "no device 3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dot, err := TreeDOT(tc.st, tc.opts)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(dot), w) {
					t.Errorf("DOT lacks %q", w)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(string(dot), w) {
					t.Errorf("DOT has %q", w)
				}
			}
		})
	}
}

// TestTreeDOTOrigin: an edge says what the engine knows beyond the cause,
// as the log and the report do (a resume function after a graph break, a
// backward, a recompile), wrapped narrow; a def's first recording adds
// nothing to the edge.
func TestTreeDOTOrigin(t *testing.T) {
	st := handState()
	nodes := st.Devices[0].Nodes
	nodes[0].Origin = &engine.Origin{First: true, Compile: 1, Shapes: [][]int{{4}}}
	nodes[1].Origin = &engine.Origin{Prev: &engine.PrevCall{Line: 19, Fn: "foo", Node: 0, SameInvocation: true}}
	nodes[2].Origin = &engine.Origin{Backward: true, Forward: "foo", ForwardNode: 0}
	got, err := TreeDOT(st, TreeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := string(got)
	for _, want := range []string{
		`d0_start -> d0_n0 [label="new root"`,
		`d0_n0 -> d0_n1 [label="path is recording\na graph after a graph break in foo,\nin the same invocation\nexpects (0,0) a dead"]`,
		`d0_n0 -> d0_n2 [label="no existing recording passed its invariants\nthe backward of foo (#0)\n#1:`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("DOT lacks %q:\n%s", want, s)
		}
	}
}

func TestWrapWords(t *testing.T) {
	tests := []struct {
		s    string
		w    int
		want []string
	}{
		{"", 10, nil},
		{"one", 10, []string{"one"}},
		{"one two three", 7, []string{"one two", "three"}},
		{"a longwordthatdoesnotfit b", 5, []string{"a", "longwordthatdoesnotfit", "b"}},
		{"  spaced   out  ", 20, []string{"spaced out"}},
	}
	for _, tt := range tests {
		if got := wrapWords(tt.s, tt.w); !slices.Equal(got, tt.want) {
			t.Errorf("wrapWords(%q, %d) = %q, want %q", tt.s, tt.w, got, tt.want)
		}
	}
}
