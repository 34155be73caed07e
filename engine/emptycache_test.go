package engine

import (
	"testing"

	"github.com/cgtviz/cgtviz/engine/alloc"
	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/engine/device/sim"
	"github.com/cgtviz/cgtviz/traces"
)

// TestEmptyCache: an empty_cache record (torch.cuda.empty_cache()) gives
// back the default pool's free cached segments, and only those: a tree's
// live pool, and a live eager tensor's segment, stay reserved.
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
	e, err := New(tr.Header, Options{Devices: []device.Device{sim.New(sim.Options{})}})
	if err != nil {
		t.Fatal(err)
	}
	a := e.Allocator(0)
	reserved := func(id alloc.PoolID) int64 { return a.PoolStats(id).ReservedBytes[alloc.Aggregate].Current }
	var graphPools []alloc.PoolID
	var before, graphBefore int64
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
		if s := e.Apply(&tr.Records[i]); s.Err != nil {
			t.Fatalf("record %d: %v", i, s.Err)
		}
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
