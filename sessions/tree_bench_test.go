package sessions

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/engine/device/sim"
	"github.com/cgtviz/cgtviz/traces/gen"
)

// BenchmarkKeyframeBytes measures what one keyframe (an engine clone)
// costs in host memory at a tree of 10 ... 10,000 nodes, against what
// SnapshotBytes says it costs on the device: the heap held by 20 clones,
// per clone and per node.
func BenchmarkKeyframeBytes(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			tr := gen.TreeTrace(n, 0)
			e, err := engine.New(tr.Header, engine.Options{Devices: sim.Devices(1)})
			if err != nil {
				b.Fatal(err)
			}
			for i := range tr.Records {
				e.Apply(&tr.Records[i])
			}
			nodes := e.Counters().Recordings
			var per float64
			for b.Loop() {
				before := heap()
				clones := make([]*engine.Engine, 20)
				for i := range clones {
					if clones[i], err = e.Clone(); err != nil {
						b.Fatal(err)
					}
				}
				per = float64(heap()-before) / float64(len(clones))
				runtime.KeepAlive(clones)
			}
			b.ReportMetric(per, "host-bytes/keyframe")
			b.ReportMetric(per/float64(max(nodes, 1)), "host-bytes/node")
			b.ReportMetric(float64(e.SnapshotBytes()), "device-bytes/keyframe")
			b.ReportMetric(float64(nodes), "nodes")
		})
	}
}
