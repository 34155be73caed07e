package alloc

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/cgtviz/cgtviz/engine/device"
)

// randomSize mixes small, large and huge requests.
func randomSize(r *rand.Rand) int64 {
	switch r.IntN(10) {
	case 0, 1, 2, 3:
		return 1 + r.Int64N(4096)
	case 4, 5:
		return 1 + r.Int64N(MiB+MiB/2)
	case 6, 7, 8:
		return MiB + r.Int64N(12*MiB)
	default:
		return 10*MiB + r.Int64N(60*MiB)
	}
}

// randomWork is a random sequence's view of an allocator: the blocks it
// holds, the private pools it made and the one it is capturing into (zero
// when none). Its steps are what every random test does between its own.
type randomWork struct {
	t         *testing.T
	r         *rand.Rand
	a         *Allocator
	live      []Ptr
	pools     []PoolID
	capturing PoolID
}

// malloc allocates a random size, on the side stream half the time while
// capturing; out of memory is a step like any other.
func (w *randomWork) malloc() {
	stream := device.Stream(w.r.IntN(2))
	if w.capturing != (PoolID{}) && w.r.IntN(2) == 0 {
		stream = device.SideStream
	}
	p, err := w.a.Malloc(randomSize(w.r), stream)
	if err != nil {
		if !errors.Is(err, device.ErrOutOfMemory) {
			w.t.Fatal(err)
		}
		return
	}
	w.live = append(w.live, p)
}

// free frees a random live block.
func (w *randomWork) free() {
	if len(w.live) > 0 {
		i := w.r.IntN(len(w.live))
		mustFree(w.t, w.a, w.live[i])
		w.live = slices.Delete(w.live, i, i+1)
	}
}

func (w *randomWork) emptyCache() {
	if err := w.a.EmptyCache(); err != nil {
		w.t.Fatal(err)
	}
}

// capture begins allocating to a pool (a new one, or one made before),
// or ends the capture under way; before it ends, beforeEnd (if any) sees
// the pool.
func (w *randomWork) capture(beforeEnd func(PoolID)) {
	if w.capturing == (PoolID{}) {
		id := w.a.NewPoolID()
		if len(w.pools) > 0 && w.r.IntN(2) == 0 {
			id = w.pools[w.r.IntN(len(w.pools))]
		} else {
			w.pools = append(w.pools, id)
		}
		if err := w.a.BeginAllocateToPool(id, device.SideStream); err != nil {
			w.t.Fatal(err)
		}
		w.capturing = id
		return
	}
	if beforeEnd != nil {
		beforeEnd(w.capturing)
	}
	if err := w.a.EndAllocateToPool(w.capturing); err != nil {
		w.t.Fatal(err)
	}
	w.capturing = PoolID{}
}

// releasePool releases a random pool, when none is capturing.
func (w *randomWork) releasePool() {
	if w.capturing == (PoolID{}) && len(w.pools) > 0 {
		i := w.r.IntN(len(w.pools))
		if err := w.a.ReleasePool(w.pools[i]); err != nil {
			w.t.Fatal(err)
		}
		w.pools = slices.Delete(w.pools, i, i+1)
	}
}

// TestRandomInvariants runs seeded random sequences of mallocs, frees,
// captures, empty_cache and pool releases and checks every invariant after
// every operation.
func TestRandomInvariants(t *testing.T) {
	for seed := uint64(1); seed <= 12; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 99))
			opts := Options{}
			if seed%3 == 0 {
				opts.MaxSplitSize = 40 * MiB
			}
			if seed%4 == 0 {
				opts.RoundupPower2Divisions[0] = 4
				opts.RoundupPower2Divisions[3] = 8
			}
			dev := newFakeDevice(int64(400+r.IntN(800)) * MiB)
			a := New(dev, 0, opts)
			w := &randomWork{t: t, r: r, a: a}
			for step := 0; step < 1500; step++ {
				switch k := r.IntN(20); {
				case k < 10:
					w.malloc()
				case k < 17:
					w.free()
				case k == 17:
					w.emptyCache()
				case k == 18:
					w.capture(nil)
				case k == 19:
					w.releasePool()
				}
				if err := invariants(a); err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
			}
			// Reserved memory matches the device's view.
			if a.Stats().ReservedBytes[Aggregate].Current != dev.used {
				t.Errorf("reserved %d, device used %d", a.Stats().ReservedBytes[Aggregate].Current, dev.used)
			}
		})
	}
}

