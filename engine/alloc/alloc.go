package alloc

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/cgtviz/cgtviz/engine/device"
)

// Ptr is a device address.
type Ptr = device.Ptr

// SegmentSource is what the allocator needs of a device: cudaMalloc,
// cudaFree and cudaMemGetInfo. device.Device satisfies it.
type SegmentSource interface {
	// MallocSegment returns an error wrapping device.ErrOutOfMemory when
	// the device has too little memory.
	MallocSegment(size int64) (device.Ptr, error)
	FreeSegment(p device.Ptr) error
	MemInfo() (free, total int64)
}

// PoolID is PyTorch's MempoolId_t. (0,0) is the default pool;
// graph_pool_handle() gives (0, uid).
type PoolID struct{ First, Second int64 }

// DefaultPool is the id of the global pools.
var DefaultPool = PoolID{}

func (id PoolID) String() string { return fmt.Sprintf("(%d, %d)", id.First, id.Second) }

// Options are the PYTORCH_CUDA_ALLOC_CONF settings the allocator honours.
type Options struct {
	// MaxSplitSize is max_split_size in bytes; 0 means unlimited (the
	// default). Blocks of at least this size are never split.
	MaxSplitSize int64
	// RoundupPower2Divisions is roundup_power2_divisions per bucket
	// (bucket i covers [2^(20+i), 2^(21+i)) bytes); 0 or 1 is off.
	RoundupPower2Divisions [RoundupPower2Intervals]int
	// TraceMax bounds the event log; 0 means DefaultTraceMax, and a
	// negative value keeps none (Trace is empty, every entry dropped):
	// for a run that makes no memory snapshot, whose log would only cost
	// memory (a tree of 10,000 nodes fills the default log: 12 MB).
	TraceMax int
}

// context is what SetContext set: the trace line and what happened there.
type context struct {
	line int
	what string
}

// block is PyTorch's Block: a piece of a segment, free or allocated. The
// blocks of a segment form a list through prev and next, in address order.
type block struct {
	ptr       Ptr
	size      int64
	requested int64
	stream    device.Stream
	pool      *blockPool
	seg       *segment
	prev      *block
	next      *block
	allocated bool
	ctx       context // context_when_allocated
	// The free set's links.
	left, right *block
	prio        uint64
	inFree      bool
	// idx numbers the blocks while a clone is made.
	idx int32
	// stamp is the journal epoch that saved the block (journal.go).
	stamp uint64
}

func (b *block) isSplit() bool { return b.prev != nil || b.next != nil }

// segment is one cudaMalloc. head is its lowest block.
type segment struct {
	base   Ptr
	size   int64
	pool   *blockPool
	stream device.Stream
	head   *block
	ctx    context // context_when_segment_allocated
	stamp  uint64  // as block.stamp
}

// blockPool is PyTorch's BlockPool: the free blocks of one kind (small or
// large) of one pool.
type blockPool struct {
	small bool
	owner *privatePool // nil for the global pools
	free  freeSet
}

// privatePool is PyTorch's PrivatePool, a graph pool.
type privatePool struct {
	id          PoolID
	useCount    int
	mallocCount int
	small       blockPool
	large       blockPool
	stats       Stats
	stamp       uint64 // as block.stamp
}

// capture is an entry of captures_underway: allocations on stream go to the
// pool id.
type capture struct {
	id     PoolID
	stream device.Stream
}

// Allocator is one device's caching allocator (DeviceCachingAllocator).
type Allocator struct {
	src      SegmentSource
	device   int
	opts     Options
	maxSplit int64 // math.MaxInt64 when unlimited

	small, large blockPool // the global pools
	pools        map[PoolID]*privatePool
	captures     []capture
	allocated    ptrMap     // allocated_blocks
	segs         []*segment // by address
	stats        Stats
	defaultStats Stats // the global pools' share of stats
	trace        traceLog
	ctx          context
	nextUID      int64
	spare        []*block // recycled blocks
	released     []Ptr    // segments released by a malloc fallback (nil: not in one)
	j            journal  // the undo log of the open marks (journal.go)
}

