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
	call := func(i int) {
		b.Tensor("x", []int{2 + i%100, 2 + i/100}, traces.InitZeros).Step().Call("f", []string{"x"}, "y")
	}
	for i := 0; i < n; i++ {
		call(i) // warmup
		call(i) // record
	}
	for r := 0; r < replays; r++ {
		call(r % n)
	}
	return b.Trace()
}
