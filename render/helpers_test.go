package render

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cgtviz/cgtviz/tools/golden"

	"github.com/cgtviz/cgtviz/engine"
)

// checkGolden compares got with testdata/name, or rewrites it under -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", name), got)
}

// svgCounts parses svg as XML and counts Graphviz's node and edge groups
// (<g class="node"> and <g class="edge">). It also returns every text
// element's content, decoded.
func svgCounts(t *testing.T, svg []byte) (nodes, edges int, texts []string) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(svg))
	// Graphviz's SVG declares a DOCTYPE with an external DTD; the decoder
	// only needs to be strict about structure.
	dec.Strict = true
	inText := false
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("svg is not well-formed XML: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			if el.Name.Local == "g" {
				for _, a := range el.Attr {
					if a.Name.Local == "class" && a.Value == "node" {
						nodes++
					}
					if a.Name.Local == "class" && a.Value == "edge" {
						edges++
					}
				}
			}
			inText = el.Name.Local == "text"
		case xml.CharData:
			if inText {
				texts = append(texts, string(el))
			}
		case xml.EndElement:
			inText = false
		}
	}
	return nodes, edges, texts
}

// handState is a state shaped like seed A after its checkpoint: foo's root
// #0 with two fee children, the second recorded because the first expected
// foo's output a dead while a was live. The current path is #0 → #2.
func handState() *engine.State {
	out := func(i int, ptr uint64, live bool, name string) engine.OutputView {
		return engine.OutputView{Index: i, Ptr: ptr, Shape: []int{4}, Bytes: 16, Live: live, Tensor: name}
	}
	return &engine.State{
		Step: 33, Generation: 4, MarkSteps: 4,
		Devices: []engine.DeviceState{{
			Index: 0, Name: "sim", Current: 2, Path: []int{0, 2}, PathState: engine.PathRecording,
			Checkpoints: 1, Roots: []int{0},
			Nodes: []engine.NodeView{
				{
					ID: 0, Fn: "foo", Parent: -1, Children: []int{1, 2}, Cause: engine.CauseNewRoot, Replays: 2,
					RecordedAtLine: 15, OnPath: true,
					Inputs: []engine.InputView{{Index: 0, Name: "inp", Kind: engine.InputCopied, Ptr: 0x7f0000000000, Shape: []int{4}}},
					Outputs: []engine.OutputView{
						out(0, 0x7f0000000200, true, "a"), out(1, 0x7f0000000400, true, "b"),
					},
					Kernels: []engine.KernelView{
						{Kind: "kernel", Name: "add", Detail: "out=0x7f0000000200 a=0x7f0000000000 b=1 n=4"},
						{Kind: "kernel", Name: "add", Detail: "out=0x7f0000000400 a=0x7f0000000000 b=2 n=4"},
					},
				},
				{
					ID: 1, Fn: "fee", Parent: 0, Depth: 1, Cause: engine.CauseRecordingPath, Replays: 1,
					RecordedAtLine: 18, ExpectedDeadBefore: []engine.OutputIndex{{Depth: 0, Index: 0}},
					Outputs: []engine.OutputView{out(0, 0x7f0000000200, false, "")},
				},
				{
					ID: 2, Fn: "fee", Parent: 0, Depth: 1, Cause: engine.CauseInvariants, RecordedAtLine: 33,
					OnPath: true, Current: true,
					Failures: []engine.InvariantFailure{{
						Node: 1, Status: engine.StatusExpectedDeadIndicesBeforeGraphMismatch, Input: -1,
						Outputs: []engine.OutputIndex{{Depth: 0, Index: 0}}, OutputNames: []string{"a"},
					}},
					Inputs:  []engine.InputView{{Index: 0, Name: "b", Kind: engine.InputManaged, Ptr: 0x7f0000000400, Shape: []int{4}}},
					Outputs: []engine.OutputView{out(0, 0x7f0000000600, true, "out")},
					Kernels: []engine.KernelView{{Kind: "kernel", Name: "mul", Detail: "out=0x7f0000000600 a=0x7f0000000400 b=4 n=4"}},
				},
			},
		}},
	}
}

// warmState is a state during warmup on two devices: device 0 warmed foo
// then fee (a chain of two warmup nodes), device 1 has nothing yet.
func warmState() *engine.State {
	return &engine.State{
		Step: 7, Generation: 1, MarkSteps: 1,
		Devices: []engine.DeviceState{
			{
				Index: 0, Name: "sim", Current: -1, CurrentWarmup: -2, PathState: engine.PathWarmup,
				Warmups: []engine.WarmupView{
					{ID: -1, Fn: "foo", Line: 6, Parent: engine.NoParent, Outputs: []engine.OutputView{{Index: 0, Live: false}, {Index: 1, Live: true, Tensor: "b"}}},
					{ID: -2, Fn: "fee", Line: 9, Parent: -1, Outputs: []engine.OutputView{{Index: 0, Live: true}}},
				},
			},
			{Index: 1, Name: "sim", Current: -1},
		},
	}
}

// bigState is a complete binary tree of n nodes on one device, the path
// running down the leftmost branch.
func bigState(n int) *engine.State {
	nodes := make([]engine.NodeView, n)
	for i := range nodes {
		p := (i - 1) / 2
		if i == 0 {
			p = -1
		}
		nodes[i] = engine.NodeView{
			ID: i, Fn: "fn" + strings.Repeat("x", i%5), Parent: p, Replays: i % 7,
			Cause:   engine.CauseFirstChild,
			Outputs: []engine.OutputView{{Index: 0, Live: i%2 == 0}, {Index: 1, Live: true}},
		}
		if i == 0 {
			nodes[i].Cause = engine.CauseNewRoot
		}
		for _, c := range []int{2*i + 1, 2*i + 2} {
			if c < n {
				nodes[i].Children = append(nodes[i].Children, c)
			}
		}
	}
	cur := 0
	for c := 1; c < n; c = 2*c + 1 {
		nodes[cur].OnPath = true
		cur = c
	}
	nodes[cur].OnPath, nodes[cur].Current = true, true
	for i := range nodes {
		if i > 0 {
			nodes[i].Depth = nodes[(i-1)/2].Depth + 1
		}
	}
	return &engine.State{Step: n, Devices: []engine.DeviceState{{Index: 0, Name: "sim", Current: cur, Roots: []int{0}, Nodes: nodes}}}
}