// New returns an empty allocator for device ordinal dev over src.
func New(src SegmentSource, dev int, opts Options) *Allocator {
	a := &Allocator{
		src:      src,
		device:   dev,
		opts:     opts,
		maxSplit: math.MaxInt64,
		pools:    map[PoolID]*privatePool{},
	}
	if opts.MaxSplitSize > 0 {
		a.maxSplit = opts.MaxSplitSize
	}
	a.small.small = true
	a.trace.max = opts.TraceMax
	if a.trace.max < 0 {
		a.trace.off, a.trace.max = true, 0
	} else if a.trace.max == 0 {
		a.trace.max = DefaultTraceMax
	}
	return a
}

// Device is the device ordinal given to New.
func (a *Allocator) Device() int { return a.device }

// Options returns the options given to New.
func (a *Allocator) Options() Options { return a.opts }

// SetContext makes every later trace entry, block and segment carry this
// trace line and description until it is called again.
func (a *Allocator) SetContext(line int, what string) { a.ctx = context{line, what} }

// OutOfMemoryError is the error of a malloc the device could not satisfy,
// with PyTorch's message. It wraps device.ErrOutOfMemory.
type OutOfMemoryError struct {
	// Requested is the caller's byte count, AllocSize the segment size the
	// allocator tried to get.
	Requested, AllocSize int64
	Stream               device.Stream
	Pool                 PoolID
	Msg                  string
}

func (e *OutOfMemoryError) Error() string { return e.Msg }

// Unwrap makes errors.Is(err, device.ErrOutOfMemory) true.
func (e *OutOfMemoryError) Unwrap() error { return device.ErrOutOfMemory }

// newBlock returns a block holding v, a spare one when there is one.
func (a *Allocator) newBlock(v block) *block {
	v.stamp = a.stamp()
	if n := len(a.spare); n > 0 {
		b := a.spare[n-1]
		a.spare = a.spare[:n-1]
		if a.j.on {
			a.j.spare = append(a.j.spare, spareUndo{b: b})
		}
		*b = v
		return b
	}
	b := new(block)
	*b = v
	return b
}

func (a *Allocator) recycle(b *block) {
	a.keepBlock(b)
	*b = block{stamp: b.stamp} // saved already, if the journal is on
	a.spare = append(a.spare, b)
	if a.j.on {
		a.j.spare = append(a.j.spare, spareUndo{b: b, push: true})
	}
}

func (p *blockPool) id() PoolID {
	if p.owner == nil {
		return DefaultPool
	}
	return p.owner.id
}

// statsOf returns the per-pool stats a block pool's changes go to.
func (a *Allocator) statsOf(p *blockPool) *Stats {
	if p.owner == nil {
		return &a.defaultStats
	}
	a.keepPool(p)
	return &p.owner.stats
}

// each applies f to the allocator's stats and to the pool's.
func (a *Allocator) each(p *blockPool, f func(*Stats)) {
	f(&a.stats)
	f(a.statsOf(p))
}

// both returns the allocator's stats and the pool's, for the hot paths.
func (a *Allocator) both(p *blockPool) [2]*Stats {
	return [2]*Stats{&a.stats, a.statsOf(p)}
}

func (a *Allocator) record(act Action, addr Ptr, size int64, s device.Stream, pool PoolID, ctx context) {
	e := a.trace.next()
	e.Action, e.Addr, e.Size, e.Stream, e.Pool, e.Line, e.What = act, addr, size, s, pool, ctx.line, ctx.what
}

