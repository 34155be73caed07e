package alloc

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cgtviz/cgtviz/tools/golden"

	"github.com/cgtviz/cgtviz/engine/alloc/internal/unpickle"
	"github.com/cgtviz/cgtviz/engine/device"
)

// scenario drives two allocators (devices 0 and 2) through eager work, a
// capture into a private pool, a checkpoint and its restore, an OOM and
// empty_cache.
func scenario(t testing.TB, traceMax int) []*Allocator {
	dev := newFakeDevice(256 * MiB)
	a := New(dev, 0, Options{TraceMax: traceMax})
	a.SetContext(2, "tensor x")
	x := mustMalloc(t, a, 4000, device.DefaultStream)
	y := mustMalloc(t, a, 3*MiB, device.DefaultStream)
	id := a.NewPoolID()
	if err := a.BeginAllocateToPool(id, device.SideStream); err != nil {
		t.Fatal(err)
	}
	a.SetContext(5, "call f: record node 0")
	o1 := mustMalloc(t, a, 1000, device.SideStream)
	tmp := mustMalloc(t, a, 2*MiB, device.SideStream)
	o2 := mustMalloc(t, a, 30*MiB+3, device.SideStream)
	mustFree(t, a, tmp)
	if err := a.EndAllocateToPool(id); err != nil {
		t.Fatal(err)
	}
	st, err := a.GetCheckpointState(id)
	if err != nil {
		t.Fatal(err)
	}
	a.SetContext(6, "del x")
	mustFree(t, a, x)
	a.SetContext(7, "call g: record node 1")
	if err := a.BeginAllocateToPool(id, device.SideStream); err != nil {
		t.Fatal(err)
	}
	mustFree(t, a, o1)
	mustMalloc(t, a, 5*MiB, device.SideStream)
	if err := a.EndAllocateToPool(id); err != nil {
		t.Fatal(err)
	}
	a.SetContext(9, "call f: checkpoint")
	if _, err := a.SetCheckpointPoolState(st, []Ptr{}, []Ptr{o2}); err == nil {
		t.Fatal("restore without the stale storage succeeded")
	}
	live := a.Allocated(id)
	var stale []Ptr
	for _, b := range live {
		if b.Addr != o2 {
			stale = append(stale, b.Addr)
		}
	}
	d, err := a.SetCheckpointPoolState(st, stale, []Ptr{o2})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range d.Unowned() {
		mustFree(t, a, p)
	}
	a.SetContext(11, "tensor huge")
	if _, err := a.Malloc(400*MiB, device.DefaultStream); err == nil {
		t.Fatal("huge malloc succeeded")
	}
	a.SetContext(12, "del y")
	mustFree(t, a, y)
	if err := a.EmptyCache(); err != nil {
		t.Fatal(err)
	}
	b := New(newFakeDevice(64*MiB), 2, Options{TraceMax: traceMax})
	b.SetContext(3, "tensor z")
	mustMalloc(t, b, 100, device.DefaultStream)
	return []*Allocator{a, b}
}

func TestSnapshotGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteSnapshot(&buf, scenario(t, 0)); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "snapshot.pickle"), buf.Bytes())
}

func TestSnapshotConsistent(t *testing.T) {
	for _, c := range []struct {
		name     string
		allocs   func(t *testing.T) []*Allocator
		complete bool
	}{
		{"scenario", func(t *testing.T) []*Allocator { return scenario(t, 0) }, true},
		{"scenario, ring of 7", func(t *testing.T) []*Allocator { return scenario(t, 7) }, false},
		{"random", func(t *testing.T) []*Allocator { return []*Allocator{randomAllocator(t, 1, 0)} }, true},
		{"random, ring of 1500", func(t *testing.T) []*Allocator { return []*Allocator{randomAllocator(t, 2, 1500)} }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			allocs := c.allocs(t)
			var buf bytes.Buffer
			if err := WriteSnapshot(&buf, allocs); err != nil {
				t.Fatal(err)
			}
			v, err := unpickle.Decode(buf.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			if err := checkSnapshot(v, c.complete); err != nil {
				t.Fatal(err)
			}
			if !c.complete && allocs[0].TraceDropped() == 0 {
				t.Fatal("nothing dropped")
			}
		})
	}
}

