package alloc

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/cgtviz/cgtviz/engine/device"
)

func TestRoundSize(t *testing.T) {
	div := func(bucket, d int) Options {
		var o Options
		o.RoundupPower2Divisions[bucket] = d
		return o
	}
	for _, c := range []struct {
		n    int64
		opts Options
		want int64
	}{
		{1, Options{}, 512},
		{511, Options{}, 512},
		{512, Options{}, 512},
		{513, Options{}, 1024},
		{1 << 20, Options{}, 1 << 20},
		{1<<20 + 1, Options{}, 1049088},
		{10<<20 + 1, Options{}, 10<<20 + 512},
		{25_000_000, Options{}, 25_000_448},
		{100_000_000, Options{}, 100_000_256},
		// roundup_power2_divisions, allocator.md §1.2.
		{1<<20 + 100_000, div(0, 4), 1<<20 + 1<<18},
		{5<<20 + 1, div(2, 4), 6 << 20},
		{3<<20 + 7, div(1, 8), 3<<20 + 1<<18},
		{4 << 20, div(2, 4), 4 << 20},
		// Not more than 512*divisions: plain rounding.
		{1500, div(0, 4), 1536},
	} {
		a := New(newFakeDevice(1<<40), 0, c.opts)
		if got := a.roundSize(c.n); got != c.want {
			t.Errorf("round_size(%d) = %d, want %d", c.n, got, c.want)
		}
	}
	// roundup_power2_next_division alone: allocator.md §1.2's examples.
	for _, c := range []struct {
		n    int64
		d    int
		want int64
	}{
		{1200, 4, 1280}, {5<<20 + 1, 4, 6 << 20}, {3<<20 + 7, 8, 3<<20 + 1<<18}, {1 << 30, 4, 1 << 30}, {3, 4, 4}, {1536, 2, 1536}, {1537, 2, 2048},
	} {
		if got := roundupPower2NextDivision(c.n, c.d); got != c.want {
			t.Errorf("roundup_power2_next_division(%d, %d) = %d, want %d", c.n, c.d, got, c.want)
		}
	}
}

// TestAllocationSize is the table of allocator.md §1.4: rounded size,
// pool, segment size and whether the new segment is split.
func TestAllocationSize(t *testing.T) {
	for _, c := range []struct {
		n       int64
		rounded int64
		small   bool
		segment int64
		split   bool
	}{
		{1, 512, true, 2 * MiB, true},
		{513, 1024, true, 2 * MiB, true},
		{MiB, MiB, true, 2 * MiB, true},
		{MiB + 1, 1049088, false, 20 * MiB, true},
		{9 * MiB, 9 * MiB, false, 20 * MiB, true},
		{10 * MiB, 10 * MiB, false, 10 * MiB, false},
		{10*MiB + 1, 10*MiB + 512, false, 12 * MiB, true},
		{11*MiB + 1, 11*MiB + 512, false, 12 * MiB, false},
		{25_000_000, 25_000_448, false, 24 * MiB, false},
		{100_000_000, 100_000_256, false, 96 * MiB, false},
	} {
		a := New(newFakeDevice(1<<40), 0, Options{})
		p := mustMalloc(t, a, c.n, device.DefaultStream)
		check(t, a)
		segs := a.Segments()
		if len(segs) != 1 {
			t.Fatalf("%d: %d segments", c.n, len(segs))
		}
		s := segs[0]
		if s.Small != c.small || s.Size != c.segment || s.Blocks[0].Addr != p || s.Blocks[0].Size != c.rounded && c.split {
			t.Errorf("%d: segment %+v, want small=%v size=%d", c.n, s, c.small, c.segment)
		}
		if split := len(s.Blocks) == 2; split != c.split {
			t.Errorf("%d: split = %v, want %v (%s)", c.n, split, c.split, layout(segs))
		}
		if s.Blocks[0].RequestedSize != c.n {
			t.Errorf("%d: requested %d", c.n, s.Blocks[0].RequestedSize)
		}
	}
}