// getPool is get_pool: the private pool of the first capture filter that
// matches the stream, else a global pool.
func (a *Allocator) getPool(size int64, stream device.Stream) *blockPool {
	for _, c := range a.captures {
		if c.stream == stream {
			pp := a.pools[c.id]
			if size <= SmallSize {
				return &pp.small
			}
			return &pp.large
		}
	}
	if size <= SmallSize {
		return &a.small
	}
	return &a.large
}

// Malloc allocates n bytes for use on stream (DeviceCachingAllocator::
// malloc). It goes to a private pool when a BeginAllocateToPool filter
// matches the stream. A zero-byte request returns address 0 and allocates
// nothing, as PyTorch. Malloc is failure-atomic: when it returns an error,
// blocks, segments and stats are as before the call; only the oom trace
// entry and NumOOMs record the failure.
func (a *Allocator) Malloc(n int64, stream device.Stream) (Ptr, error) {
	if n < 0 {
		return 0, fmt.Errorf("malloc %d bytes: negative size", n)
	}
	if n == 0 {
		return 0, nil
	}
	size := a.roundSize(n)
	pool := a.getPool(size, stream)
	allocSize := allocationSize(size)
	b := a.getFreeBlock(pool, stream, size)
	if b == nil {
		var err error
		if b, err = a.allocBlock(pool, stream, allocSize); err != nil {
			return 0, err
		}
	}
	if b == nil {
		var err error
		if b, err = a.mallocFallback(pool, stream, n, size, allocSize); err != nil {
			return 0, err
		}
	}
	return a.allocFoundBlock(b, size, n, stream, a.shouldSplit(b, size)).ptr, nil
}

// mallocFallback runs the rare steps of malloc after a failed segment
// malloc: release oversize cached blocks and retry, then (outside capture)
// release every cached unsplit block and retry, then fail with an OOM.
//
// It is failure-atomic. When even releasing everything could not make
// room, it releases nothing. Otherwise it marks the journal; when the
// retries fail anyway (a fragmented device), it undoes to the mark and asks the device again for each segment it released: such segments
// hold no allocated block, so one that comes back at another address is
// moved there, and one the device refuses is dropped (segment_free), as
// PyTorch would have left it.
func (a *Allocator) mallocFallback(pool *blockPool, stream device.Stream, n, size, allocSize int64) (*block, error) {
	free, _ := a.src.MemInfo()
	if free+a.releasable(pool, stream, size) >= allocSize {
		m := a.Mark()
		a.released = []Ptr{}
		b, err := a.retryAfterRelease(pool, stream, size, allocSize)
		released := a.released
		a.released = nil
		if err == nil && b != nil {
			if m.opened {
				a.Commit()
			}
			return b, nil
		}
		a.Undo(m)
		if rerr := a.reacquire(released); rerr != nil && err == nil {
			err = rerr
		}
		pool = a.getPool(size, stream) // the private pools were replaced
		if err != nil {
			return nil, err
		}
	}
	return nil, a.oom(pool, stream, n, size, allocSize)
}

// reacquire gets back from the device the segments a failed fallback
// released, in the reverse order, after the state before the fallback was
// put back.
func (a *Allocator) reacquire(released []Ptr) error {
	for _, base := range slices.Backward(released) {
		i := a.segIndex(base)
		if i < 0 {
			continue
		}
		seg := a.segs[i]
		b := seg.head
		p, err := a.src.MallocSegment(seg.size)
		if err != nil {
			if !errors.Is(err, device.ErrOutOfMemory) {
				return fmt.Errorf("malloc segment of %d bytes: %w", seg.size, err)
			}
			a.dropSegment(b)
			continue
		}
		if p == base {
			continue
		}
		a.freeRemove(b.pool, b)
		a.deleteSeg(i)
		a.keepSeg(seg)
		a.keepBlock(b)
		seg.base, b.ptr = p, p
		j, _ := a.searchSegs(p)
		a.insertSeg(j, seg)
		a.freeInsert(b.pool, b)
	}
	return nil
}

