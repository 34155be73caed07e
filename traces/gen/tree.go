package gen

import (
	"fmt"

	"github.com/cgtviz/cgtviz/traces"
)

// TreeTrace is a trace whose tree grows to at least n root nodes (one def
// called with n input shapes, each its own FunctionID: a warmup, then a
// recording), then replays them round robin for replays more calls: a
// model with many graphs at steady state, for the benchmarks and tests of
// big trees.
func TreeTrace(n, replays int) *traces.Trace {
	b := traces.NewBuilder(fmt.Sprintf("tree of %d nodes", n)).
		Def("f", []string{"x"}, []string{"y"}, traces.S("y", "add", "x", 1.0))
	growThenReplay(n, replays, func(i int) {
		b.Tensor("x", []int{2 + i%100, 2 + i/100}, traces.InitZeros).Step().Call("f", []string{"x"}, "y")
	})
	return b.Trace()
}

// DefsTrace is TreeTrace with n defs (f0 ... fn-1, each its own FunctionID
// and root node) called on a fresh input of the same 4x4 floats: every
// node moves the same data, so that a rate at n nodes against the rate at
// 10 measures the tree's size alone (TreeTrace's growing shapes move 500x
// more data a call at 10,000 nodes than at 10).
func DefsTrace(n, replays int) *traces.Trace {
	b := traces.NewBuilder(fmt.Sprintf("tree of %d nodes, fixed inputs", n))
	for i := 0; i < n; i++ {
		b.Def(fmt.Sprintf("f%d", i), []string{"x"}, []string{"y"}, traces.S("y", "add", "x", float64(i%7+1)))
	}
	growThenReplay(n, replays, func(i int) {
		b.Tensor("x", []int{4, 4}, traces.InitOnes).Step().Call(fmt.Sprintf("f%d", i), []string{"x"}, "y")
	})
	return b.Trace()
}

// growThenReplay makes call i twice for each of n nodes (a warmup, then a
// recording), then replays calls round robin.
func growThenReplay(n, replays int, call func(i int)) {
	for i := 0; i < n; i++ {
		call(i) // warmup
		call(i) // record
	}
	for r := 0; r < replays; r++ {
		call(r % n)
	}
}