// randomAllocator runs random eager and pool work with restores.
func randomAllocator(t testing.TB, seed uint64, traceMax int) *Allocator {
	r := rand.New(rand.NewPCG(seed, 1))
	a := New(newFakeDevice(2<<30), 0, Options{TraceMax: traceMax})
	id := a.NewPoolID()
	var eager, pool []Ptr
	var st *PoolState
	for step := 0; step < 800; step++ {
		a.SetContext(step+1, fmt.Sprint("step ", step))
		switch k := r.IntN(12); {
		case k < 4:
			if p, err := a.Malloc(randomSize(r), device.Stream(r.IntN(2))); err == nil {
				eager = append(eager, p)
			}
		case k < 6 && len(eager) > 0:
			i := r.IntN(len(eager))
			mustFree(t, a, eager[i])
			eager = slices.Delete(eager, i, i+1)
		case k < 9:
			if err := a.BeginAllocateToPool(id, device.SideStream); err != nil {
				t.Fatal(err)
			}
			for j := r.IntN(4); j >= 0; j-- {
				if p, err := a.Malloc(randomSize(r), device.SideStream); err == nil {
					pool = append(pool, p)
				}
			}
			if len(pool) > 0 && r.IntN(2) == 0 {
				i := r.IntN(len(pool))
				mustFree(t, a, pool[i])
				pool = slices.Delete(pool, i, i+1)
			}
			if err := a.EndAllocateToPool(id); err != nil {
				t.Fatal(err)
			}
			if r.IntN(3) == 0 {
				var err error
				if st, err = a.GetCheckpointState(id); err != nil {
					t.Fatal(err)
				}
			}
		case k == 9 && st != nil:
			d, err := a.SetCheckpointPoolState(st, pool, nil)
			if err != nil {
				t.Fatal(err)
			}
			pool = pool[:0]
			for _, p := range d.Unowned() {
				if r.IntN(2) == 0 {
					mustFree(t, a, p)
				} else {
					pool = append(pool, p)
				}
			}
		case k == 10:
			if err := a.EmptyCache(); err != nil {
				t.Fatal(err)
			}
		}
	}
	check(t, a)
	return a
}

type vblock struct {
	size    int64
	pending bool
}

type vseg struct {
	addr, size int64
	blocks     map[int64]*vblock
}