// releasable is the most the fallback steps could give back to the device.
func (a *Allocator) releasable(pool *blockPool, stream device.Stream, size int64) int64 {
	var sum int64
	whole := func(b *block) {
		if !b.isSplit() {
			sum += b.size
		}
	}
	if len(a.captures) > 0 {
		if a.maxSplit != math.MaxInt64 {
			pool.free.each(func(b *block) {
				if b.stream == stream && b.size >= a.maxSplit {
					whole(b)
				}
			})
		}
		return sum
	}
	a.large.free.each(whole)
	a.small.free.each(whole)
	for _, pp := range a.pools {
		if pp.useCount == 0 {
			pp.large.free.each(whole)
			pp.small.free.each(whole)
		}
	}
	return sum
}

func (a *Allocator) retryAfterRelease(pool *blockPool, stream device.Stream, size, allocSize int64) (*block, error) {
	ok, err := a.releaseAvailableCachedBlocks(pool, stream, size)
	if err != nil {
		return nil, err
	}
	if ok {
		if b, err := a.allocBlock(pool, stream, allocSize); b != nil || err != nil {
			return b, err
		}
	}
	if len(a.captures) > 0 {
		return nil, nil
	}
	a.stats.NumAllocRetries++
	if err := a.releaseCachedBlocks(); err != nil {
		return nil, err
	}
	return a.allocBlock(pool, stream, allocSize)
}

// oom records the failure and builds PyTorch's message.
func (a *Allocator) oom(pool *blockPool, stream device.Stream, n, size, allocSize int64) error {
	free, total := a.src.MemInfo()
	a.trace.add(TraceEntry{Action: ActionOOM, Size: size, Stream: stream, Pool: pool.id(), DeviceFree: free, Line: a.ctx.line, What: a.ctx.what})
	a.stats.NumOOMs++
	a.statsOf(pool).NumOOMs++
	allocated := a.stats.AllocatedBytes[Aggregate].Current
	reserved := a.stats.ReservedBytes[Aggregate].Current
	// PyTorch's "allocated in private pools" sums the free blocks cached
	// in private pools.
	var inPrivate int64
	for _, pp := range a.pools {
		pp.large.free.each(func(b *block) { inPrivate += b.size })
		pp.small.free.each(func(b *block) { inPrivate += b.size })
	}
	privateMsg := ""
	if inPrivate > 0 {
		privateMsg = "with " + FormatSize(inPrivate) + " allocated in private pools (e.g., CUDA Graphs), "
	}
	msg := fmt.Sprintf("CUDA out of memory. Tried to allocate %s. GPU %d has a total capacity of %s of which %s is free. "+
		"Of the allocated memory %s is allocated by PyTorch, %sand %s is reserved by PyTorch but unallocated. "+
		"If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  "+
		"See documentation for Memory Management  (https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf)",
		FormatSize(allocSize), a.device, FormatSize(total), FormatSize(free),
		FormatSize(allocated+inPrivate), privateMsg, FormatSize(reserved-allocated-inPrivate))
	return &OutOfMemoryError{Requested: n, AllocSize: allocSize, Stream: stream, Pool: pool.id(), Msg: msg}
}

// FormatSize is c10's format_size: bytes up to 1 KiB, then KiB, MiB, GiB
// with two decimals.
func FormatSize(n int64) string {
	switch {
	case n <= 1024:
		return fmt.Sprintf("%d bytes", n)
	case n <= 1<<20:
		return fmt.Sprintf("%.2f KiB", float64(n)/1024)
	case n <= 1<<30:
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	default:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	}
}

// getFreeBlock is get_free_block: best fit on (stream, size, address), with
// the oversize rules, taking the block out of the free set.
func (a *Allocator) getFreeBlock(pool *blockPool, stream device.Stream, size int64) *block {
	b := pool.free.lowerBound(stream, size)
	if b == nil || b.stream != stream {
		return nil
	}
	if size < a.maxSplit && b.size >= a.maxSplit {
		return nil
	}
	if size >= a.maxSplit && b.size >= size+LargeBuffer {
		return nil
	}
	a.freeRemove(pool, b)
	return b
}

