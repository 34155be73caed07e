package engine

import (
	"fmt"
	"sort"

	"github.com/cgtviz/cgtviz/engine/device"
)

// This file is apply_checkpoint_execution_state_in_allocator: the pool put
// back as it was when the current node recorded.

// applyCheckpoint is apply_checkpoint_execution_state_in_allocator: the
// pool is put back as it was when the current node recorded, the live
// outputs of the path become owners of their blocks again, and blocks of
// outputs that died since are freed.
func (m *manager) applyCheckpoint(c *call) error {
	m.sh.snapshot()
	n := m.curNode()
	if n == nil {
		return fmt.Errorf("checkpoint without a current graph node")
	}
	m.checkpoints++
	m.sh.counters.Checkpoints++
	c.out.checkpoint = true
	path := m.path(n)
	// remove_path_cached_tensors
	for _, x := range path {
		m.keepNode(x)
		m.dropCachedTensors(x)
	}
	var livePtrs []device.Ptr
	liveOwner := map[device.Ptr]int{}
	for _, sid := range m.nodePathLive(n) {
		s := m.sh.tt.storages.get(sid)
		if _, dup := liveOwner[s.Ptr]; !dup {
			liveOwner[s.Ptr] = sid
			livePtrs = append(livePtrs, s.Ptr)
		}
	}
	var deadPtrs []device.Ptr
	seenDead := map[device.Ptr]bool{}
	for _, oi := range n.LiveAfter {
		sid := path[oi.Depth].OutWeak[oi.Index]
		if sid == 0 || m.sh.tt.storageLive(sid) {
			continue
		}
		p := path[oi.Depth].Outputs[oi.Index].Ptr
		if !seenDead[p] {
			seenDead[p] = true
			deadPtrs = append(deadPtrs, p)
		}
	}
	a := m.ds.alloc
	a.SetContext(c.rec.Line, fmt.Sprintf("checkpoint to #%d", n.ID))
	delta, err := a.SetCheckpointPoolState(n.CheckpointState, nil, livePtrs)
	if err != nil {
		return fmt.Errorf("checkpoint to node %d: %w", n.ID, err)
	}
	// The live outputs own their blocks again: the restored state
	// allocated them.
	for _, sid := range liveOwner {
		m.sh.tt.keepS(m.sh.tt.storages.get(sid))
		m.sh.tt.storages.get(sid).Owned = true
	}
	view := &CheckpointView{Node: n.ID}
	for _, b := range delta.DataPtrsAllocd {
		if sid, ok := liveOwner[b.Addr]; ok {
			view.Reallocated = append(view.Reallocated, DeltaBlock{Ptr: uint64(b.Addr), Size: b.Size, Tensor: m.storageLabel(sid)})
		}
	}
	for _, p := range deadPtrs {
		blk, _ := a.BlockAt(p)
		if err := a.Free(p); err != nil {
			return fmt.Errorf("checkpoint to node %d: free dead output at %#x: %w", n.ID, p, err)
		}
		view.Freed = append(view.Freed, DeltaBlock{Ptr: uint64(p), Size: blk.Size, Tensor: m.deadOutputLabel(n, p)})
	}
	sort.Slice(view.Reallocated, func(i, j int) bool { return view.Reallocated[i].Ptr < view.Reallocated[j].Ptr })
	m.emit(Event{Kind: EvCheckpoint, Line: c.rec.Line, Device: m.ds.index, Node: n.ID, Parent: n.Parent, Delta: view,
		Msg: fmt.Sprintf("Checkpointing cuda caching allocator state. Number of checkpoints %d", m.checkpoints)})
	if ok, mm := a.CheckPoolLiveAllocations(m.pool, livePtrs); !ok {
		return fmt.Errorf("after the checkpoint the pool does not match the live tensors: allocated but not live %v, live but not allocated %v",
			mm.AllocatedNotLive, mm.LiveNotAllocated)
	}
	return nil
}

// storageLabel names a storage in a checkpoint's delta: by a name bound
// to it, else by where it was made.
func (m *manager) storageLabel(sid int) string {
	tt := m.sh.tt
	if n := tt.nameOfStorage(sid); n != "" {
		return n
	}
	if s := tt.storages.get(sid); s != nil {
		return s.What
	}
	return ""
}

func (m *manager) deadOutputLabel(n *Node, p device.Ptr) string {
	for _, x := range m.path(n) {
		for i, o := range x.Outputs {
			if o.Ptr == p {
				return fmt.Sprintf("%s output %d (dead)", m.funcs[x.Fn].Name, i)
			}
		}
	}
	return "(dead)"
}

// dropCachedTensors is remove_path_cached_tensors for one node.
func (m *manager) dropCachedTensors(n *Node) {
	tt := m.sh.tt
	for _, tid := range n.Cached {
		if tid == 0 {
			continue
		}
		t := tt.tensors.get(tid)
		if t == nil {
			continue
		}
		tt.keepT(t)
		t.Cached = false
		if s := tt.storages.get(t.Storage); s != nil {
			tt.keepS(s)
			s.Pins--
			if s.Refs == 0 && s.Pins == 0 {
				tt.dropStorage(s.ID)
			}
		}
		if !t.live() {
			tt.dropTensor(tid)
		}
	}
	n.Cached = nil
}
