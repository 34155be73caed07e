package alloc

import "math/bits"

// The sizing constants of CUDACachingAllocator.cpp.
const (
	// MinBlockSize is the rounding unit and the smallest block (kMinBlockSize).
	MinBlockSize = 512
	// SmallSize is the largest rounded size served by a small pool (kSmallSize).
	SmallSize = 1 << 20
	// SmallBuffer is the size of every small-pool segment (kSmallBuffer).
	SmallBuffer = 2 << 20
	// MinLargeAlloc is the rounded size from which a large request gets a
	// segment of its own size instead of a 20 MiB one (kMinLargeAlloc).
	MinLargeAlloc = 10 << 20
	// LargeBuffer is the segment size for requests of 1 to 10 MiB, and the
	// slack an oversize request may waste on a cached block (kLargeBuffer,
	// max_non_split_rounding_size's default).
	LargeBuffer = 20 << 20
	// RoundLarge is the rounding unit of segments of 10 MiB and more
	// (kRoundLarge).
	RoundLarge = 2 << 20
	// RoundupPower2Intervals is the number of roundup_power2_divisions
	// buckets; bucket i covers sizes in [2^(20+i), 2^(21+i)), bucket 0 also
	// everything below 1 MiB and bucket 15 everything above.
	RoundupPower2Intervals = 16
)

// roundSize is round_size: the block size a request of n bytes gets.
func (a *Allocator) roundSize(n int64) int64 {
	if n < MinBlockSize {
		return MinBlockSize
	}
	if d := a.opts.RoundupPower2Divisions[power2Bucket(n)]; d > 1 && n > MinBlockSize*int64(d) {
		return roundupPower2NextDivision(n, d)
	}
	return MinBlockSize * ((n + MinBlockSize - 1) / MinBlockSize)
}

// power2Bucket is the roundup_power2_divisions bucket of a size.
func power2Bucket(n int64) int {
	log := 63 - bits.LeadingZeros64(uint64(n))
	i := 0
	if log > 20 {
		i = log - 20
	}
	return min(i, RoundupPower2Intervals-1)
}

// roundupPower2NextDivision splits [2^k, 2^(k+1)) into d equal steps and
// rounds n up to the next step; powers of two are kept.
func roundupPower2NextDivision(n int64, d int) int64 {
	u := uint64(n)
	if u&(u-1) == 0 {
		return n
	}
	floor := uint64(1) << (63 - bits.LeadingZeros64(u))
	step := floor >> (63 - bits.LeadingZeros64(uint64(d)))
	if step == 0 {
		return int64(floor << 1)
	}
	r := u &^ (step - 1)
	if r == u {
		return n
	}
	return int64(r + step)
}

// allocationSize is get_allocation_size: the cudaMalloc size of a new
// segment for a block of the given rounded size.
func allocationSize(size int64) int64 {
	switch {
	case size <= SmallSize:
		return SmallBuffer
	case size < MinLargeAlloc:
		return LargeBuffer
	default:
		return RoundLarge * ((size + RoundLarge - 1) / RoundLarge)
	}
}

// shouldSplit is should_split: whether the rest of a free block, after size
// bytes are taken from its front, becomes a block of its own.
func (a *Allocator) shouldSplit(b *block, size int64) bool {
	rem := b.size - size
	if b.pool.small {
		return rem >= MinBlockSize
	}
	return size < a.maxSplit && rem > SmallSize
}
