package alloc

import (
	"slices"

	"github.com/cgtviz/cgtviz/engine/device"
)

// Block is a read-only view of one block.
type Block struct {
	Addr Ptr
	// Size is the block size (rounded); RequestedSize the caller's bytes
	// of its last allocation (stale on free blocks, as in PyTorch).
	Size, RequestedSize int64
	Allocated           bool
	Stream              device.Stream
	// Line and What are the context of the allocation (allocated blocks).
	Line int
	What string
}

// Segment is a read-only view of one segment (one cudaMalloc) and its
// blocks in address order.
type Segment struct {
	Addr   Ptr
	Size   int64
	Pool   PoolID
	Stream device.Stream
	// Small says the segment belongs to a small pool (2 MiB segments).
	Small  bool
	Blocks []Block
	// Line and What are the context of the segment's malloc.
	Line int
	What string
}

// AllocatedSize is the sum of the allocated blocks' sizes.
func (s *Segment) AllocatedSize() int64 {
	var n int64
	for _, b := range s.Blocks {
		if b.Allocated {
			n += b.Size
		}
	}
	return n
}

// RequestedSize is the sum of the allocated blocks' requested sizes.
func (s *Segment) RequestedSize() int64 {
	var n int64
	for _, b := range s.Blocks {
		if b.Allocated {
			n += b.RequestedSize
		}
	}
	return n
}

func viewBlock(b *block) Block {
	return Block{Addr: b.ptr, Size: b.size, RequestedSize: b.requested, Allocated: b.allocated, Stream: b.stream, Line: b.ctx.line, What: b.ctx.what}
}

func viewSegment(s *segment) Segment {
	v := Segment{Addr: s.base, Size: s.size, Pool: s.pool.id(), Stream: s.stream, Small: s.pool.small, Line: s.ctx.line, What: s.ctx.what}
	for b := s.head; b != nil; b = b.next {
		v.Blocks = append(v.Blocks, viewBlock(b))
	}
	return v
}

// Segments returns every segment, by address (memory_snapshot()).
func (a *Allocator) Segments() []Segment {
	out := make([]Segment, len(a.segs))
	for i, s := range a.segs {
		out[i] = viewSegment(s)
	}
	return out
}

// PoolSegments returns the segments of one pool, by address.
func (a *Allocator) PoolSegments(id PoolID) []Segment {
	var out []Segment
	for _, s := range a.segs {
		if s.pool.id() == id {
			out = append(out, viewSegment(s))
		}
	}
	return out
}

// segmentAt returns the segment holding address p.
func (a *Allocator) segmentAt(p Ptr) *segment {
	i, found := a.searchSegs(p)
	if found {
		return a.segs[i]
	}
	if i == 0 {
		return nil
	}
	s := a.segs[i-1]
	if p < s.base+Ptr(s.size) {
		return s
	}
	return nil
}

// BlockAt returns the block that starts at p, free or allocated.
func (a *Allocator) BlockAt(p Ptr) (Block, bool) {
	if b := a.allocated.get(p); b != nil {
		return viewBlock(b), true
	}
	s := a.segmentAt(p)
	if s == nil {
		return Block{}, false
	}
	for b := s.head; b != nil && b.ptr <= p; b = b.next {
		if b.ptr == p {
			return viewBlock(b), true
		}
	}
	return Block{}, false
}

// BlockPool returns the id of the pool of the block starting at p.
func (a *Allocator) BlockPool(p Ptr) (PoolID, bool) {
	if b := a.allocated.get(p); b != nil {
		return b.pool.id(), true
	}
	if s := a.segmentAt(p); s != nil {
		return s.pool.id(), true
	}
	return PoolID{}, false
}

// Allocated returns the allocated blocks of a pool, by address.
func (a *Allocator) Allocated(id PoolID) []Block {
	var out []Block
	for _, s := range a.segs {
		if s.pool.id() != id {
			continue
		}
		for b := s.head; b != nil; b = b.next {
			if b.allocated {
				out = append(out, viewBlock(b))
			}
		}
	}
	return out
}

// Clone returns a deep copy of the allocator that allocates its segments
// from src (the device's own copy, for a session keyframe). It costs
// O(blocks + segments); the event log's full chunks are shared, never
// written again. To undo a failed step, Mark and Undo cost what the step
// changed instead (journal.go).
func (a *Allocator) Clone(src SegmentSource) *Allocator {
	c := &Allocator{}
	copyInto(c, a)
	c.src = src
	return c
}

// copyInto makes dst a deep copy of src; dst's pool structs are its own.
func copyInto(dst, src *Allocator) {
	dst.src = src.src
	dst.device = src.device
	dst.opts = src.opts
	dst.maxSplit = src.maxSplit
	dst.small = blockPool{small: true}
	dst.large = blockPool{}
	dst.pools = make(map[PoolID]*privatePool, len(src.pools))
	pools := map[*blockPool]*blockPool{&src.small: &dst.small, &src.large: &dst.large}
	for id, pp := range src.pools {
		np := &privatePool{id: id, useCount: pp.useCount, mallocCount: pp.mallocCount, stats: pp.stats}
		np.small = blockPool{small: true, owner: np}
		np.large = blockPool{owner: np}
		dst.pools[id] = np
		pools[&pp.small] = &np.small
		pools[&pp.large] = &np.large
	}
	dst.captures = slices.Clone(src.captures)
	dst.allocated = ptrMap{}
	dst.segs = make([]*segment, len(src.segs))
	// Number the source's blocks (the scratch field idx), copy them into
	// one slab, then map the free sets' links through the numbers.
	n := 0
	for _, s := range src.segs {
		for b := s.head; b != nil; b = b.next {
			b.idx = int32(n)
			n++
		}
	}
	slab := make([]block, n)
	segSlab := make([]segment, len(src.segs))
	at := func(b *block) *block {
		if b == nil {
			return nil
		}
		return &slab[b.idx]
	}
	for i, s := range src.segs {
		ns := &segSlab[i]
		*ns = segment{base: s.base, size: s.size, pool: pools[s.pool], stream: s.stream, ctx: s.ctx}
		dst.segs[i] = ns
		ns.head = at(s.head)
		for b := s.head; b != nil; b = b.next {
			nb := at(b)
			*nb = *b
			nb.pool = pools[b.pool]
			nb.seg = ns
			nb.prev, nb.next = at(b.prev), at(b.next)
			nb.left, nb.right = at(b.left), at(b.right)
			if nb.allocated {
				dst.allocated.put(nb.ptr, nb)
			}
		}
	}
	for old, nw := range pools {
		nw.free = freeSet{root: at(old.free.root), n: old.free.n}
	}
	dst.stats = src.stats
	dst.defaultStats = src.defaultStats
	dst.trace = src.trace.clone()
	dst.ctx = src.ctx
	dst.nextUID = src.nextUID
	dst.spare = nil
	// No mark of src is open in the copy; its journal goes on from src's
	// epoch, so that no stamp the blocks copied counts as saved in it.
	dst.j = journal{epoch: src.j.epoch}
}