// allocBlock is alloc_block: a new segment from the device, as one
// unsplit block not yet in any free set. It returns (nil, nil) when the
// device is out of memory.
func (a *Allocator) allocBlock(pool *blockPool, stream device.Stream, allocSize int64) (*block, error) {
	p, err := a.src.MallocSegment(allocSize)
	if err != nil {
		if errors.Is(err, device.ErrOutOfMemory) {
			return nil, nil
		}
		return nil, fmt.Errorf("malloc segment of %d bytes: %w", allocSize, err)
	}
	if pool.owner != nil {
		a.keepPool(pool)
		pool.owner.mallocCount++
	}
	seg := &segment{base: p, size: allocSize, pool: pool, stream: stream, ctx: a.ctx, stamp: a.stamp()}
	b := a.newBlock(block{ptr: p, size: allocSize, stream: stream, pool: pool, seg: seg})
	seg.head = b
	i, _ := a.searchSegs(p)
	a.insertSeg(i, seg)
	a.each(pool, func(s *Stats) {
		s.Segment.increase(pool.small, 1)
		s.ReservedBytes.increase(pool.small, allocSize)
		if allocSize >= a.maxSplit {
			s.OversizeSegments.increase(1)
		}
		s.NumDeviceAlloc++
	})
	a.record(ActionSegmentAlloc, p, allocSize, stream, pool.id(), a.ctx)
	return b, nil
}

// searchSegs is the position of the segment based at p in a.segs (sorted
// by base), and whether it is there.
func (a *Allocator) searchSegs(p Ptr) (int, bool) {
	return slices.BinarySearchFunc(a.segs, p, func(s *segment, p Ptr) int { return cmp.Compare(s.base, p) })
}

// allocFoundBlock is alloc_found_block: take size bytes from the front of
// the free block b (split off the rest when split), mark it allocated for a
// request of orig bytes and record the alloc.
func (a *Allocator) allocFoundBlock(b *block, size, orig int64, stream device.Stream, split bool) *block {
	return a.allocFound(b, size, orig, stream, split, true)
}

// allocFound is allocFoundBlock; a restore's carving passes remFree false
// to keep the remainder out of the free set, as it takes it at once.
func (a *Allocator) allocFound(b *block, size, orig int64, stream device.Stream, split, remFree bool) *block {
	pool := b.pool
	alreadySplit := b.isSplit()
	if split {
		rem := b
		b = a.newBlock(block{ptr: rem.ptr, size: size, stream: stream, pool: pool, seg: rem.seg, prev: rem.prev, next: rem})
		if b.prev != nil {
			a.keepBlock(b.prev)
			b.prev.next = b
		} else {
			a.keepSeg(b.seg)
			b.seg.head = b
		}
		a.keepBlock(rem)
		rem.prev = b
		rem.ptr += Ptr(size)
		rem.size -= size
		if remFree {
			a.freeInsert(pool, rem)
		}
		for _, s := range a.both(pool) {
			if alreadySplit {
				s.InactiveSplitBytes.decrease(pool.small, size)
			} else {
				s.InactiveSplitBytes.increase(pool.small, rem.size)
				s.InactiveSplit.increase(pool.small, 1)
			}
		}
	} else if alreadySplit {
		for _, s := range a.both(pool) {
			s.InactiveSplitBytes.decrease(pool.small, b.size)
			s.InactiveSplit.decrease(pool.small, 1)
		}
	}
	a.keepBlock(b)
	b.allocated = true
	b.requested = orig
	b.ctx = a.ctx
	a.record(ActionAlloc, b.ptr, orig, b.stream, pool.id(), a.ctx)
	a.putAllocated(b.ptr, b)
	for _, s := range a.both(pool) {
		s.Allocation.increase(pool.small, 1)
		s.AllocatedBytes.increase(pool.small, b.size)
		s.Active.increase(pool.small, 1)
		s.ActiveBytes.increase(pool.small, b.size)
		s.RequestedBytes.increase(pool.small, orig)
		if b.size >= a.maxSplit {
			s.OversizeAllocations.increase(1)
		}
	}
	return b
}