// TestObservedLayout is pytorch-cgt.md §2.6: one capture into a fresh pool.
func TestObservedLayout(t *testing.T) {
	a := New(newFakeDevice(1<<40), 0, Options{})
	id := a.NewPoolID()
	if id != (PoolID{0, 1}) {
		t.Fatalf("first pool id %v", id)
	}
	if err := a.BeginAllocateToPool(id, device.SideStream); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int64{1, 512, 513, 1048576, 1048577, 5 * MiB, 10 * MiB, 10*MiB + 1, 30*MiB + 3} {
		mustMalloc(t, a, n, device.SideStream)
		check(t, a)
	}
	if err := a.EndAllocateToPool(id); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"2097152: 512/1 A 512/512 A 1024/513 A 1048576/1048576 A 1046528 F",
		"20971520: 1049088/1048577 A 5242880/5242880 A 10485760/10485760 A 4193792 F",
		"12582912: 10486272/10485761 A 2096640 F",
		"33554432: 31457792/31457283 A 2096640 F",
	}
	if got := layout(a.PoolSegments(id)); !equalStrings(got, want) {
		t.Errorf("layout\n got %q\nwant %q", got, want)
	}
	if segs := a.PoolSegments(DefaultPool); len(segs) != 0 {
		t.Errorf("default pool has %d segments", len(segs))
	}
	st := a.PoolStats(id)
	if st.Segment[Aggregate].Current != 4 || st.Allocation[Aggregate].Current != 9 || st.Segment[SmallPool].Current != 1 {
		t.Errorf("pool stats %+v", st)
	}
}

type op struct {
	kind   byte // 'a' alloc, 'f' free, 'e' empty cache
	id     int
	n      int64
	stream device.Stream
}

