package traces

import (
	"bytes"
	"fmt"
	"testing"
)

// scaleTrace returns a trace shaped as tools/scalegen writes it: nodes
// defs of one add each, one input, a warmup and a recording call of each
// def after a step, then round robin a step and a call of each def, until
// records records. Every call of the steady state is a different line from
// the one before, among nodes distinct call lines.
func scaleTrace(nodes, records int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "{\"cgtviz\": 1, \"name\": \"scale: %d nodes\"}\n", nodes)
	n := 0
	line := func(format string, args ...any) {
		if n < records {
			fmt.Fprintf(&b, format+"\n", args...)
			n++
		}
	}
	for i := range nodes {
		line(`{"op": "def", "fn": "f%d", "params": ["x"], "body": [{"out": "y", "k": "add", "a": "x", "b": %d}], "returns": ["y"]}`, i, i%7+1)
	}
	line(`{"op": "tensor", "name": "x", "shape": [256], "init": "rand", "seed": 1}`)
	for i := range 2 * nodes {
		line(`{"op": "step"}`)
		line(`{"op": "call", "fn": "f%d", "args": ["x"], "out": ["y"]}`, i/2)
	}
	for i := 0; n < records; i = (i + 1) % nodes {
		line(`{"op": "step"}`)
		line(`{"op": "call", "fn": "f%d", "args": ["x"], "out": ["y"]}`, i)
	}
	return b.Bytes()
}

// BenchmarkCheckScale checks the scale trace (issue 14) at 10 and 10,000
// defs: the checker's cost a record must not grow with the defs.
func BenchmarkCheckScale(b *testing.B) {
	const records = 500_000
	for _, nodes := range []int{10, 10_000} {
		data := scaleTrace(nodes, records)
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				ps, n := check(bytes.NewReader(data), "scale")
				if len(ps) > 0 {
					b.Fatal(Problems(ps).Error())
				}
				if n != records {
					b.Fatalf("%d records, want %d", n, records)
				}
			}
			b.ReportMetric(float64(records*b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
