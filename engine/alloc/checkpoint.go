package alloc

import (
	"fmt"
	"slices"

	"github.com/cgtviz/cgtviz/engine/device"
)

// BlockState is one block of a checkpointed segment (PyTorch's BlockState:
// no requested size, no history).
type BlockState struct {
	Addr      Ptr
	Size      int64
	Allocated bool
	Stream    device.Stream
}

// SegmentState is one checkpointed segment: its blocks in address order.
type SegmentState struct {
	Addr   Ptr
	Small  bool
	Stream device.Stream
	Blocks []BlockState
}

// PoolState is a private pool's checkpoint (PrivatePoolState). It is an
// immutable value: nothing changes it after GetCheckpointState returns it.
// Segments are in address order (PyTorch's are in hash-set order).
type PoolState struct {
	Pool     PoolID
	Segments []SegmentState
}

// Size is the sum of the checkpointed segments' sizes.
func (st *PoolState) Size() int64 {
	var n int64
	for _, s := range st.Segments {
		for _, b := range s.Blocks {
			n += b.Size
		}
	}
	return n
}

// Live returns the addresses of the blocks allocated in the checkpoint.
func (st *PoolState) Live() []Ptr {
	var out []Ptr
	for _, s := range st.Segments {
		for _, b := range s.Blocks {
			if b.Allocated {
				out = append(out, b.Addr)
			}
		}
	}
	return out
}

// DeltaBlock is one block a restore freed or allocated.
type DeltaBlock struct {
	Addr Ptr
	Size int64
	// LiveOwned (DataPtrsAllocd) says a live storage took the block; a
	// block without owner stays allocated until the caller frees it
	// (raw_delete).
	LiveOwned bool
	// Stale (PtrsFreed) says the pointer was among the stale storages
	// whose deleters were removed.
	Stale bool
	// Reallocated (PtrsFreed) says the restore allocated the same address
	// again.
	Reallocated bool
}

// CheckpointDelta is what SetCheckpointPoolState changed (PyTorch's
// CheckpointDelta): the blocks allocated before and freed, the blocks
// allocated by the restore. An address may be in both lists.
type CheckpointDelta struct {
	Pool           PoolID
	PtrsFreed      []DeltaBlock
	DataPtrsAllocd []DeltaBlock
}

// Unowned returns the addresses of the blocks the restore allocated that no
// live storage took: the caller must free them (raw_delete).
func (d *CheckpointDelta) Unowned() []Ptr {
	var out []Ptr
	for _, b := range d.DataPtrsAllocd {
		if !b.LiveOwned {
			out = append(out, b.Addr)
		}
	}
	return out
}

// privatePoolFor finds a private pool that may be checkpointed.
func (a *Allocator) privatePoolFor(id PoolID, what string) (*privatePool, error) {
	pp := a.pools[id]
	if pp == nil {
		return nil, fmt.Errorf("%s: could not find pool of id %v", what, id)
	}
	if pp.useCount == 0 {
		return nil, fmt.Errorf("%s: not expected to checkpoint freeable graph (pool %v)", what, id)
	}
	return pp, nil
}

// GetCheckpointState is getCheckpointState: the layout of every segment of
// a private pool, taken at the end of a recording.
func (a *Allocator) GetCheckpointState(id PoolID) (*PoolState, error) {
	pp, err := a.privatePoolFor(id, "getCheckpointState")
	if err != nil {
		return nil, err
	}
	// Counted first, so that the state is three allocations (the state,
	// its segments, and one array the segments' blocks share) instead of
	// one for every segment and every growth: a state is taken at every
	// recording, ~5 of a recorded node's allocations before.
	nSegs, nBlocks := 0, 0
	for _, s := range a.segs {
		if s.pool.owner != pp {
			continue
		}
		nSegs++
		for b := s.head; b != nil; b = b.next {
			nBlocks++
		}
	}
	st := &PoolState{Pool: id}
	if nSegs > 0 {
		st.Segments = make([]SegmentState, 0, nSegs)
	}
	blocks := make([]BlockState, 0, nBlocks)
	for _, s := range a.segs {
		if s.pool.owner != pp {
			continue
		}
		ss := SegmentState{Addr: s.base, Small: s.pool.small, Stream: s.stream}
		start := len(blocks)
		for b := s.head; b != nil; b = b.next {
			blocks = append(blocks, BlockState{Addr: b.ptr, Size: b.size, Allocated: b.allocated, Stream: b.stream})
		}
		if len(blocks) > start {
			// Capped, so that an append to one segment's blocks copies
			// instead of writing over the next segment's.
			ss.Blocks = blocks[start:len(blocks):len(blocks)]
		}
		st.Segments = append(st.Segments, ss)
	}
	a.trace.add(TraceEntry{Action: ActionCheckpoint, Marker: MarkerCheckpointState, Pool: id, Line: a.ctx.line, What: a.ctx.what})
	return st, nil
}