// checkSnapshot checks a decoded snapshot against the rules memory_viz
// relies on (allocator.md §3.8): blocks tile their segments; undoing the
// trace from the end never meets a missing block or segment; every alloc
// never freed is an active_allocated block; and, when the trace is
// complete, undoing all of it leaves nothing.
func checkSnapshot(v any, complete bool) error {
	top, ok := v.(*unpickle.Dict)
	if !ok || !slices.Equal(top.Keys, []string{"segments", "device_traces", "allocator_settings"}) {
		return fmt.Errorf("top level %v", v)
	}
	traces := top.Vals["device_traces"].([]any)
	state := map[int64]map[int64]*vseg{} // device → segment address → segment
	active := map[int64]map[int64]bool{}
	for _, sv := range top.Vals["segments"].([]any) {
		s := sv.(*unpickle.Dict).Vals
		dev := s["device"].(int64)
		if int(dev) >= len(traces) {
			return fmt.Errorf("no device_traces entry for device %d", dev)
		}
		if pid, ok := s["segment_pool_id"].(unpickle.Tuple); !ok || len(pid) != 2 {
			return fmt.Errorf("segment_pool_id %v is not a pair", s["segment_pool_id"])
		}
		seg := &vseg{addr: s["address"].(int64), size: s["total_size"].(int64), blocks: map[int64]*vblock{}}
		if state[dev] == nil {
			state[dev], active[dev] = map[int64]*vseg{}, map[int64]bool{}
		}
		state[dev][seg.addr] = seg
		addr := seg.addr
		var allocated, requested int64
		for _, bv := range s["blocks"].([]any) {
			b := bv.(*unpickle.Dict).Vals
			if b["address"].(int64) != addr {
				return fmt.Errorf("segment %#x: block at %#x, expected %#x", seg.addr, b["address"], addr)
			}
			size := b["size"].(int64)
			if b["state"] == "active_allocated" {
				seg.blocks[addr] = &vblock{size: b["requested_size"].(int64)}
				active[dev][addr] = true
				allocated += size
				requested += b["requested_size"].(int64)
			} else if b["state"] != "inactive" {
				return fmt.Errorf("block state %v", b["state"])
			}
			addr += size
		}
		if addr != seg.addr+seg.size || allocated != s["allocated_size"].(int64) || requested != s["requested_size"].(int64) {
			return fmt.Errorf("segment %#x: blocks cover %d of %d; allocated %d vs %d", seg.addr, addr-seg.addr, seg.size, allocated, s["allocated_size"])
		}
	}
	for dev, tv := range traces {
		d := int64(dev)
		segs := state[d]
		if segs == nil {
			segs = map[int64]*vseg{}
		}
		entries := tv.([]any)
		// Allocs never freed later must be active_allocated blocks.
		freedLater := map[int64]bool{}
		for i := len(entries) - 1; i >= 0; i-- {
			e := entries[i].(*unpickle.Dict).Vals
			addr, _ := e["addr"].(int64)
			switch e["action"] {
			case "free_requested", "free_completed":
				freedLater[addr] = true
			case "alloc":
				if !freedLater[addr] && !active[d][addr] {
					return fmt.Errorf("device %d entry %d: alloc at %#x never freed but not allocated", dev, i, addr)
				}
				delete(freedLater, addr)
			}
		}
		find := func(addr int64) *vseg {
			for _, s := range segs {
				if addr >= s.addr && addr < s.addr+s.size {
					return s
				}
			}
			return nil
		}
		for i := len(entries) - 1; i >= 0; i-- {
			e := entries[i].(*unpickle.Dict).Vals
			addr, _ := e["addr"].(int64)
			size := e["size"].(int64)
			fail := func(what string) error {
				return fmt.Errorf("device %d entry %d (%v %#x %d): %s", dev, i, e["action"], addr, size, what)
			}
			switch e["action"] {
			case "alloc":
				s := find(addr)
				if s == nil || s.blocks[addr] == nil || s.blocks[addr].pending {
					return fail("undo alloc: no allocated block")
				}
				delete(s.blocks, addr)
			case "free_completed":
				s := find(addr)
				if s == nil {
					return fail("undo free: no segment")
				}
				if s.blocks[addr] != nil {
					return fail("undo free: block already there")
				}
				s.blocks[addr] = &vblock{size: size, pending: true}
			case "free_requested":
				s := find(addr)
				if s == nil || s.blocks[addr] == nil || !s.blocks[addr].pending {
					return fail("undo free_requested: no pending block")
				}
				s.blocks[addr].pending = false
			case "segment_free":
				if find(addr) != nil {
					return fail("undo segment_free: overlaps a segment")
				}
				segs[addr] = &vseg{addr: addr, size: size, blocks: map[int64]*vblock{}}
			case "segment_alloc":
				s := segs[addr]
				if s == nil || s.size != size {
					return fail("undo segment_alloc: no such segment")
				}
				if len(s.blocks) != 0 {
					return fail("undo segment_alloc: blocks left in it")
				}
				delete(segs, addr)
			case "oom":
				if _, ok := e["device_free"].(int64); !ok {
					return fail("oom without device_free")
				}
			default:
				return fail("unknown action")
			}
		}
		if complete && len(segs) != 0 {
			return fmt.Errorf("device %d: %d segments left before the first event", dev, len(segs))
		}
	}
	return nil
}
