package render

import (
	"strings"
	"testing"
)

func TestNodeGraphDOT(t *testing.T) {
	tests := []struct {
		name    string
		dev     int
		node    int
		gpu     string
		golden  string
		wantErr string
	}{
		{"foo: copied input, two kernels", 0, 0, "", "node-foo.dot", ""},
		{"fee: managed input, one kernel", 0, 2, "", "node-fee.dot", ""},
		{"empty graph", 0, 1, "", "node-empty.dot", ""},
		{"missing node", 0, 5, "", "", "render: node graph: device 0 has no node #5 (it has 3 nodes)"},
		{"missing device", 2, 0, "", "", "render: node graph: no device 2 (the state has 1)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NodeGraphDOT(handState(), tc.dev, tc.node, tc.gpu)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tc.golden, got)
			svg, err := SVG(t.Context(), got)
			if err != nil {
				t.Fatalf("svg: %v", err)
			}
			st := handState()
			n := st.Devices[0].Nodes[tc.node]
			nodes, edges, _ := svgCounts(t, svg)
			wantNodes := len(n.Inputs) + len(n.Outputs) + len(n.Kernels)
			if len(n.Kernels) == 0 {
				wantNodes++ // the "empty graph" note
			}
			if nodes != wantNodes {
				t.Errorf("SVG has %d nodes, want %d", nodes, wantNodes)
			}
			// Capture-order edges plus one data edge per input read and per
			// output written (every operand of the hand state is matched).
			if wantEdges := strings.Count(string(got), "->"); edges != wantEdges {
				t.Errorf("SVG has %d edges, DOT %d", edges, wantEdges)
			}
		})
	}
}

func TestNodeGraphDOTPassThrough(t *testing.T) {
	gpu := "digraph dot {\n\tsubgraph cluster_1 { \"graph_1_node_0\"[shape=\"record\" label=\"{KERNEL}\"]; }\n}"
	got, err := NodeGraphDOT(handState(), 0, 0, gpu)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != gpu+"\n" {
		t.Errorf("the driver's DOT was changed:\n%s", got)
	}
	if _, err := NodeGraphDOT(handState(), 0, 9, gpu); err == nil {
		t.Error("a missing node is accepted when gpu DOT is given")
	}
}

func TestNodeGraphDOTDataEdges(t *testing.T) {
	got, err := NodeGraphDOT(handState(), 0, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"\tin0 -> graph_0_node_0 [style=dashed];\n",
		"\tin0 -> graph_0_node_1 [style=dashed];\n",
		"\tgraph_0_node_0 -> out0 [style=dashed];\n",
		"\tgraph_0_node_1 -> out1 [style=dashed];\n",
		"\t\tgraph_0_node_0 -> graph_0_node_1;\n",
		`label="{KERNEL | {ID | 0 | add} | {out=0x7f0000000200 | a=0x7f0000000000 | b=1 | n=4}}"`,
	} {
		if !strings.Contains(string(got), want) {
			t.Errorf("DOT lacks %q:\n%s", want, got)
		}
	}
}

func TestNodeGraphDOTEscaping(t *testing.T) {
	st := escapeState()
	n := &st.Devices[0].Nodes[0]
	n.Kernels[0].Name = `k{|}<x>"\`
	n.Kernels[0].Detail = `out=0x7f0000000200 a=0x7f0000000000 note=a|b{c}`
	n.Inputs[0].Name = `in"put\`
	dot, err := NodeGraphDOT(st, 0, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`CUDA graph of #0 a\"b\\c<d> on device 0`,
		`{ID | 0 | k\{\|\}\<x\>\"\\}`,
		`note=a\|b\{c\}`,
		`input 0: in\"put\\`,
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
	for _, want := range []string{`CUDA graph of #0 a"b\c<d> on device 0`, `k{|}<x>"\`, `note=a|b{c}`, `input 0: in"put\`} {
		found := false
		for _, tx := range texts {
			found = found || tx == want
		}
		if !found {
			t.Errorf("SVG has no text %q; texts: %q", want, texts)
		}
	}
}