// SetCheckpointPoolState restores a private pool to a checkpoint, as
// _cuda_setCheckpointPoolState does: PyTorch's algorithm (free every
// allocated block of the pool; re-carve each checkpointed segment by
// allocating its blocks with forced splits; free the blocks not allocated
// in the checkpoint) plus the binding's checks. stale are the pointers of
// storages whose deleters are removed: they must cover every block freed
// and not allocated again. live are the pointers of the storages that get
// deleters back: a re-allocated block at one of them is LiveOwned, the
// others stay allocated without owner, for the caller to Free.
//
// Everything is checked before anything changes: on error the allocator
// is as before. Segments made after the checkpoint stay in the pool, free
// and unsplit.
func (a *Allocator) SetCheckpointPoolState(st *PoolState, stale, live []Ptr) (*CheckpointDelta, error) {
	if st == nil {
		return nil, fmt.Errorf("setCheckpointPoolState: no state")
	}
	pp, err := a.privatePoolFor(st.Pool, "setCheckpointPoolState")
	if err != nil {
		return nil, err
	}
	// The blocks allocated now, by address.
	var before []*block
	for _, s := range a.segs {
		if s.pool.owner != pp {
			continue
		}
		for b := s.head; b != nil; b = b.next {
			if b.allocated {
				before = append(before, b)
			}
		}
	}
	if err := a.checkState(pp, st); err != nil {
		return nil, err
	}
	allocd := map[Ptr]bool{}
	for _, p := range st.Live() {
		allocd[p] = true
	}
	freed := make(map[Ptr]bool, len(before))
	definite := 0
	for _, b := range before {
		freed[b.ptr] = true
		if !allocd[b.ptr] {
			definite++
		}
	}
	staleSet := map[Ptr]bool{}
	for _, p := range stale {
		if !freed[p] {
			return nil, fmt.Errorf("setCheckpointPoolState: stale storage %#x is not allocated in pool %v", uint64(p), st.Pool)
		}
		staleSet[p] = true
	}
	if len(staleSet) < definite {
		return nil, fmt.Errorf("setCheckpointPoolState: any stale tensors which are being manually freed must be passed to set checkpoint (%d stale, %d freed)", len(staleSet), definite)
	}
	liveSet := map[Ptr]bool{}
	for _, p := range live {
		liveSet[p] = true
	}

	a.trace.add(TraceEntry{Action: ActionCheckpoint, Marker: MarkerRestoreBegin, Pool: st.Pool, Line: a.ctx.line, What: a.ctx.what})
	d := &CheckpointDelta{Pool: st.Pool}
	// freeBlocksAllocatedToPool.
	for _, b := range before {
		d.PtrsFreed = append(d.PtrsFreed, DeltaBlock{Addr: b.ptr, Size: b.size, Stale: staleSet[b.ptr], Reallocated: allocd[b.ptr]})
		a.free(b)
	}
	// setSegmentStateToCheckpoint, per segment.
	for _, ss := range st.Segments {
		seg := a.segs[a.segIndex(ss.Addr)]
		// Pass 1: allocate every block, splitting where the checkpoint did.
		// The remainders stay out of the free set: each is taken next.
		curr := seg.head
		a.freeRemove(seg.pool, curr)
		for i, bs := range ss.Blocks {
			b := a.allocFound(curr, bs.Size, bs.Size, bs.Stream, curr.size > bs.Size, false)
			if i+1 < len(ss.Blocks) {
				curr = b.next
			}
		}
		// Pass 2: free the blocks not allocated in the checkpoint.
		curr = seg.head
		for _, bs := range ss.Blocks {
			next := curr.next
			if bs.Allocated {
				d.DataPtrsAllocd = append(d.DataPtrsAllocd, DeltaBlock{Addr: curr.ptr, Size: curr.size, LiveOwned: liveSet[curr.ptr]})
			} else {
				a.free(curr)
			}
			curr = next
		}
	}
	a.trace.add(TraceEntry{Action: ActionCheckpoint, Marker: MarkerRestoreEnd, Pool: st.Pool, Line: a.ctx.line, What: a.ctx.what})
	return d, nil
}

