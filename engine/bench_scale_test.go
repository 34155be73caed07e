package engine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cgtviz/cgtviz/engine/device/sim"
	"github.com/cgtviz/cgtviz/traces"
)

// bigTreeTrace is a trace whose tree grows to n root nodes (one def called
// with n input shapes, each its own FunctionID), then replays them round
// robin for replays more calls: a model with many graphs at steady state.
func bigTreeTrace(tb testing.TB, n, replays int) *traces.Trace {
	var b strings.Builder
	b.WriteString(`{"cgtviz": 1}` + "\n")
	b.WriteString(`{"op": "def", "fn": "f", "params": ["x"], "body": [{"out": "y", "k": "add", "a": "x", "b": 1}], "returns": ["y"]}` + "\n")
	shape := func(i int) string { return fmt.Sprintf("[%d, %d]", 2+i%100, 2+i/100) }
	call := func(i int) {
		fmt.Fprintf(&b, `{"op": "tensor", "name": "x", "shape": %s, "init": "zeros"}`+"\n", shape(i))
		b.WriteString(`{"op": "step"}` + "\n")
		b.WriteString(`{"op": "call", "fn": "f", "args": ["x"], "out": ["y"]}` + "\n")
	}
	for i := 0; i < n; i++ {
		call(i) // warmup
		call(i) // record
	}
	for r := 0; r < replays; r++ {
		call(r % n)
	}
	tr, err := traces.Read(strings.NewReader(b.String()), "bigtree")
	if err != nil {
		tb.Fatal(err)
	}
	return tr
}

// BenchmarkRunTreeSize is the engine's records/s over a whole run whose tree
// grows to 10 ... 10,000 nodes, and the replays after it: the cost of a
// record should not grow with the tree.
func BenchmarkRunTreeSize(b *testing.B) {
	for _, n := range []int{10, 100, 1000, 10000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			tr := bigTreeTrace(b, n, 20000)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				e, err := New(tr.Header, Options{Devices: sim.Devices(1)})
				if err != nil {
					b.Fatal(err)
				}
				for j := range tr.Records {
					if s := e.Apply(&tr.Records[j]); s.Err != nil {
						b.Fatal(s.Err)
					}
				}
				if got := len(e.devs[0].m.nodes); got < n {
					b.Fatalf("%d nodes, want at least %d", got, n)
				}
			}
			b.ReportMetric(float64(len(tr.Records)*b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
