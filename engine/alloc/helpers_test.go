package alloc

import (
	"fmt"
	"slices"
	"testing"

	"github.com/cgtviz/cgtviz/engine/device"
)

const (
	KiB = int64(1) << 10
	MiB = int64(1) << 20
)

// fakeDevice is a deterministic SegmentSource: a segment reuses the last
// freed address of the same size, else comes from a bump pointer (2 MiB
// aligned).
type fakeDevice struct {
	next     device.Ptr
	total    int64
	used     int64
	live     map[device.Ptr]int64
	freed    map[int64][]device.Ptr
	calls    int // MallocSegment calls so far
	failFrom int // MallocSegment fails from this call on (1-based); 0 never
	// maxSegment, when set, makes larger segments fail unless a freed
	// one of the same size is there to reuse: a fragmented device.
	maxSegment int64
	// noReuse hands out fresh addresses only.
	noReuse bool
	// descending makes fresh addresses decrease, as cudaMalloc's may.
	descending bool
	frees      int
}

func newFakeDevice(total int64) *fakeDevice {
	return &fakeDevice{next: 0x7f0000000000, total: total, live: map[device.Ptr]int64{}, freed: map[int64][]device.Ptr{}}
}

func (d *fakeDevice) MallocSegment(size int64) (device.Ptr, error) {
	d.calls++
	if d.failFrom > 0 && d.calls >= d.failFrom {
		return 0, fmt.Errorf("fake: call %d: %w", d.calls, device.ErrOutOfMemory)
	}
	f := d.freed[size]
	if d.noReuse {
		f = nil
	}
	if d.used+size > d.total || d.maxSegment > 0 && size > d.maxSegment && len(f) == 0 {
		return 0, fmt.Errorf("fake: %d bytes: %w", size, device.ErrOutOfMemory)
	}
	var p device.Ptr
	if len(f) > 0 {
		p = f[len(f)-1]
		d.freed[size] = f[:len(f)-1]
	} else if d.descending {
		d.next -= device.Ptr((size + 2*MiB - 1) / (2 * MiB) * (2 * MiB))
		p = d.next
	} else {
		p = d.next
		d.next += device.Ptr((size + 2*MiB - 1) / (2 * MiB) * (2 * MiB))
	}
	d.used += size
	d.live[p] = size
	return p, nil
}

func (d *fakeDevice) FreeSegment(p device.Ptr) error {
	size, ok := d.live[p]
	if !ok {
		return fmt.Errorf("fake: free of unknown segment %#x", uint64(p))
	}
	delete(d.live, p)
	d.freed[size] = append(d.freed[size], p)
	d.used -= size
	d.frees++
	return nil
}

func (d *fakeDevice) MemInfo() (free, total int64) { return d.total - d.used, d.total }

// check verifies every structural invariant of the allocator.
func check(t testing.TB, a *Allocator) {
	t.Helper()
	if err := invariants(a); err != nil {
		t.Fatal(err)
	}
}