func (a *Allocator) segIndex(p Ptr) int {
	i, found := a.searchSegs(p)
	if !found {
		return -1
	}
	return i
}

// checkState verifies that a checkpoint fits the pool: each segment exists
// in this pool with the same kind and size, and its blocks tile it.
func (a *Allocator) checkState(pp *privatePool, st *PoolState) error {
	seen := map[Ptr]bool{}
	for _, ss := range st.Segments {
		i := a.segIndex(ss.Addr)
		if i < 0 || a.segs[i].pool.owner != pp {
			return fmt.Errorf("setCheckpointPoolState: could not find segment %#x in pool %v", uint64(ss.Addr), st.Pool)
		}
		if seen[ss.Addr] {
			return fmt.Errorf("setCheckpointPoolState: segment %#x twice in the checkpoint", uint64(ss.Addr))
		}
		seen[ss.Addr] = true
		seg := a.segs[i]
		if seg.pool.small != ss.Small {
			return fmt.Errorf("setCheckpointPoolState: segment %#x changed pool kind", uint64(ss.Addr))
		}
		next := ss.Addr
		for _, bs := range ss.Blocks {
			if bs.Addr != next || bs.Size <= 0 {
				return fmt.Errorf("setCheckpointPoolState: segment %#x: block %#x does not follow %#x", uint64(ss.Addr), uint64(bs.Addr), uint64(next))
			}
			next += Ptr(bs.Size)
		}
		if next != seg.base+Ptr(seg.size) {
			return fmt.Errorf("setCheckpointPoolState: segment %#x: checkpointed blocks cover %d bytes of %d", uint64(ss.Addr), int64(next-ss.Addr), seg.size)
		}
	}
	return nil
}

// Mismatch is the difference between a pool's allocated blocks and the
// storages the tree manager believes live.
type Mismatch struct {
	// AllocatedNotLive are allocated blocks no live storage points to.
	AllocatedNotLive []Ptr
	// LiveNotAllocated are live pointers that are not allocated blocks of
	// the pool.
	LiveNotAllocated []Ptr
}

// CheckPoolLiveAllocations is checkPoolLiveAllocations (and the slow path
// of check_memory_pool): ok when the pool's allocated blocks are exactly the
// live pointers. The lists are sorted.
func (a *Allocator) CheckPoolLiveAllocations(id PoolID, live []Ptr) (bool, Mismatch) {
	want := map[Ptr]bool{}
	for _, p := range live {
		want[p] = true
	}
	var m Mismatch
	for _, s := range a.segs {
		if s.pool.id() != id {
			continue
		}
		for b := s.head; b != nil; b = b.next {
			if !b.allocated {
				continue
			}
			if want[b.ptr] {
				delete(want, b.ptr)
			} else {
				m.AllocatedNotLive = append(m.AllocatedNotLive, b.ptr)
			}
		}
	}
	for p := range want {
		m.LiveNotAllocated = append(m.LiveNotAllocated, p)
	}
	slices.Sort(m.LiveNotAllocated)
	return len(m.AllocatedNotLive) == 0 && len(m.LiveNotAllocated) == 0, m
}
