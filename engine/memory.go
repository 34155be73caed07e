package engine

import "github.com/cgtviz/cgtviz/engine/alloc"

// MemoryView is one device's memory figures now: what a chart of memory
// over a run samples. Memory reads them without building a State (which
// copies the whole tree), so a run can sample them every few records.
type MemoryView struct {
	// ReservedBytes and AllocatedBytes are the whole caching allocator's
	// (torch.cuda.memory_stats(): every pool, private ones included).
	ReservedBytes, AllocatedBytes int64
	// PoolReservedBytes and PoolAllocatedBytes are the tree's private
	// graph pool's share.
	PoolReservedBytes, PoolAllocatedBytes int64
	// InvisibleBytes are live but invisible: live replay outputs in the
	// graph pool, whose memory the allocator believes free (PyTorch builds
	// them with no deleter), each storage once. A recording or warmup now
	// could be handed that memory; checkpoints exist for it.
	InvisibleBytes int64
}

// Memory returns device dev's memory figures now (the zero view for a
// device the engine does not have). Its cost is one pass over the
// storages, none over the tree.
func (e *Engine) Memory(dev int) MemoryView {
	if dev < 0 || dev >= len(e.devs) {
		return MemoryView{}
	}
	ds := e.devs[dev]
	st, ps := ds.alloc.Stats(), ds.alloc.PoolStats(ds.m.pool)
	mv := MemoryView{
		ReservedBytes: st.ReservedBytes[alloc.Aggregate].Current, AllocatedBytes: st.AllocatedBytes[alloc.Aggregate].Current,
		PoolReservedBytes: ps.ReservedBytes[alloc.Aggregate].Current, PoolAllocatedBytes: ps.AllocatedBytes[alloc.Aggregate].Current,
	}
	for _, s := range e.tt.storages.all() {
		// A storage is live while a live tensor views it (Refs); a replay
		// output owns nothing, a parameter is not the pool's.
		if s.Dev == dev && s.Refs > 0 && s.Pool == poolGraph && !s.Owned && !s.Param && !s.Stale {
			mv.InvisibleBytes += s.Bytes
		}
	}
	return mv
}