func invariants(a *Allocator) error {
	type agg struct{ alloc, allocBytes, reserved, segs, req, split, splitBytes [3]int64 }
	sums := map[PoolID]*agg{}
	total := &agg{}
	add := func(id PoolID, small bool, f func(g *agg, k int)) {
		if sums[id] == nil {
			sums[id] = &agg{}
		}
		for _, g := range []*agg{sums[id], total} {
			f(g, Aggregate)
			f(g, kindIndex(small))
		}
	}
	inFree := map[*block]bool{}
	pools := []*blockPool{&a.small, &a.large}
	for _, id := range a.sortedPoolIDs() {
		pools = append(pools, &a.pools[id].small, &a.pools[id].large)
	}
	for _, p := range pools {
		n := 0
		var prev *block
		var err error
		p.free.each(func(b *block) {
			n++
			inFree[b] = true
			if b.pool != p && err == nil {
				err = fmt.Errorf("free block %#x in the free set of another pool", uint64(b.ptr))
			}
			if b.allocated && err == nil {
				err = fmt.Errorf("allocated block %#x in a free set", uint64(b.ptr))
			}
			if prev != nil && !less(prev, b) && err == nil {
				err = fmt.Errorf("free set out of order at %#x", uint64(b.ptr))
			}
			if (b.left != nil && b.left.prio > b.prio || b.right != nil && b.right.prio > b.prio) && err == nil {
				err = fmt.Errorf("treap heap order broken at %#x", uint64(b.ptr))
			}
			prev = b
		})
		if err != nil {
			return err
		}
		if n != p.free.n {
			return fmt.Errorf("free set counts %d blocks, holds %d", p.free.n, n)
		}
	}
	nAllocated := 0
	var last *segment
	mallocs := map[*privatePool]int{}
	for _, s := range a.segs {
		if last != nil && last.base+Ptr(last.size) > s.base {
			return fmt.Errorf("segments %#x and %#x overlap or are out of order", uint64(last.base), uint64(s.base))
		}
		last = s
		if s.pool.owner != nil {
			mallocs[s.pool.owner]++
			if a.pools[s.pool.owner.id] != s.pool.owner {
				return fmt.Errorf("segment %#x belongs to a deleted pool", uint64(s.base))
			}
		}
		id := s.pool.id()
		add(id, s.pool.small, func(g *agg, k int) { g.reserved[k] += s.size; g.segs[k]++ })
		if s.head == nil || s.head.prev != nil || s.head.ptr != s.base {
			return fmt.Errorf("segment %#x: bad head", uint64(s.base))
		}
		next := s.base
		var prev *block
		for b := s.head; b != nil; b = b.next {
			if b.prev != prev || b.seg != s || b.pool != s.pool {
				return fmt.Errorf("segment %#x: block %#x badly linked", uint64(s.base), uint64(b.ptr))
			}
			if b.ptr != next || b.size <= 0 || b.size%MinBlockSize != 0 {
				return fmt.Errorf("segment %#x: block %#x (size %d) does not follow %#x", uint64(s.base), uint64(b.ptr), b.size, uint64(next))
			}
			next += Ptr(b.size)
			if prev != nil && !prev.allocated && !b.allocated {
				return fmt.Errorf("segment %#x: adjacent free blocks at %#x", uint64(s.base), uint64(b.ptr))
			}
			if b.allocated {
				nAllocated++
				if a.allocated.get(b.ptr) != b {
					return fmt.Errorf("allocated block %#x missing from the allocated map", uint64(b.ptr))
				}
				if inFree[b] {
					return fmt.Errorf("allocated block %#x in the free set", uint64(b.ptr))
				}
				add(id, s.pool.small, func(g *agg, k int) { g.alloc[k]++; g.allocBytes[k] += b.size; g.req[k] += b.requested })
			} else {
				if !inFree[b] {
					return fmt.Errorf("free block %#x missing from its free set", uint64(b.ptr))
				}
				delete(inFree, b)
				if b.isSplit() {
					add(id, s.pool.small, func(g *agg, k int) { g.split[k]++; g.splitBytes[k] += b.size })
				}
			}
			prev = b
		}
		if next != s.base+Ptr(s.size) {
			return fmt.Errorf("segment %#x: blocks cover %d of %d bytes", uint64(s.base), int64(next-s.base), s.size)
		}
	}
	if len(inFree) != 0 {
		return fmt.Errorf("%d blocks in free sets are in no segment", len(inFree))
	}
	if nAllocated != a.allocated.len() {
		return fmt.Errorf("allocated map has %d blocks, segments %d", a.allocated.len(), nAllocated)
	}
	for _, pp := range a.pools {
		if mallocs[pp] != pp.mallocCount {
			return fmt.Errorf("pool %v: mallocCount %d, segments %d", pp.id, pp.mallocCount, mallocs[pp])
		}
	}
	cmp := func(name string, st *Stats, g *agg) error {
		if g == nil {
			g = &agg{}
		}
		for k := 0; k < 3; k++ {
			for _, c := range []struct {
				what string
				got  int64
				want int64
			}{
				{"allocation", st.Allocation[k].Current, g.alloc[k]},
				{"active", st.Active[k].Current, g.alloc[k]},
				{"allocated_bytes", st.AllocatedBytes[k].Current, g.allocBytes[k]},
				{"active_bytes", st.ActiveBytes[k].Current, g.allocBytes[k]},
				{"requested_bytes", st.RequestedBytes[k].Current, g.req[k]},
				{"reserved_bytes", st.ReservedBytes[k].Current, g.reserved[k]},
				{"segment", st.Segment[k].Current, g.segs[k]},
				{"inactive_split", st.InactiveSplit[k].Current, g.split[k]},
				{"inactive_split_bytes", st.InactiveSplitBytes[k].Current, g.splitBytes[k]},
			} {
				if c.got != c.want {
					return fmt.Errorf("%s stats: %s[%d] = %d, blocks say %d", name, c.what, k, c.got, c.want)
				}
				if k == Aggregate && c.got > 0 && st.AllocatedBytes[k].Peak < st.AllocatedBytes[k].Current {
					return fmt.Errorf("%s stats: peak below current", name)
				}
			}
		}
		return nil
	}
	if err := cmp("total", &a.stats, total); err != nil {
		return err
	}
	if err := cmp("default pool", &a.defaultStats, sums[DefaultPool]); err != nil {
		return err
	}
	for _, id := range a.sortedPoolIDs() {
		if err := cmp("pool "+id.String(), &a.pools[id].stats, sums[id]); err != nil {
			return err
		}
	}
	return nil
}

// layout is a compact text form of a pool's segments for table tests:
// one string per segment, "size: bsize/req A | bsize F ...".
func layout(segs []Segment) []string {
	var out []string
	for _, s := range segs {
		line := fmt.Sprintf("%d:", s.Size)
		for _, b := range s.Blocks {
			if b.Allocated {
				line += fmt.Sprintf(" %d/%d A", b.Size, b.RequestedSize)
			} else {
				line += fmt.Sprintf(" %d F", b.Size)
			}
		}
		out = append(out, line)
	}
	return out
}

// freeSets lists every free set's blocks, for comparing states.
func freeSets(a *Allocator) []string {
	var out []string
	dump := func(name string, p *blockPool) {
		p.free.each(func(b *block) {
			out = append(out, fmt.Sprintf("%s %d %d %#x", name, b.stream, b.size, uint64(b.ptr)))
		})
	}
	dump("small", &a.small)
	dump("large", &a.large)
	for _, id := range a.sortedPoolIDs() {
		dump(id.String()+" small", &a.pools[id].small)
		dump(id.String()+" large", &a.pools[id].large)
	}
	return out
}

func mustMalloc(t testing.TB, a *Allocator, n int64, s device.Stream) Ptr {
	t.Helper()
	p, err := a.Malloc(n, s)
	if err != nil {
		t.Fatalf("malloc %d: %v", n, err)
	}
	return p
}

func mustFree(t testing.TB, a *Allocator, p Ptr) {
	t.Helper()
	if err := a.Free(p); err != nil {
		t.Fatal(err)
	}
}

func equalStrings(a, b []string) bool { return slices.Equal(a, b) }