// TestCheckpointProperty: random work in a private pool, checkpoint, more
// random work (new segments too), restore with a random live subset; the
// pool must equal the checkpoint with exactly the live set allocated (plus
// the later segments, free and unsplit), and the delta must be exactly the
// difference.
func TestCheckpointProperty(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 7))
			a := New(newFakeDevice(1<<40), 0, Options{})
			id := a.NewPoolID()
			if err := a.BeginAllocateToPool(id, device.SideStream); err != nil {
				t.Fatal(err)
			}
			var live []Ptr
			work := func(steps int) {
				for i := 0; i < steps; i++ {
					if len(live) == 0 || r.IntN(3) > 0 {
						live = append(live, mustMalloc(t, a, randomSize(r), device.SideStream))
					} else {
						j := r.IntN(len(live))
						mustFree(t, a, live[j])
						live = slices.Delete(live, j, j+1)
					}
				}
				check(t, a)
			}
			work(10 + r.IntN(60))
			st, err := a.GetCheckpointState(id)
			if err != nil {
				t.Fatal(err)
			}
			before := layoutNoRequested(a.PoolSegments(id))
			atCheckpoint := slices.Clone(live)
			segsAtCheckpoint := map[Ptr]bool{}
			for _, s := range a.PoolSegments(id) {
				segsAtCheckpoint[s.Addr] = true
			}
			work(10 + r.IntN(80))
			// A random subset of the checkpoint's blocks stays live; the
			// tree manager frees the rest (raw_delete) after the restore.
			var keep, dead []Ptr
			for _, p := range atCheckpoint {
				if r.IntN(2) == 0 {
					keep = append(keep, p)
				} else {
					dead = append(dead, p)
				}
			}
			allocatedBefore := a.Allocated(id)
			// Everything allocated now and not at the checkpoint is stale.
			ckpt := map[Ptr]bool{}
			for _, p := range atCheckpoint {
				ckpt[p] = true
			}
			var stale []Ptr
			for _, b := range allocatedBefore {
				if !ckpt[b.Addr] {
					stale = append(stale, b.Addr)
				}
			}
			if len(stale) > 0 {
				if _, err := a.SetCheckpointPoolState(st, nil, keep); err == nil {
					t.Fatal("restore without the stale storages succeeded")
				}
				check(t, a)
			}
			d, err := a.SetCheckpointPoolState(st, stale, keep)
			if err != nil {
				t.Fatal(err)
			}
			check(t, a)
			// The delta: freed = allocated before, allocd = checkpoint's.
			var freed, allocd []Ptr
			for _, b := range d.PtrsFreed {
				freed = append(freed, b.Addr)
			}
			for _, b := range d.DataPtrsAllocd {
				allocd = append(allocd, b.Addr)
			}
			var wantFreed []Ptr
			for _, b := range allocatedBefore {
				wantFreed = append(wantFreed, b.Addr)
			}
			wantAllocd := slices.Sorted(slices.Values(atCheckpoint))
			if !slices.Equal(freed, wantFreed) || !slices.Equal(allocd, wantAllocd) {
				t.Fatalf("delta freed %x allocd %x, want %x %x", freed, allocd, wantFreed, wantAllocd)
			}
			keepSet := map[Ptr]bool{}
			for _, p := range keep {
				keepSet[p] = true
			}
			for _, b := range d.DataPtrsAllocd {
				if b.LiveOwned != keepSet[b.Addr] {
					t.Fatalf("block %#x LiveOwned %v", uint64(b.Addr), b.LiveOwned)
				}
			}
			if got, want := slices.Sorted(slices.Values(d.Unowned())), slices.Sorted(slices.Values(dead)); !slices.Equal(got, want) {
				t.Fatalf("unowned %x, want %x", got, want)
			}
			// The pool equals the checkpoint (requested sizes become block
			// sizes), later segments are whole and free.
			var restored []Segment
			for _, s := range a.PoolSegments(id) {
				if segsAtCheckpoint[s.Addr] {
					restored = append(restored, s)
				} else if len(s.Blocks) != 1 || s.Blocks[0].Allocated {
					t.Fatalf("later segment %#x not free and whole: %q", uint64(s.Addr), layout([]Segment{s}))
				}
			}
			if got := layoutNoRequested(restored); !slices.Equal(got, before) {
				t.Fatalf("restored\n got %q\nwant %q", got, before)
			}
			for _, p := range dead {
				mustFree(t, a, p)
			}
			if ok, m := a.CheckPoolLiveAllocations(id, keep); !ok {
				t.Fatalf("live check: %+v", m)
			}
			check(t, a)
		})
	}
}

// layoutNoRequested is layout without requested sizes (a restore loses
// them).
func layoutNoRequested(segs []Segment) []string {
	var out []string
	for _, s := range segs {
		line := fmt.Sprint(s.Size, ":")
		for _, b := range s.Blocks {
			line += fmt.Sprint(" ", b.Size, b.Allocated)
		}
		out = append(out, line)
	}
	return out
}