// Free frees an allocated block (free(): free_requested, then at once
// free_completed, merging with free neighbours of its segment) back into
// the pool it was allocated from. Freeing address 0 does nothing.
func (a *Allocator) Free(p Ptr) error {
	if p == 0 {
		return nil
	}
	b := a.allocated.get(p)
	if b == nil {
		return fmt.Errorf("free %#x: not an allocated block", uint64(p))
	}
	a.free(b)
	return nil
}

func (a *Allocator) free(b *block) {
	a.delAllocated(b.ptr)
	pool := b.pool
	a.keepBlock(b)
	b.allocated = false
	for _, s := range a.both(pool) {
		s.Allocation.decrease(pool.small, 1)
		s.AllocatedBytes.decrease(pool.small, b.size)
	}
	a.record(ActionFreeRequested, b.ptr, b.requested, b.stream, pool.id(), a.ctx)
	a.freeBlock(b)
}

// freeBlock is free_block.
func (a *Allocator) freeBlock(b *block) {
	pool := b.pool
	a.record(ActionFreeCompleted, b.ptr, b.requested, b.stream, pool.id(), a.ctx)
	a.keepBlock(b)
	b.ctx = context{}
	origSize, requested := b.size, b.requested
	var netBlocks, netBytes int64
	for _, c := range [2]*block{b.prev, b.next} {
		if sub := a.tryMerge(b, c); sub > 0 {
			netBlocks--
			netBytes -= sub
		}
	}
	a.freeInsert(pool, b)
	if b.isSplit() {
		netBlocks++
		netBytes += b.size
	}
	for _, s := range a.both(pool) {
		addStat(&s.InactiveSplit, pool.small, netBlocks)
		addStat(&s.InactiveSplitBytes, pool.small, netBytes)
		s.Active.decrease(pool.small, 1)
		s.ActiveBytes.decrease(pool.small, origSize)
		s.RequestedBytes.decrease(pool.small, requested)
	}
}

func addStat(s *StatArray, small bool, n int64) {
	if n >= 0 {
		s.increase(small, n)
	} else {
		s.decrease(small, -n)
	}
}

// tryMerge is try_merge_blocks: dst absorbs its free neighbour src.
func (a *Allocator) tryMerge(dst, src *block) int64 {
	if src == nil || src.allocated {
		return 0
	}
	a.freeRemove(src.pool, src)
	a.keepBlock(dst)
	if dst.prev == src {
		dst.ptr = src.ptr
		dst.prev = src.prev
		if dst.prev != nil {
			a.keepBlock(dst.prev)
			dst.prev.next = dst
		} else {
			a.keepSeg(dst.seg)
			dst.seg.head = dst
		}
	} else {
		dst.next = src.next
		if dst.next != nil {
			a.keepBlock(dst.next)
			dst.next.prev = dst
		}
	}
	sub := src.size
	dst.size += sub
	a.recycle(src)
	return sub
}

// releaseBlock is release_block: give an unsplit free block's segment back
// to the device.
func (a *Allocator) releaseBlock(b *block) error {
	base := b.seg.base
	if err := a.src.FreeSegment(base); err != nil {
		return fmt.Errorf("free segment %#x: %w", uint64(base), err)
	}
	if a.released != nil {
		a.released = append(a.released, base)
	}
	a.dropSegment(b)
	return nil
}