func TestSequences(t *testing.T) {
	for _, c := range []struct {
		name string
		opts Options
		ops  []op
		want []string
		// segFrees is the number of segments given back to the device.
		segFrees int
		// descending: the device hands out decreasing addresses.
		descending bool
	}{
		{
			name: "free merges back to one block and is reused at the same address",
			ops:  []op{{'a', 1, 1000, 0}, {'a', 2, 3000, 0}, {'f', 1, 0, 0}, {'f', 2, 0, 0}, {'a', 3, 1500, 0}},
			want: []string{"2097152: 1536/1500 A 2095616 F"},
		},
		{
			name: "best fit takes the smallest free block, then the lowest address",
			ops: []op{
				{'a', 1, 4096, 0}, {'a', 2, 512, 0}, {'a', 3, 2048, 0}, {'a', 4, 512, 0}, {'a', 5, 2048, 0}, {'a', 6, 512, 0},
				{'f', 1, 0, 0}, {'f', 3, 0, 0}, {'f', 5, 0, 0}, {'a', 7, 1500, 0},
			},
			want: []string{"2097152: 4096 F 512/512 A 1536/1500 A 512 F 512/512 A 2048 F 512/512 A 2087424 F"},
		},
		{
			// H200 run 1, seq00: of two whole free 80 MiB segments the
			// one made later had the lower address and took the request.
			name: "best fit between equal blocks of two segments takes the lower address, not the older segment",
			ops: []op{
				{'a', 1, 82946680, 0}, {'a', 2, 82639245, 0}, {'f', 1, 0, 0}, {'f', 2, 0, 0}, {'a', 3, 26411116, 0},
			},
			descending: true,
			want:       []string{"83886080: 26411520/26411116 A 57474560 F", "83886080: 83886080 F"},
		},
		{
			name: "free blocks are never shared across streams",
			ops:  []op{{'a', 1, 1000, 0}, {'f', 1, 0, 0}, {'a', 2, 1000, 1}},
			want: []string{"2097152: 2097152 F", "2097152: 1024/1000 A 2096128 F"},
		},
		{
			name: "large remainder of at most 1 MiB is not split",
			ops:  []op{{'a', 1, 11*MiB + 1, 0}, {'a', 2, 19 * MiB, 0}, {'a', 3, 19*MiB + 512*1024, 0}},
			want: []string{"12582912: 12582912/11534337 A", "20971520: 20971520/19922944 A", "20971520: 20971520/20447232 A"},
		},
		{
			name: "small pool splits remainders of 512 bytes",
			ops:  []op{{'a', 1, MiB, 0}, {'a', 2, MiB - 512, 0}, {'a', 3, 100, 0}},
			want: []string{"2097152: 1048576/1048576 A 1048064/1048064 A 512/100 A"},
		},
		{
			name: "a large free block serves a small pool request only through its own pool",
			ops:  []op{{'a', 1, 5 * MiB, 0}, {'f', 1, 0, 0}, {'a', 2, 1000, 0}},
			want: []string{"20971520: 20971520 F", "2097152: 1024/1000 A 2096128 F"},
		},
		{
			name: "empty_cache gives back whole free segments only",
			ops:  []op{{'a', 1, 5 * MiB, 0}, {'a', 2, 1000, 0}, {'a', 3, 12 * MiB, 0}, {'f', 1, 0, 0}, {'f', 3, 0, 0}, {'e', 0, 0, 0}},
			want: []string{"2097152: 1024/1000 A 2096128 F"}, segFrees: 1, // 12 MiB fits in the 20 MiB segment
		},
		{
			name: "max_split_size: oversize blocks are not split and small requests never take them",
			opts: Options{MaxSplitSize: 40 * MiB},
			ops:  []op{{'a', 1, 50 * MiB, 0}, {'f', 1, 0, 0}, {'a', 2, 30 * MiB, 0}, {'a', 3, 45 * MiB, 0}},
			want: []string{"52428800: 52428800/47185920 A", "31457280: 31457280/31457280 A"},
		},
		{
			name: "max_split_size: an oversize request does not waste 20 MiB or more",
			opts: Options{MaxSplitSize: 40 * MiB},
			ops:  []op{{'a', 1, 70 * MiB, 0}, {'f', 1, 0, 0}, {'a', 2, 50 * MiB, 0}, {'a', 3, 45 * MiB, 0}},
			want: []string{"73400320: 73400320 F", "52428800: 52428800/52428800 A", "48234496: 48234496/47185920 A"},
		},
		{
			name: "max_split_size: a block below it still splits",
			opts: Options{MaxSplitSize: 40 * MiB},
			ops:  []op{{'a', 1, 30 * MiB, 0}, {'f', 1, 0, 0}, {'a', 2, 5 * MiB, 0}},
			want: []string{"31457280: 5242880/5242880 A 26214400 F"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			dev := newFakeDevice(1 << 40)
			dev.descending = c.descending
			a := New(dev, 0, c.opts)
			ptrs := map[int]Ptr{}
			for _, o := range c.ops {
				switch o.kind {
				case 'a':
					ptrs[o.id] = mustMalloc(t, a, o.n, o.stream)
				case 'f':
					mustFree(t, a, ptrs[o.id])
				case 'e':
					if err := a.EmptyCache(); err != nil {
						t.Fatal(err)
					}
				}
				check(t, a)
			}
			got := layout(a.Segments())
			if !equalStrings(got, c.want) {
				t.Errorf("layout\n got %q\nwant %q", got, c.want)
			}
			if dev.frees != c.segFrees {
				t.Errorf("%d segments freed, want %d", dev.frees, c.segFrees)
			}
		})
	}
}

func TestSegmentsByAddress(t *testing.T) {
	a := New(newFakeDevice(1<<40), 0, Options{})
	mustMalloc(t, a, 5*MiB, 0)
	mustMalloc(t, a, 100, 0)
	segs := a.Segments()
	if len(segs) != 2 || segs[0].Addr >= segs[1].Addr || segs[0].Small || !segs[1].Small {
		t.Fatalf("segments %+v", segs)
	}
}