func TestCheckpointErrors(t *testing.T) {
	a := New(newFakeDevice(1<<40), 0, Options{})
	if _, err := a.GetCheckpointState(PoolID{0, 9}); err == nil {
		t.Error("checkpoint of an unknown pool")
	}
	id := a.NewPoolID()
	if err := a.BeginAllocateToPool(id, 1); err != nil {
		t.Fatal(err)
	}
	p := mustMalloc(t, a, 1000, 1)
	st, err := a.GetCheckpointState(id)
	if err != nil {
		t.Fatal(err)
	}
	// A stale pointer that is not allocated in the pool.
	if _, err := a.SetCheckpointPoolState(st, []Ptr{p + 512}, nil); err == nil {
		t.Error("bogus stale pointer accepted")
	}
	// A state of another pool's segments.
	bad := &PoolState{Pool: id, Segments: []SegmentState{{Addr: 0x1000, Blocks: []BlockState{{Addr: 0x1000, Size: 512}}}}}
	if _, err := a.SetCheckpointPoolState(bad, nil, nil); err == nil {
		t.Error("unknown segment accepted")
	}
	// Blocks that do not tile the segment.
	short := &PoolState{Pool: id, Segments: []SegmentState{{Addr: st.Segments[0].Addr, Small: true, Blocks: st.Segments[0].Blocks[:1]}}}
	if _, err := a.SetCheckpointPoolState(short, nil, nil); err == nil {
		t.Error("partial segment accepted")
	}
	check(t, a)
	if got := layout(a.PoolSegments(id)); !equalStrings(got, []string{"2097152: 1024/1000 A 2096128 F"}) {
		t.Errorf("failed restores changed the pool: %q", got)
	}
	// Restoring the same state frees and re-allocates p.
	d, err := a.SetCheckpointPoolState(st, nil, []Ptr{p})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.PtrsFreed) != 1 || !d.PtrsFreed[0].Reallocated || len(d.DataPtrsAllocd) != 1 || !d.DataPtrsAllocd[0].LiveOwned {
		t.Errorf("delta %+v", d)
	}
	if got := layout(a.PoolSegments(id)); !equalStrings(got, []string{"2097152: 1024/1024 A 2096128 F"}) {
		t.Errorf("after restore: %q", got)
	}
	// The restore's trace: markers around free pair, allocs, free pair.
	var acts []string
	for _, e := range a.Trace() {
		s := string(e.Action)
		if e.Marker != "" {
			s = e.Marker
		}
		acts = append(acts, fmt.Sprint(s, " ", e.Size))
	}
	want := []string{"segment_alloc 2097152", "alloc 1000", "checkpoint_state 0", "checkpoint_restore_begin 0",
		"free_requested 1000", "free_completed 1000", "alloc 1024", "alloc 2096128",
		"free_requested 2096128", "free_completed 2096128", "checkpoint_restore_end 0"}
	if !equalStrings(acts, want) {
		t.Errorf("trace\n got %q\nwant %q", acts, want)
	}
	ok, m := a.CheckPoolLiveAllocations(id, []Ptr{p + 1024})
	if ok || !slices.Equal(m.AllocatedNotLive, []Ptr{p}) || !slices.Equal(m.LiveNotAllocated, []Ptr{p + 1024}) {
		t.Errorf("live check %v %+v", ok, m)
	}
}

