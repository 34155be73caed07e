package engine

import (
	"errors"
	"fmt"
	"sort"

	"github.com/cgtviz/cgtviz/engine/device"
)

// CheckInvariants checks the engine's state and returns every violation
// found (nil when all hold):
//   - the blocks of every segment tile it, without gaps or overlap;
//   - in each pool, the allocated blocks are exactly the blocks of live
//     tensors that own their memory (so in EXECUTION the replay outputs,
//     which own nothing, are invisible to the allocator, as in PyTorch);
//   - no two live owning storages overlap (views share one storage);
//   - stale storages own nothing;
//   - tree links are consistent (parents, children, depths, roots);
//   - the generation counters only move forward.
func (e *Engine) CheckInvariants() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for _, ds := range e.devs {
		a := ds.alloc
		// Owned live storages by pointer.
		owned := map[device.Ptr]*Storage{}
		type rng struct {
			lo, hi device.Ptr
			id     int
		}
		var ranges []rng
		for _, s := range e.tt.storages.all() {
			if s.Dev != ds.index || s.Ptr == 0 {
				continue
			}
			if s.Stale && s.Owned {
				add("device %d: stale storage %d at %#x still owns its block", ds.index, s.ID, s.Ptr)
			}
			if s.Refs > 0 && s.Owned {
				if o, dup := owned[s.Ptr]; dup {
					add("device %d: storages %d and %d both own the block at %#x", ds.index, o.ID, s.ID, s.Ptr)
				}
				owned[s.Ptr] = s
				ranges = append(ranges, rng{s.Ptr, s.Ptr + device.Ptr(s.Bytes), s.ID})
			}
		}
		sort.Slice(ranges, func(i, j int) bool { return ranges[i].lo < ranges[j].lo })
		for i := 1; i < len(ranges); i++ {
			if ranges[i].lo < ranges[i-1].hi {
				add("device %d: live storages %d and %d overlap at %#x", ds.index, ranges[i-1].id, ranges[i].id, ranges[i].lo)
			}
		}
		for _, seg := range a.Segments() {
			at := seg.Addr
			for _, b := range seg.Blocks {
				if b.Addr != at {
					add("device %d: segment %#x: block at %#x, expected %#x (gap or overlap)", ds.index, seg.Addr, b.Addr, at)
				}
				at = b.Addr + device.Ptr(b.Size)
				if b.Allocated {
					s := owned[b.Addr]
					if s == nil {
						add("device %d: block %#x (%d B, pool %v) is allocated but no live tensor owns it", ds.index, b.Addr, b.Size, seg.Pool)
					}
					delete(owned, b.Addr)
				}
			}
			if at != seg.Addr+device.Ptr(seg.Size) {
				add("device %d: segment %#x: blocks end at %#x, segment at %#x", ds.index, seg.Addr, at, seg.Addr+device.Ptr(seg.Size))
			}
		}
		for p, s := range owned {
			add("device %d: storage %d (%s) owns %#x but the allocator has no allocated block there", ds.index, s.ID, s.What, p)
		}
		m := ds.m
		for id, n := range m.nodes {
			if n.ID != id {
				add("device %d: node at index %d has id %d", ds.index, id, n.ID)
			}
			if n.Parent >= 0 {
				if n.Parent >= len(m.nodes) {
					add("device %d: node %d has parent %d, which does not exist", ds.index, id, n.Parent)
					continue
				}
				p := m.nodes[n.Parent]
				if !contains(p.Children[n.Fn], id) {
					add("device %d: node %d is not among its parent %d's children", ds.index, id, p.ID)
				}
				if n.Depth != p.Depth+1 {
					add("device %d: node %d has depth %d under a parent of depth %d", ds.index, id, n.Depth, p.Depth)
				}
			} else if !contains(m.rootsOf(n.Fn), id) {
				add("device %d: node %d has no parent and is not a root", ds.index, id)
			}
			for fn, kids := range n.Children {
				for _, k := range kids {
					if k >= len(m.nodes) || m.nodes[k].Parent != id || m.nodes[k].Fn != fn {
						add("device %d: node %d lists child %d wrongly", ds.index, id, k)
					}
				}
			}
		}
	}
	// The mark-step counter only goes down, but for a reset record, which
	// puts it back to 0 (reset_cudagraph_trees).
	if e.light.genTracker > e.genTracker || (e.light.markStep < e.markStep && e.markStep != 0) {
		add("generation counters went backwards")
	}
	return errors.Join(errs...)
}

func contains(s []int, x int) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}
