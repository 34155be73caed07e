package engine

import (
	"fmt"

	"github.com/cgtviz/cgtviz/engine/alloc"
)

// emptyCache is torch.cuda.empty_cache() on one device: the allocator's
// release_cached_blocks, and an EvEmptyCache event saying what went back
// to the driver and what stays reserved. Users call it to "free memory"
// and then wonder why reserved memory did not fall: the tree's private
// pool, live while its graphs are, is not released, and the event says
// how much of what stays is that pool's.
func (e *Engine) emptyCache(ds *devState, line int) error {
	a := ds.alloc
	before := a.Stats()
	if err := a.EmptyCache(); err != nil {
		return err
	}
	after := a.Stats()
	cur := func(s alloc.StatArray) int64 { return s[alloc.Aggregate].Current }
	segs := cur(before.Segment) - cur(after.Segment)
	freed := cur(before.ReservedBytes) - cur(after.ReservedBytes)
	var graphs int64
	for _, id := range a.Pools() {
		if id != alloc.DefaultPool {
			graphs += cur(a.PoolStats(id).ReservedBytes)
		}
	}
	msg := fmt.Sprintf("device %d: torch.cuda.empty_cache() gave %d cached segment(s), %s, back to the driver; %s stay reserved",
		ds.index, segs, alloc.FormatSize(freed), alloc.FormatSize(cur(after.ReservedBytes)))
	if graphs > 0 {
		msg += fmt.Sprintf(", %s of them the graphs' private pools (released only with their trees)", alloc.FormatSize(graphs))
	}
	e.emit(Event{Kind: EvEmptyCache, Line: line, Node: -1, Parent: -1, Device: ds.index, Msg: msg})
	return nil
}
