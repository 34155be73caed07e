package alloc

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cgtviz/cgtviz/engine/device"
)

// objectDump is the allocator's whole object graph, each object named by
// its address: an undo must give back the same objects, linked the same
// way, with the same values (the free sets' treaps in the same shape).
func objectDump(a *Allocator) string {
	var b strings.Builder
	treap := func(name string, p *blockPool) {
		fmt.Fprintf(&b, "%s root %p n %d owner %p small %v\n", name, p.free.root, p.free.n, p.owner, p.small)
	}
	treap("small", &a.small)
	treap("large", &a.large)
	for _, id := range a.sortedPoolIDs() {
		pp := a.pools[id]
		fmt.Fprintf(&b, "pool %v %p use %d mallocs %d stats %+v\n", id, pp, pp.useCount, pp.mallocCount, pp.stats)
		treap("  small", &pp.small)
		treap("  large", &pp.large)
	}
	for _, s := range a.segs {
		fmt.Fprintf(&b, "seg %p base %#x size %d pool %p stream %d head %p ctx %v\n", s, uint64(s.base), s.size, s.pool, s.stream, s.head, s.ctx)
		for x := s.head; x != nil; x = x.next {
			fmt.Fprintf(&b, "  block %p ptr %#x size %d req %d stream %d pool %p seg %p prev %p next %p alloc %v ctx %v left %p right %p prio %d inFree %v\n",
				x, uint64(x.ptr), x.size, x.requested, x.stream, x.pool, x.seg, x.prev, x.next, x.allocated, x.ctx, x.left, x.right, x.prio, x.inFree)
		}
	}
	var ptrs []string
	for _, sl := range a.allocated.slots {
		if sl.key != 0 {
			ptrs = append(ptrs, fmt.Sprintf("%#x=%p", uint64(sl.key), sl.val))
		}
	}
	slices.Sort(ptrs)
	fmt.Fprintf(&b, "allocated %d %v\n", a.allocated.n, ptrs)
	fmt.Fprintf(&b, "spare %v\ncaptures %v\nstats %+v\ndefault %+v\nctx %v uid %d released %v\n", a.spare, a.captures, a.stats, a.defaultStats, a.ctx, a.nextUID, a.released)
	fmt.Fprintf(&b, "trace %+v dropped %d\n", a.Trace(), a.TraceDropped())
	return b.String()
}