// dropSegment forgets the segment of an unsplit free block that the device
// no longer holds.
func (a *Allocator) dropSegment(b *block) {
	seg, pool := b.seg, b.pool
	// As release_block: the context of the call that frees, else that of
	// the segment's malloc.
	ctx := a.ctx
	if ctx == (context{}) {
		ctx = seg.ctx
	}
	a.record(ActionSegmentFree, seg.base, seg.size, seg.stream, pool.id(), ctx)
	a.freeRemove(pool, b)
	if i := a.segIndex(seg.base); i >= 0 {
		a.deleteSeg(i)
	}
	if pool.owner != nil {
		a.keepPool(pool)
		pool.owner.mallocCount--
	}
	a.each(pool, func(s *Stats) {
		s.Segment.decrease(pool.small, 1)
		s.ReservedBytes.decrease(pool.small, seg.size)
		if seg.size >= a.maxSplit {
			s.OversizeSegments.decrease(1)
		}
		s.NumDeviceFree++
	})
	a.recycle(b)
}

// releaseAvailableCachedBlocks is release_available_cached_blocks: with
// max_split_size set, free one cached oversize block big enough for the
// request, or else the largest ones until enough is released.
func (a *Allocator) releaseAvailableCachedBlocks(pool *blockPool, stream device.Stream, size int64) (bool, error) {
	if a.maxSplit == math.MaxInt64 {
		return false, nil
	}
	key := max(size, a.maxSplit)
	if b := pool.free.lowerBound(stream, key); b != nil && b.stream == stream && !b.isSplit() {
		return true, a.releaseBlock(b)
	}
	var released int64
	cur := pool.free.before(stream, key)
	for cur != nil && released < key && cur.size >= a.maxSplit && cur.stream == stream {
		prev := pool.free.predecessor(cur)
		if !cur.isSplit() {
			released += cur.size
			if err := a.releaseBlock(cur); err != nil {
				return false, err
			}
		}
		cur = prev
	}
	return released >= key, nil
}

// releaseBlocks is release_blocks: free every unsplit free block of a pool.
func (a *Allocator) releaseBlocks(pool *blockPool) error {
	var whole []*block
	pool.free.each(func(b *block) {
		if !b.isSplit() {
			whole = append(whole, b)
		}
	})
	for _, b := range whole {
		if err := a.releaseBlock(b); err != nil {
			return err
		}
	}
	return nil
}

// releaseCachedBlocks is release_cached_blocks: the global pools' whole
// free segments, then those of freeable private pools, deleting the pools
// left without segments.
func (a *Allocator) releaseCachedBlocks() error {
	if err := a.releaseBlocks(&a.large); err != nil {
		return err
	}
	if err := a.releaseBlocks(&a.small); err != nil {
		return err
	}
	// Sorted in a buffer on the stack: a recording empties the cache, and
	// a program has a pool or a few.
	var buf [8]PoolID
	for _, id := range a.appendSortedPoolIDs(buf[:0]) {
		pp := a.pools[id]
		if pp.useCount != 0 {
			continue
		}
		if err := a.releaseBlocks(&pp.large); err != nil {
			return err
		}
		if err := a.releaseBlocks(&pp.small); err != nil {
			return err
		}
		if pp.mallocCount == 0 && !a.capturing(id) {
			a.deletePool(id)
		}
	}
	return nil
}

func (a *Allocator) capturing(id PoolID) bool {
	for _, c := range a.captures {
		if c.id == id {
			return true
		}
	}
	return false
}

func (a *Allocator) sortedPoolIDs() []PoolID {
	return a.appendSortedPoolIDs(make([]PoolID, 0, len(a.pools)))
}

// appendSortedPoolIDs appends the private pools' ids to ids, sorted.
func (a *Allocator) appendSortedPoolIDs(ids []PoolID) []PoolID {
	start := len(ids)
	for id := range a.pools {
		ids = append(ids, id)
	}
	slices.SortFunc(ids[start:], cmpPoolID)
	return ids
}

