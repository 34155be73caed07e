package ui

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/cgtviz/cgtviz/engine"
)

// bigState builds by hand a state with nodes graph nodes (a 4-ary tree,
// the current path down its last branch) and blocks pool blocks in
// segments of 500, in every block state, with a tensor per live block.
func bigState(nodes, blocks int) *engine.State {
	st := &engine.State{Step: 1, Generation: 3}
	ds := engine.DeviceState{Index: 0, Name: "sim", Current: nodes - 1, PathState: engine.PathExecution}
	ds.Nodes = make([]engine.NodeView, nodes)
	for i := range ds.Nodes {
		n := &ds.Nodes[i]
		n.ID, n.Fn, n.Parent, n.Replays = i, fmt.Sprintf("fn%d", i%37), -1, i%5
		n.Cause = engine.CauseFirstChild
		n.Inputs = []engine.InputView{{Index: 0, Name: "x", Kind: engine.InputManaged, Ptr: 0x7f0000000000, Shape: []int{4}}}
		n.Outputs = []engine.OutputView{{Index: 0, Ptr: 0x7f0000000200, Shape: []int{4}, Bytes: 16, Live: true, Tensor: "y"}}
		n.Kernels = []engine.KernelView{{Kind: "kernel", Name: "add"}}
		if i > 0 {
			n.Parent = (i - 1) / 4
			p := &ds.Nodes[n.Parent]
			p.Children = append(p.Children, i)
			n.Depth = p.Depth + 1
		}
	}
	ds.Roots = []int{0}
	for id := nodes - 1; id >= 0; id = ds.Nodes[id].Parent {
		ds.Nodes[id].OnPath = true
		ds.Path = append([]int{id}, ds.Path...)
		if ds.Nodes[id].Parent < 0 {
			break
		}
	}
	ds.Nodes[nodes-1].Current = true
	addr := uint64(0x7f0000000000)
	for b := 0; b < blocks; b += 500 {
		seg := engine.SegmentView{Addr: addr, Size: 2 << 20, Small: true}
		for j := 0; j < 500 && b+j < blocks; j++ {
			bv := engine.BlockView{Addr: addr + uint64(j)*4096, Size: 4096, State: engine.BlockState(j % 5)}
			bv.Allocated = bv.State == engine.BlockAllocated || bv.State == engine.BlockUnowned
			if bv.State == engine.BlockAllocated || bv.State == engine.BlockLiveInvisible {
				name := fmt.Sprintf("t%d", b+j)
				bv.Tensors = []string{name}
				st.Tensors = append(st.Tensors, engine.TensorView{ID: b + j, Names: []string{name}, Shape: []int{1024},
					Ptr: bv.Addr, Bytes: 4096, Pool: "graph", State: engine.TensorLive})
			}
			bv.InCheckpoint = j%97 == 0
			seg.Blocks = append(seg.Blocks, bv)
		}
		ds.Pool.Segments = append(ds.Pool.Segments, seg)
		addr += 2 << 20
	}
	st.Devices = []engine.DeviceState{ds}
	return st
}

// BenchmarkStepRender is one step as the UI sees it (a new snapshot
// installed: the tree rebuilt, the trace summaries re-read) plus a full
// View, with a 5,000-node tree and 50,000 pool blocks, at 160x48. Two
// states alternate so that no layout is reused from the step before.
func BenchmarkStepRender(b *testing.B) {
	m := newModel(b, seedA, 160, 48, Options{Color: true})
	big := bigState(5000, 50_000)
	other := *big
	states := []*engine.State{big, &other}
	i := 0
	for b.Loop() {
		st := states[i%2]
		node := 4999 - i%100
		step := &engine.Step{Index: 5, Line: 7, Node: node, Parent: (node - 1) / 4, Action: engine.ActionReplay,
			Events: []engine.Event{{Kind: engine.EvReplay, Node: node, Fn: "fn"}}}
		m.Update(movedMsg{snap: snapshot{pos: 6, n: 40, state: st, step: step, ckptIdx: -1}})
		if v := m.View(); !strings.Contains(v.Content, "← replayed") {
			b.Fatal("the tree is not drawn")
		}
		i++
	}
}

// TestBigStateRender checks that a huge state renders within the screen:
// the benchmark's work is real drawing, not an error frame.
func TestBigStateRender(t *testing.T) {
	m := newModel(t, seedA, 160, 48, Options{})
	st := bigState(5000, 50_000)
	step := &engine.Step{Node: 4999, Parent: 1249, Action: engine.ActionReplay,
		Events: []engine.Event{{Kind: engine.EvReplay, Node: 4999}}}
	m.Update(movedMsg{snap: snapshot{pos: 6, n: 40, state: st, step: step, ckptIdx: -1}})
	got := screenText(m)
	for _, want := range []string{"#4999 fn4", "← replayed", "100 segments", "10000 live-invisible", "2.0 MiB small · 500 blocks"} {
		if !strings.Contains(got, want) {
			t.Errorf("screen lacks %q", want)
		}
	}
	if l, ok := m.tree.selected(); !ok || l.id != 4999 {
		t.Errorf("the tree does not select the replayed node: %+v", l)
	}
	if n := len(strings.Split(got, "\n")); n != 48 {
		t.Errorf("%d lines", n)
	}
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	press(t, m, "2", "end")
	if !strings.Contains(screenText(m), "default pool") {
		t.Error("end in the pool pane does not reach the default pool")
	}
}

// BenchmarkTimeline1M draws the timeline of a 1,000,000-record trace, all
// run, at 160 columns: what a frame costs after a step (other frames reuse
// the strip).
func BenchmarkTimeline1M(b *testing.B) {
	// Marks at random: no chunk repeats, the most a strip can cost (a
	// loop's repeating marks are read a period a chunk).
	var tl timeline
	r := rand.New(rand.NewPCG(1, 2))
	for range 1_000_000 {
		tl.marks.Push(mark(r.IntN(int(markError + 1))))
	}
	s := NewStyles(true)
	b.ReportAllocs()
	for b.Loop() {
		tl.draw(s, tl.marks.Len(), 160, 500_000)
	}
}