func TestFreeErrors(t *testing.T) {
	a := New(newFakeDevice(1<<40), 0, Options{})
	p := mustMalloc(t, a, 100, 0)
	mustFree(t, a, p)
	for _, q := range []Ptr{p, p + 512, 12345} {
		if err := a.Free(q); err == nil || !strings.Contains(err.Error(), "not an allocated block") {
			t.Errorf("free %#x: err %v", uint64(q), err)
		}
	}
	if _, err := a.Malloc(-1, 0); err == nil {
		t.Error("negative malloc succeeded")
	}
	if p, err := a.Malloc(0, 0); p != 0 || err != nil || len(a.Trace()) != 4 {
		t.Errorf("zero malloc: %v %v, %d entries", p, err, len(a.Trace()))
	}
	check(t, a)
}

func TestPrivatePoolLifecycle(t *testing.T) {
	dev := newFakeDevice(1 << 40)
	a := New(dev, 0, Options{})
	id := a.NewPoolID()
	if err := a.EndAllocateToPool(id); err == nil {
		t.Error("end without begin succeeded")
	}
	if err := a.ReleasePool(id); err == nil {
		t.Error("release of an unknown pool succeeded")
	}
	if err := a.BeginAllocateToPool(DefaultPool, 1); err == nil {
		t.Error("begin on the default pool succeeded")
	}
	if err := a.BeginAllocateToPool(id, device.SideStream); err != nil {
		t.Fatal(err)
	}
	if err := a.BeginAllocateToPool(id, device.SideStream); err == nil || !strings.Contains(err.Error(), "already recording") {
		t.Errorf("second begin: %v", err)
	}
	eager := mustMalloc(t, a, 1000, device.DefaultStream) // another stream: default pool
	x := mustMalloc(t, a, 1000, device.SideStream)
	y := mustMalloc(t, a, 3*MiB, device.SideStream)
	if pid, _ := a.BlockPool(x); pid != id {
		t.Errorf("capture allocation in pool %v", pid)
	}
	if pid, _ := a.BlockPool(eager); pid != DefaultPool {
		t.Errorf("eager allocation in pool %v", pid)
	}
	if err := a.EndAllocateToPool(id); err != nil {
		t.Fatal(err)
	}
	// After the capture, the side stream allocates from the default pool,
	// and a free returns the block to its own (private) pool.
	z := mustMalloc(t, a, 1000, device.SideStream)
	if pid, _ := a.BlockPool(z); pid != DefaultPool {
		t.Errorf("allocation after the capture in pool %v", pid)
	}
	mustFree(t, a, x)
	if len(a.PoolSegments(id)) != 2 {
		t.Fatalf("pool segments %v", layout(a.PoolSegments(id)))
	}
	// A live pool keeps its segments through empty_cache.
	if err := a.EmptyCache(); err != nil {
		t.Fatal(err)
	}
	if len(a.PoolSegments(id)) != 2 {
		t.Fatalf("empty_cache freed a live pool's segment")
	}
	if err := a.ReleasePool(id); err != nil {
		t.Fatal(err)
	}
	if err := a.ReleasePool(id); err == nil {
		t.Error("second release succeeded")
	}
	if _, err := a.GetCheckpointState(id); err == nil || !strings.Contains(err.Error(), "freeable") {
		t.Errorf("checkpoint of a freeable pool: %v", err)
	}
	if err := a.BeginAllocateToPool(id, device.SideStream); err == nil {
		t.Error("begin on a released pool succeeded")
	}
	// The freeable pool gives back its whole free segment; y keeps its
	// segment and the pool alive.
	if err := a.EmptyCache(); err != nil {
		t.Fatal(err)
	}
	check(t, a)
	if got := layout(a.PoolSegments(id)); len(got) != 1 {
		t.Fatalf("freeable pool after empty_cache: %q", got)
	}
	mustFree(t, a, y)
	if err := a.EmptyCache(); err != nil {
		t.Fatal(err)
	}
	check(t, a)
	if _, ok := a.PoolUseCount(id); ok || len(a.Pools()) != 0 {
		t.Errorf("pool not deleted: %v", a.Pools())
	}
	if a.Stats().Segment[Aggregate].Current != 2 { // eager and z, one per stream
		t.Errorf("segments left: %q", layout(a.Segments()))
	}
}

