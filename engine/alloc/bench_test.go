package alloc

import (
	"testing"

	"github.com/cgtviz/cgtviz/engine/device"
)

// BenchmarkMallocFreeCached allocates and frees a cached block: the steady
// state of an eager program (best-fit search, split, merge, two trace
// entries... three with the segment's).
func BenchmarkMallocFreeCached(b *testing.B) {
	a := New(newFakeDevice(1<<40), 0, Options{})
	// Some free blocks around so the search is not trivial.
	var keep []Ptr
	for i := 0; i < 64; i++ {
		keep = append(keep, mustMalloc(b, a, int64(512*(i+1)), 0))
	}
	for i := 0; i < len(keep); i += 2 {
		mustFree(b, a, keep[i])
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		p, err := a.Malloc(70_000, device.DefaultStream)
		if err != nil {
			b.Fatal(err)
		}
		if err := a.Free(p); err != nil {
			b.Fatal(err)
		}
	}
}

// pool10k makes a private pool of 10,000 blocks, about half of them
// allocated.
func pool10k(b *testing.B) (*Allocator, PoolID, []Ptr) {
	a := New(newFakeDevice(1<<40), 0, Options{})
	id := a.NewPoolID()
	if err := a.BeginAllocateToPool(id, device.SideStream); err != nil {
		b.Fatal(err)
	}
	var ptrs []Ptr
	for len(ptrs) < 10_000 {
		ptrs = append(ptrs, mustMalloc(b, a, int64(512*(1+len(ptrs)%7)), device.SideStream))
	}
	var live []Ptr
	for i, p := range ptrs {
		if i%2 == 0 {
			mustFree(b, a, p)
		} else {
			live = append(live, p)
		}
	}
	if err := a.EndAllocateToPool(id); err != nil {
		b.Fatal(err)
	}
	return a, id, live
}

func BenchmarkCheckpoint10k(b *testing.B) {
	a, id, _ := pool10k(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := a.GetCheckpointState(id); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRestore10k restores a 10,000-block checkpoint over a pool whose
// blocks were all freed and partly re-allocated differently.
func BenchmarkRestore10k(b *testing.B) {
	a, id, live := pool10k(b)
	st, err := a.GetCheckpointState(id)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := a.SetCheckpointPoolState(st, nil, live); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkClone10k copies an allocator holding a 10,000-block pool.
func BenchmarkClone10k(b *testing.B) {
	a, _, _ := pool10k(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		a.Clone(a.src)
	}
}

// BenchmarkCloneSmall copies an allocator of one private pool, two
// segments and a few blocks: what the engine's rollback pays before every
// tensor record and every warmup or recording.
func BenchmarkCloneSmall(b *testing.B) {
	a := New(newFakeDevice(1<<40), 0, Options{})
	id := a.NewPoolID()
	if err := a.BeginAllocateToPool(id, 1); err != nil {
		b.Fatal(err)
	}
	mustMalloc(b, a, 4096, 1)
	if err := a.EndAllocateToPool(id); err != nil {
		b.Fatal(err)
	}
	p := mustMalloc(b, a, 40000, 0)
	mustMalloc(b, a, 400, 0)
	mustFree(b, a, p)
	b.ReportAllocs()
	for b.Loop() {
		a.Clone(a.src)
	}
}
