package engine_test

import (
	"testing"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/engine/alloc"
	"github.com/cgtviz/cgtviz/traces"
)

// TestEmptyCache: an empty_cache record (torch.cuda.empty_cache()) gives
// back the default pool's free cached segments, and only those: a tree's
// live pool, and a live eager tensor's segment, stay reserved. On the GPU
// too (CGTVIZ_DEVICE=cuda): the segments freed are the device's.
func TestEmptyCache(t *testing.T) {
	tr := traces.NewBuilder("empty_cache").
		Def("f", []string{"x"}, []string{"y"}, traces.S("y", "add", "x", 1.0)).
		Tensor("big", []int{1 << 20}, traces.InitZeros).
		Tensor("x", []int{4}, traces.InitZeros).
		Call("f", []string{"x"}, "y0").
		Call("f", []string{"x"}, "y1").
		Del("big").
		EmptyCache().
		Trace()
	e, err := engine.New(tr.Header, engine.Options{Devices: simDevices(1)})
	if err != nil {
		t.Fatal(err)
	}
	a := e.Allocator(0)
	reserved := func(id alloc.PoolID) int64 { return a.PoolStats(id).ReservedBytes[alloc.Aggregate].Current }
	var graphPools []alloc.PoolID
	var before, graphBefore int64
	var msg string
	for i := range tr.Records {
		if tr.Records[i].Op == traces.OpEmptyCache {
			before = reserved(alloc.DefaultPool)
			for _, id := range a.Pools() {
				if id != alloc.DefaultPool {
					graphPools = append(graphPools, id)
					graphBefore += reserved(id)
				}
			}
		}
		s := e.Apply(&tr.Records[i])
		if s.Err != nil {
			t.Fatalf("record %d: %v", i, s.Err)
		}
		if tr.Records[i].Op == traces.OpEmptyCache {
			msg = eventText(s, engine.EvEmptyCache)
		}
	}
	// What --log, the report and the TUI say of it: the 4 MiB tensor's
	// 20 MiB segment (c10's large-buffer rounding) back to the driver, x's
	// 2 MiB small segment and the tree's 2 MiB pool kept.
	want := "device 0: torch.cuda.empty_cache() gave 1 cached segment(s), 20.00 MiB, back to the driver; 4.00 MiB stay reserved, 2.00 MiB of them the graphs' private pools (released only with their trees)"
	if msg != want {
		t.Errorf("the empty_cache event says %q\nwant %q", msg, want)
	}
	after := reserved(alloc.DefaultPool)
	if before < 4<<20 || after >= before || after == 0 {
		t.Errorf("default pool reserved %d before empty_cache, %d after: want the 4 MiB tensor's segment given back and x's kept", before, after)
	}
	var graphAfter int64
	for _, id := range graphPools {
		graphAfter += reserved(id)
	}
	if len(graphPools) == 0 || graphBefore == 0 || graphAfter != graphBefore {
		t.Errorf("graph pools %v reserved %d before, %d after: want the live tree's pool kept", graphPools, graphBefore, graphAfter)
	}
}

// eventText is the Msg of the step's first event of kind k ("" without one).
func eventText(s *engine.Step, k engine.EventKind) string {
	for _, ev := range s.Events {
		if ev.Kind == k {
			return ev.Msg
		}
	}
	return ""
}