func TestTraceSizesAndOrder(t *testing.T) {
	a := New(newFakeDevice(1<<40), 0, Options{})
	a.SetContext(7, "call f")
	p := mustMalloc(t, a, 1000, 0)
	a.SetContext(8, "del x")
	mustFree(t, a, p)
	if err := a.EmptyCache(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range a.Trace() {
		got = append(got, strings.Join([]string{string(e.Action), itoa(int64(e.Addr - p)), itoa(e.Size), itoa(int64(e.Line)), e.What, itoa(e.Seq)}, " "))
	}
	want := []string{
		"segment_alloc 0 2097152 7 call f 0",
		"alloc 0 1000 7 call f 1",
		"free_requested 0 1000 8 del x 2",
		"free_completed 0 1000 8 del x 3",
		"segment_free 0 2097152 8 del x 4", // the freeing call's context, as PyTorch
	}
	if !equalStrings(got, want) {
		t.Errorf("trace\n got %q\nwant %q", got, want)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestTraceRingIsBounded(t *testing.T) {
	a := New(newFakeDevice(1<<40), 0, Options{TraceMax: 3000})
	for i := 0; i < 5000; i++ {
		mustFree(t, a, mustMalloc(t, a, 1000, 0))
	}
	tr := a.Trace()
	if len(tr) != 3000 {
		t.Fatalf("kept %d entries", len(tr))
	}
	total := int64(1 + 3*5000)
	if a.TraceDropped() != total-3000 || tr[len(tr)-1].Seq != total-1 || tr[0].Seq != total-3000 {
		t.Errorf("dropped %d, seqs %d..%d", a.TraceDropped(), tr[0].Seq, tr[len(tr)-1].Seq)
	}
	for i := 1; i < len(tr); i++ {
		if tr[i].Seq != tr[i-1].Seq+1 {
			t.Fatalf("gap at %d", i)
		}
	}
	if n := len(a.trace.chunks); n > 3000/chunkLen+2 {
		t.Errorf("%d chunks held", n)
	}
	// A clone shares the full chunks; both keep logging apart.
	c := a.Clone(a.src)
	mustMalloc(t, a, 100, 0)
	for i := 0; i < 3000; i++ {
		mustFree(t, c, mustMalloc(t, c, 1000, 1))
	}
	ta, tc := a.Trace(), c.Trace()
	if ta[len(ta)-1].Action != ActionAlloc || ta[len(ta)-2].Action != ActionFreeCompleted || ta[len(ta)-2].Seq != tr[len(tr)-1].Seq {
		t.Errorf("original's log changed by the clone's work")
	}
	if tc[len(tc)-1].Stream != 1 || tc[0].Seq != c.trace.seq-3000 {
		t.Errorf("clone's log: %+v", tc[len(tc)-1])
	}
}

func TestFormatSize(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{
		{0, "0 bytes"}, {1024, "1024 bytes"}, {1025, "1.00 KiB"}, {MiB, "1024.00 KiB"},
		{MiB + 1, "1.00 MiB"}, {14 * MiB, "14.00 MiB"}, {1 << 30, "1024.00 MiB"}, {3 << 30, "3.00 GiB"},
	} {
		if got := FormatSize(c.n); got != c.want {
			t.Errorf("FormatSize(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}

func TestOOM(t *testing.T) {
	dev := newFakeDevice(64 * MiB)
	a := New(dev, 0, Options{})
	id := a.NewPoolID()
	if err := a.BeginAllocateToPool(id, 1); err != nil {
		t.Fatal(err)
	}
	mustMalloc(t, a, 1000, 1) // leaves 2096128 bytes cached free in the pool
	if err := a.EndAllocateToPool(id); err != nil {
		t.Fatal(err)
	}
	mustMalloc(t, a, 30*MiB, 0)
	_, err := a.Malloc(40*MiB, 0)
	var oom *OutOfMemoryError
	if !errors.As(err, &oom) || !errors.Is(err, device.ErrOutOfMemory) {
		t.Fatalf("err %v", err)
	}
	want := "CUDA out of memory. Tried to allocate 40.00 MiB. GPU 0 has a total capacity of 64.00 MiB of which 32.00 MiB is free. " +
		"Of the allocated memory 32.00 MiB is allocated by PyTorch, with 2.00 MiB allocated in private pools (e.g., CUDA Graphs), " +
		"and 0 bytes is reserved by PyTorch but unallocated."
	if !strings.HasPrefix(oom.Msg, want) {
		t.Errorf("message\n got %s\nwant %s...", oom.Msg, want)
	}
	tr := a.Trace()
	last := tr[len(tr)-1]
	if last.Action != ActionOOM || last.Size != 40*MiB || last.DeviceFree != 32*MiB {
		t.Errorf("last entry %+v", last)
	}
	if a.Stats().NumOOMs != 1 {
		t.Errorf("num_ooms %d", a.Stats().NumOOMs)
	}
	check(t, a)
}

// TestOOMReleasesCache: a cached segment is given back so that a new one
// fits (release_cached_blocks and retry).
func TestOOMReleasesCache(t *testing.T) {
	dev := newFakeDevice(40 * MiB)
	a := New(dev, 0, Options{})
	mustFree(t, a, mustMalloc(t, a, 30*MiB, 0))
	p := mustMalloc(t, a, 35*MiB, 0)
	check(t, a)
	if a.Stats().NumAllocRetries != 1 || dev.frees != 1 {
		t.Errorf("retries %d, frees %d", a.Stats().NumAllocRetries, dev.frees)
	}
	if got := layout(a.Segments()); !equalStrings(got, []string{"37748736: 37748736/36700160 A"}) || a.Segments()[0].Addr != p {
		t.Errorf("layout %q", got)
	}
}

// TestOOMReleasesOversize: with max_split_size, oversize cached blocks go
// first (release_available_cached_blocks), without a full retry.
func TestOOMReleasesOversize(t *testing.T) {
	dev := newFakeDevice(130 * MiB)
	a := New(dev, 0, Options{MaxSplitSize: 30 * MiB})
	mustFree(t, a, mustMalloc(t, a, 5*MiB, 0)) // a cached 20 MiB segment, not oversize
	x := mustMalloc(t, a, 40*MiB, 0)
	y := mustMalloc(t, a, 32*MiB, 0)
	mustFree(t, a, x)
	mustFree(t, a, y)
	// 60 MiB fits neither cached block; the device has 38 MiB free. The
	// largest oversize blocks are released until 60 MiB are.
	mustMalloc(t, a, 60*MiB, 0)
	check(t, a)
	if a.Stats().NumAllocRetries != 0 || dev.frees != 2 {
		t.Errorf("retries %d, frees %d", a.Stats().NumAllocRetries, dev.frees)
	}
	if got := layout(a.Segments()); !equalStrings(got, []string{"20971520: 20971520 F", "62914560: 62914560/62914560 A"}) {
		t.Errorf("layout %q", got)
	}
}

// TestNoRetryDuringCapture: step 4.4 is skipped while a pool captures.
func TestNoRetryDuringCapture(t *testing.T) {
	dev := newFakeDevice(40 * MiB)
	a := New(dev, 0, Options{})
	mustFree(t, a, mustMalloc(t, a, 30*MiB, 0))
	id := a.NewPoolID()
	if err := a.BeginAllocateToPool(id, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Malloc(20*MiB, 1); !errors.Is(err, device.ErrOutOfMemory) {
		t.Fatalf("err %v", err)
	}
	if dev.frees != 0 || a.Stats().NumAllocRetries != 0 {
		t.Errorf("cache released during capture")
	}
	check(t, a)
}

// TestTraceCloneAppends: after a clone, whichever log appends first writes
// in place and the other goes on in a copy; each sees its own entries only,
// in either order, and a clone's append costs no chunk copy when the
// original never appends again (the engine's rollback snapshot).
// TestTraceOff: a negative TraceMax keeps no entry and holds no chunk, and
// the allocator decides as with a log (the same blocks, the same stats).
func TestTraceOff(t *testing.T) {
	on := New(newFakeDevice(1<<40), 0, Options{})
	off := New(newFakeDevice(1<<40), 0, Options{TraceMax: -1})
	for _, a := range []*Allocator{on, off} {
		var held []device.Ptr
		for i := 0; i < 600; i++ {
			p := mustMalloc(t, a, int64(512*(1+i%7)), 0)
			if i%3 == 0 {
				mustFree(t, a, p)
			} else {
				held = append(held, p)
			}
		}
		for _, p := range held[:len(held)/2] {
			mustFree(t, a, p)
		}
	}
	if tr := off.Trace(); len(tr) != 0 || len(off.trace.chunks) != 0 {
		t.Fatalf("kept %d entries in %d chunks", len(tr), len(off.trace.chunks))
	}
	if n := int64(len(on.Trace())); off.TraceDropped() != n || n == 0 {
		t.Errorf("dropped %d, the log kept %d", off.TraceDropped(), n)
	}
	if a, b := on.Stats(), off.Stats(); a != b {
		t.Errorf("stats differ: %+v against %+v", a, b)
	}
	c := off.Clone(off.src)
	mustFree(t, c, mustMalloc(t, c, 100, 0))
	if len(c.Trace()) != 0 || len(off.Trace()) != 0 {
		t.Error("a clone of a log that keeps nothing kept entries")
	}
}

func TestTraceCloneAppends(t *testing.T) {
	for _, cloneFirst := range []bool{false, true} {
		a := New(newFakeDevice(1<<40), 0, Options{TraceMax: 1000})
		for i := 0; i < 300; i++ {
			mustFree(t, a, mustMalloc(t, a, 1000, 0))
		}
		c := a.Clone(a.src)
		first, second := a, c
		if cloneFirst {
			first, second = c, a
		}
		lastBefore := len(first.trace.chunks) - 1
		shared := first.trace.chunks[lastBefore]
		mustMalloc(t, first, 100, 0)
		if first.trace.chunks[lastBefore] != shared {
			t.Fatalf("cloneFirst=%v: the first append after a clone copied its chunk", cloneFirst)
		}
		mustMalloc(t, second, 200, 0)
		if second.trace.chunks[lastBefore] == shared {
			t.Fatalf("cloneFirst=%v: the second log wrote into the chunk the first one claimed", cloneFirst)
		}
		f, s := first.Trace(), second.Trace()
		if len(f) != len(s) || f[len(f)-1].Size != 100 || s[len(s)-1].Size != 200 || f[len(f)-1].Seq != s[len(s)-1].Seq {
			t.Fatalf("cloneFirst=%v: logs %+v / %+v", cloneFirst, f[len(f)-1], s[len(s)-1])
		}
		for i := 0; i < len(f)-1; i++ {
			if f[i] != s[i] {
				t.Fatalf("cloneFirst=%v: entry %d differs after the clone: %+v / %+v", cloneFirst, i, f[i], s[i])
			}
		}
	}
}
