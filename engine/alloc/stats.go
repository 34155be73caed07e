package alloc

// Stat is one of PyTorch's Stat counters: the current value, its peak, and
// the sums of increases and decreases since the allocator was made.
type Stat struct {
	Current, Peak, Allocated, Freed int64
}

func (s *Stat) increase(n int64) {
	s.Current += n
	s.Allocated += n
	s.Peak = max(s.Peak, s.Current)
}

func (s *Stat) decrease(n int64) {
	s.Current -= n
	s.Freed += n
}

// The indexes of a StatArray, PyTorch's StatType.
const (
	Aggregate = iota
	SmallPool
	LargePool
)

// StatArray is a Stat for all pools together (Aggregate), for small-pool
// blocks (SmallPool) and for large-pool blocks (LargePool). Private-pool
// blocks count in the same arrays, as in PyTorch.
type StatArray [3]Stat

func (s *StatArray) increase(small bool, n int64) {
	s[Aggregate].increase(n)
	s[kindIndex(small)].increase(n)
}

func (s *StatArray) decrease(small bool, n int64) {
	s[Aggregate].decrease(n)
	s[kindIndex(small)].decrease(n)
}

func kindIndex(small bool) int {
	if small {
		return SmallPool
	}
	return LargePool
}

// Stats are PyTorch's DeviceStats (torch.cuda.memory_stats) for one
// allocator, or for one pool of it.
type Stats struct {
	// Allocation counts allocated blocks; Segment counts segments.
	Allocation, Segment StatArray
	// Active counts allocated blocks and blocks waiting for events
	// (always equal to Allocation here: no record_stream).
	Active StatArray
	// InactiveSplit counts free blocks that are pieces of a split segment.
	InactiveSplit StatArray
	// AllocatedBytes, ReservedBytes and ActiveBytes are in block (rounded)
	// and segment sizes; RequestedBytes in the callers' byte counts.
	AllocatedBytes, ReservedBytes, ActiveBytes, InactiveSplitBytes, RequestedBytes StatArray
	// OversizeAllocations and OversizeSegments count blocks and segments of
	// at least max_split_size.
	OversizeAllocations, OversizeSegments Stat
	// NumAllocRetries counts mallocs that had to free every cached block
	// and retry; NumOOMs counts failed mallocs.
	NumAllocRetries, NumOOMs int64
	// NumDeviceAlloc and NumDeviceFree count segment mallocs and frees.
	NumDeviceAlloc, NumDeviceFree int64
}