// TestMallocFailureAtomic: after some work the device is full, or refuses
// segments above 20 MiB (a fragmented device, where the fallback releases
// cached segments and has to take them back); a failed
// Malloc leaves segments, free sets and stats as they were (but for
// num_ooms) and adds only the oom trace entry.
func TestMallocFailureAtomic(t *testing.T) {
	var failures [2]int
	defer func() {
		if failures[0] == 0 || failures[1] == 0 {
			t.Errorf("failed mallocs per mode: %v", failures)
		}
	}()
	for n := 1; n <= 30; n++ {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(n), 3))
			dev := newFakeDevice(1 << 40)
			a := New(dev, 0, Options{MaxSplitSize: int64(32+n%2*100) * MiB})
			var live []Ptr
			var captured bool
			ooms := 0
			id := a.NewPoolID()
			for step := 0; step < 200; step++ {
				if step == 100 && n%3 == 0 {
					if err := a.BeginAllocateToPool(id, device.SideStream); err != nil {
						t.Fatal(err)
					}
					captured = true
				}
				if r.IntN(3) == 0 && len(live) > 0 {
					i := r.IntN(len(live))
					mustFree(t, a, live[i])
					live = slices.Delete(live, i, i+1)
					continue
				}
				if step == 150 {
					if n%2 == 0 {
						dev.total = dev.used // full: only released segments make room
					} else {
						dev.maxSegment = 20 * MiB
					}
				}
				segs, stats, free := a.Segments(), a.Stats(), freeSets(a)
				nTrace := len(a.Trace())
				stream := device.Stream(r.IntN(2))
				if captured {
					stream = device.SideStream
				}
				p, err := a.Malloc(randomSize(r), stream)
				if err == nil {
					live = append(live, p)
					continue
				}
				if !errors.Is(err, device.ErrOutOfMemory) {
					t.Fatal(err)
				}
				check(t, a)
				stats.NumOOMs++
				if !reflect.DeepEqual(segs, a.Segments()) || !reflect.DeepEqual(free, freeSets(a)) {
					t.Fatalf("step %d: state changed by a failed malloc\n%q\n%q\n%q\n%q", step, layout(segs), layout(a.Segments()), free, freeSets(a))
				}
				if got := a.Stats(); !reflect.DeepEqual(stats, got) {
					t.Fatalf("step %d: stats changed\n got %+v\nwant %+v", step, got, stats)
				}
				if tr := a.Trace(); len(tr) != nTrace+1 || tr[len(tr)-1].Action != ActionOOM {
					t.Fatalf("step %d: trace grew by %d", step, len(tr)-nTrace)
				}
				ooms++
			}
			failures[n%2] += ooms
			if a.Stats().ReservedBytes[Aggregate].Current != dev.used {
				t.Errorf("reserved %d, device used %d", a.Stats().ReservedBytes[Aggregate].Current, dev.used)
			}
		})
	}
}

func TestClone(t *testing.T) {
	a := New(newFakeDevice(1<<40), 0, Options{})
	id := a.NewPoolID()
	if err := a.BeginAllocateToPool(id, 1); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 5))
	var live []Ptr
	for i := 0; i < 300; i++ {
		if len(live) > 0 && r.IntN(3) == 0 {
			j := r.IntN(len(live))
			mustFree(t, a, live[j])
			live = slices.Delete(live, j, j+1)
		} else {
			live = append(live, mustMalloc(t, a, randomSize(r), device.Stream(r.IntN(2))))
		}
	}
	c := a.Clone(a.src)
	check(t, c)
	if !reflect.DeepEqual(a.Segments(), c.Segments()) || !reflect.DeepEqual(freeSets(a), freeSets(c)) ||
		a.Stats() != c.Stats() || !reflect.DeepEqual(a.Trace(), c.Trace()) {
		t.Fatal("clone differs")
	}
	// The two evolve independently and identically from the same calls.
	snapshot := a.Segments()
	for _, x := range []*Allocator{c} {
		for _, p := range live[:len(live)/2] {
			mustFree(t, x, p)
		}
		mustMalloc(t, x, 3*MiB, 1)
		check(t, x)
	}
	if !reflect.DeepEqual(snapshot, a.Segments()) {
		t.Fatal("work on the clone changed the original")
	}
	check(t, a)
	if reflect.DeepEqual(a.Trace(), c.Trace()) {
		t.Fatal("traces shared after divergence")
	}
}

// TestFallbackMovesReacquiredSegment: a failed fallback gives back a cached
// segment, and the device returns it at another address; the allocator
// moves the (free) segment there and stays consistent with the device.
func TestFallbackMovesReacquiredSegment(t *testing.T) {
	dev := newFakeDevice(1 << 40)
	dev.noReuse = true
	a := New(dev, 0, Options{})
	mustFree(t, a, mustMalloc(t, a, 1000, 0)) // a cached, whole 2 MiB segment
	keep := mustMalloc(t, a, 5*MiB, 0)
	before := a.Segments()
	dev.maxSegment = 20 * MiB
	if _, err := a.Malloc(40*MiB, 0); !errors.Is(err, device.ErrOutOfMemory) {
		t.Fatalf("err %v", err)
	}
	check(t, a)
	after := a.Segments()
	if dev.frees != 1 || len(after) != 2 || after[1].Addr == before[0].Addr {
		t.Fatalf("segments %+v, %d frees", after, dev.frees)
	}
	if got, want := slices.Sorted(slices.Values(layout(after))), slices.Sorted(slices.Values(layout(before))); !equalStrings(got, want) {
		t.Errorf("layout %q, want %q", got, want)
	}
	for _, s := range after {
		if dev.live[s.Addr] != s.Size {
			t.Errorf("segment %#x not live on the device", uint64(s.Addr))
		}
	}
	if b, ok := a.BlockAt(keep); !ok || !b.Allocated {
		t.Errorf("live block lost")
	}
	// The moved segment serves allocations and is freed at its new address.
	mustFree(t, a, mustMalloc(t, a, 100, 0))
	if err := a.EmptyCache(); err != nil {
		t.Fatal(err)
	}
	check(t, a)
}