func cmpPoolID(x, y PoolID) int {
	if x.First != y.First {
		return cmp.Compare(x.First, y.First)
	}
	return cmp.Compare(x.Second, y.Second)
}

// EmptyCache is torch.cuda.empty_cache (release_cached_blocks): it gives
// back every whole free segment of the global pools and of private pools
// whose use count is 0, and deletes such pools once they hold no segment.
// An error means the device refused a free; the segments freed before it
// stay freed.
func (a *Allocator) EmptyCache() error {
	return a.releaseCachedBlocks()
}

// NewPoolID is graph_pool_handle(): a fresh private pool id (0, uid).
func (a *Allocator) NewPoolID() PoolID {
	a.nextUID++
	return PoolID{0, a.nextUID}
}

// BeginAllocateToPool routes later allocations on stream to the private
// pool id (beginAllocateToPool with a "this stream" filter), creating the
// pool or adding a use to it.
func (a *Allocator) BeginAllocateToPool(id PoolID, stream device.Stream) error {
	if id == DefaultPool {
		return fmt.Errorf("beginAllocateToPool: pool %v is the default pool", id)
	}
	if a.capturing(id) {
		return fmt.Errorf("beginAllocateToPool: already recording to mempool_id %v", id)
	}
	pp := a.pools[id]
	if pp == nil {
		pp = &privatePool{id: id, useCount: 1, stamp: a.stamp()}
		pp.small = blockPool{small: true, owner: pp}
		pp.large = blockPool{owner: pp}
		a.setPool(id, pp)
	} else {
		if pp.useCount <= 0 {
			return fmt.Errorf("beginAllocateToPool: pool %v was released (use count 0)", id)
		}
		a.keepPool(&pp.small)
		pp.useCount++
	}
	a.captures = append(a.captures, capture{id, stream})
	return nil
}

// EndAllocateToPool stops routing allocations to the pool id.
func (a *Allocator) EndAllocateToPool(id PoolID) error {
	for i, c := range a.captures {
		if c.id == id {
			a.captures = slices.Delete(a.captures, i, i+1)
			return nil
		}
	}
	return fmt.Errorf("endAllocatePool: not currently recording to mempool_id %v", id)
}

// ReleasePool drops one use of a private pool (releasePool). At use count 0
// the pool becomes freeable: EmptyCache frees its whole free segments.
func (a *Allocator) ReleasePool(id PoolID) error {
	pp := a.pools[id]
	if pp == nil {
		return fmt.Errorf("releasePool: could not find pool of id %v", id)
	}
	if pp.useCount <= 0 {
		return fmt.Errorf("releasePool: pool %v already released", id)
	}
	a.keepPool(&pp.small)
	pp.useCount--
	return nil
}

// PoolUseCount is a private pool's use count, and whether it exists.
func (a *Allocator) PoolUseCount(id PoolID) (int, bool) {
	pp := a.pools[id]
	if pp == nil {
		return 0, false
	}
	return pp.useCount, true
}

// Pools lists the private pools' ids in order.
func (a *Allocator) Pools() []PoolID { return a.sortedPoolIDs() }

// Stats returns the allocator's stats (torch.cuda.memory_stats).
func (a *Allocator) Stats() Stats { return a.stats }

// PoolStats returns the share of the stats of one pool: DefaultPool for
// the global pools, or a private pool's id. An unknown pool has zero stats.
func (a *Allocator) PoolStats(id PoolID) Stats {
	if id == DefaultPool {
		return a.defaultStats
	}
	if pp := a.pools[id]; pp != nil {
		return pp.stats
	}
	return Stats{}
}

// Trace returns the kept event log, oldest first.
func (a *Allocator) Trace() []TraceEntry { return a.trace.entries() }

// TraceDropped is how many of the oldest entries the bounded log forgot.
func (a *Allocator) TraceDropped() int64 { return a.trace.dropped() }