// TestJournalUndo runs random allocator work (mallocs on two streams and
// into private pools, frees, empty_cache, checkpoints restored, mallocs
// that need the fallback on a full or fragmented device) under random
// nested marks, undone or committed at random, and checks that each Undo
// gives back the allocator exactly as it was at its mark: the same
// objects, values and links (objectDump), and that the allocator stays
// valid and agrees with the device after each.
func TestJournalUndo(t *testing.T) {
	undone := 0
	for seed := uint64(1); seed <= 8; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 7))
			opts := Options{TraceMax: 300}
			if seed%3 == 0 {
				opts.MaxSplitSize = 40 * MiB
			}
			dev := newFakeDevice(int64(300+r.IntN(600)) * MiB)
			if seed%2 == 0 {
				dev.maxSegment = 30 * MiB
			}
			// Fresh addresses only: a failed fallback's reacquired
			// segments move (reacquire), under a mark.
			dev.noReuse = seed%4 == 2
			a := New(dev, 0, opts)
			type open struct {
				m     Mark
				dump  string
				live  []Ptr
				pools []PoolID
				capt  PoolID
				state *PoolState
				dev   fakeDevice
				bases []Ptr
			}
			var marks []open
			w := &randomWork{t: t, r: r, a: a}
			var state *PoolState
			for step := 0; step < 800; step++ {
				switch k := r.IntN(26); {
				case k < 10:
					a.SetContext(step, "malloc")
					w.malloc()
				case k < 16:
					w.free()
				case k == 16:
					w.emptyCache()
				case k == 17:
					if w.capturing == (PoolID{}) {
						state = nil
					}
					w.capture(func(id PoolID) {
						if st, err := a.GetCheckpointState(id); err == nil && r.IntN(2) == 0 {
							state = st
						}
					})
				case k == 18:
					w.releasePool()
				case k == 19:
					// Restore a checkpoint, every allocated block of the pool
					// freed (stale), none live.
					if state == nil {
						break
					}
					var stale []Ptr
					for _, p := range w.live {
						if id, ok := a.BlockPool(p); ok && id == state.Pool {
							stale = append(stale, p)
						}
					}
					d, err := a.SetCheckpointPoolState(state, stale, nil)
					if err != nil {
						break // the pool changed under the checkpoint: refused, unchanged
					}
					w.live = slices.DeleteFunc(w.live, func(p Ptr) bool { return slices.Contains(stale, p) })
					w.live = append(w.live, d.Unowned()...)
				case k < 23:
					marks = append(marks, open{m: a.Mark(), dump: objectDump(a), live: slices.Clone(w.live), pools: slices.Clone(w.pools), capt: w.capturing, state: state,
						dev: copyDevice(dev), bases: segBases(a)})
				case k < 25:
					if len(marks) == 0 {
						break
					}
					o := marks[len(marks)-1]
					marks = marks[:len(marks)-1]
					before := segBases(a)
					forgotten := a.Undo(o.m)
					// The device goes back too, as a journaling one does.
					*dev = o.dev
					var want []Ptr
					for _, p := range before {
						if !slices.Contains(o.bases, p) {
							want = append(want, p)
						}
					}
					slices.Sort(forgotten)
					if !slices.Equal(forgotten, want) {
						t.Fatalf("step %d: undo forgot segments %#x, want %#x", step, forgotten, want)
					}
					if got := objectDump(a); got != o.dump {
						t.Fatalf("step %d: undo to the mark differs:\n%s", step, firstDiff(o.dump, got))
					}
					undone++
					w.live, w.pools, w.capturing, state = o.live, o.pools, o.capt, o.state
				default:
					a.Commit()
					marks = nil
				}
				if err := invariants(a); err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
			}
			if a.Stats().ReservedBytes[Aggregate].Current != dev.used {
				t.Errorf("reserved %d, device used %d", a.Stats().ReservedBytes[Aggregate].Current, dev.used)
			}
		})
	}
	if undone == 0 {
		t.Fatal("no mark was undone")
	}
}

func segBases(a *Allocator) []Ptr {
	var out []Ptr
	for _, s := range a.segs {
		out = append(out, s.base)
	}
	return out
}

// copyDevice copies the fake device's state, maps included.
func copyDevice(d *fakeDevice) fakeDevice {
	c := *d
	c.live = maps.Clone(d.live)
	c.freed = map[int64][]device.Ptr{}
	for k, v := range d.freed {
		c.freed[k] = slices.Clone(v)
	}
	return c
}

// firstDiff is the first line where two dumps differ.
func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range max(len(w), len(g)) {
		var x, y string
		if i < len(w) {
			x = w[i]
		}
		if i < len(g) {
			y = g[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\nwant %s\ngot  %s", i+1, x, y)
		}
	}
	return "(no line differs)"
}

// TestJournalCommitKeeps: changes under a committed mark stay, and the
// journal holds nothing after Commit.
func TestJournalCommitKeeps(t *testing.T) {
	a := New(newFakeDevice(1<<40), 0, Options{})
	p := mustMalloc(t, a, 1000, 0)
	m := a.Mark()
	mustFree(t, a, p)
	q := mustMalloc(t, a, 3*MiB, 0)
	want := objectDump(a)
	a.Commit()
	if got := objectDump(a); got != want {
		t.Fatalf("commit changed the allocator:\n%s", firstDiff(want, got))
	}
	if a.j.on || len(a.j.blocks)+len(a.j.segs)+len(a.j.ptrs)+len(a.j.segList)+len(a.j.spare) != 0 {
		t.Fatalf("journal after commit: on %v, %d blocks", a.j.on, len(a.j.blocks))
	}
	if forgotten := a.Undo(m); forgotten != nil || objectDump(a) != want {
		t.Fatal("an undo after commit changed the allocator")
	}
	mustFree(t, a, q)
	check(t, a)
}
