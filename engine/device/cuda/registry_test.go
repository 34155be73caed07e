package cuda

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/engine/device/opaque"
)

// fakeDriver is the registry's driver with device memory in Go: every
// allocation (segment or backup) is a byte slice at a fake address, and
// copies between them are real, so the tests see contents move as on the
// GPU. It runs on any machine, with or without the cuda tag.
type fakeDriver struct {
	mem      map[uint64][]byte
	next     uint64
	freed    []resource
	copies   int // copySpans calls
	allocs   int // allocMem calls
	nodes    map[device.ExecHandle]map[device.Ptr]copySrc
	released int
}

func newFake() *fakeDriver {
	return &fakeDriver{mem: map[uint64][]byte{}, next: 0x10000, nodes: map[device.ExecHandle]map[device.Ptr]copySrc{}}
}

func (f *fakeDriver) alloc(n int64) uint64 {
	p := f.next
	f.next += uint64(alignBackup(n)) + 4096
	f.mem[p] = make([]byte, n)
	return p
}

// span returns the n bytes at p, which must lie in one live allocation.
func (f *fakeDriver) span(p uint64, n int64) ([]byte, error) {
	for base, b := range f.mem {
		if p >= base && p+uint64(n) <= base+uint64(len(b)) {
			return b[p-base : p-base+uint64(n)], nil
		}
	}
	return nil, fmt.Errorf("fake: %#x+%d is not in live memory", p, n)
}

func (f *fakeDriver) freeResource(r resource) error {
	if r.kind == resSegment {
		if _, ok := f.mem[r.h]; !ok {
			return fmt.Errorf("fake: free of %#x, not allocated", r.h)
		}
		delete(f.mem, r.h)
	}
	f.freed = append(f.freed, r)
	return nil
}

func (f *fakeDriver) allocMem(n int64) (uint64, bool, error) {
	f.allocs++
	return f.alloc(n), false, nil
}

func (f *fakeDriver) freeMem(p uint64) { delete(f.mem, p) }

func (f *fakeDriver) copySpans(dst, src []uint64, n []int64) error {
	f.copies++
	for i := range dst {
		d, err := f.span(dst[i], n[i])
		if err != nil {
			return err
		}
		s, err := f.span(src[i], n[i])
		if err != nil {
			return err
		}
		copy(d, s)
	}
	return nil
}

func (f *fakeDriver) setCopyNode(e device.ExecHandle, _ device.GraphHandle, dst device.Ptr, c copySrc) error {
	if f.nodes[e] == nil {
		f.nodes[e] = map[device.Ptr]copySrc{}
	}
	f.nodes[e][dst] = c
	return nil
}

func (f *fakeDriver) release() error { f.released++; return nil }

// view is a clone as Device drives the registry, without the driver's
// streams: each operation on contents first takes the GPU (activate).
type view struct {
	t  *testing.T
	f  *fakeDriver
	r  *registry
	st *state
}

func newRegistryView(t *testing.T) *view {
	f := newFake()
	r := &registry{}
	r.init(f)
	r.addView()
	return &view{t: t, f: f, r: r, st: newState()}
}

func (v *view) use() {
	v.t.Helper()
	if v.r.owner != v.st {
		if err := v.r.activate(v.st); err != nil {
			v.t.Fatalf("activate: %v", err)
		}
	}
}

func (v *view) malloc(n int64) device.Ptr {
	v.use()
	p := device.Ptr(v.f.alloc(n))
	v.st.segs[p] = n
	v.r.refs[resource{resSegment, uint64(p)}] = 1
	return p
}

func (v *view) free(p device.Ptr) {
	v.t.Helper()
	v.use()
	if _, ok := v.st.segs[p]; !ok {
		v.t.Fatalf("free of %#x, not a segment of this view", uint64(p))
	}
	delete(v.st.segs, p)
	if err := v.r.drop(resource{resSegment, uint64(p)}); err != nil {
		v.t.Fatal(err)
	}
}

func (v *view) write(p device.Ptr, b byte) {
	v.t.Helper()
	v.use()
	s, err := v.f.span(uint64(p), v.st.segs[p])
	if err != nil {
		v.t.Fatal(err)
	}
	for i := range s {
		s[i] = b
	}
}

func (v *view) read(p device.Ptr) byte {
	v.t.Helper()
	v.use()
	s, err := v.f.span(uint64(p), v.st.segs[p])
	if err != nil {
		v.t.Fatal(err)
	}
	if !bytes.Equal(s, bytes.Repeat(s[:1], len(s))) {
		v.t.Fatalf("segment %#x holds mixed bytes", uint64(p))
	}
	return s[0]
}

func (v *view) snapshot() *state {
	v.t.Helper()
	s, err := v.r.freeze(v.st)
	if err != nil {
		v.t.Fatal(err)
	}
	return s
}

func (v *view) restore(s *state) {
	v.t.Helper()
	if err := v.r.restore(v.st, s); err != nil {
		v.t.Fatalf("restore: %v", err)
	}
}

func (v *view) clone() *view {
	c := *v
	c.st = v.snapshot()
	v.r.addView()
	return &c
}

// exec adds a graph and an executable graph of it whose one memcpy node
// writes dst from src.
func (v *view) exec(h uint64, dst, src device.Ptr) device.ExecHandle {
	g, e := device.GraphHandle(h), device.ExecHandle(h+1)
	v.st.graphs[g] = true
	v.r.refs[resource{resGraph, uint64(g)}] = 1
	c := copySrc{src: src, bytes: 64}
	v.r.addExec(e, g, map[device.Ptr]copySrc{dst: c})
	v.f.nodes[e] = map[device.Ptr]copySrc{dst: c}
	v.st.execs[e] = &execInfo{src: map[device.Ptr]copySrc{dst: c}, opq: opaque.NewProgram([]opaque.Op{opaque.CopyOp(dst, src, 16)}).Exec()}
	return e
}

func (v *view) updateCopy(e device.ExecHandle, dst, src device.Ptr) {
	v.t.Helper()
	v.use()
	c := copySrc{src: src, bytes: 64}
	if err := v.r.setCopy(e, dst, c); err != nil {
		v.t.Fatal(err)
	}
	ni := &execInfo{src: map[device.Ptr]copySrc{}, opq: v.st.execs[e].opq.WithCopy(dst, src, 16)}
	for k, x := range v.st.execs[e].src {
		ni.src[k] = x
	}
	ni.src[dst] = c
	v.st.execs[e] = ni
}

func (v *view) wantRefs(r resource, n int) {
	v.t.Helper()
	if got := v.r.refs[r]; got != n {
		v.t.Errorf("%v held %d times, want %d", r, got, n)
	}
}

func seg(p device.Ptr) resource { return resource{resSegment, uint64(p)} }

// TestRegistrySnapshotRestore: contents come back; a segment freed after
// the snapshot stays allocated for it, one made after it is freed by the
// restore; the holds balance.
func TestRegistrySnapshotRestore(t *testing.T) {
	v := newRegistryView(t)
	a, b := v.malloc(100), v.malloc(300)
	v.write(a, 1)
	v.write(b, 2)
	s := v.snapshot()
	v.wantRefs(seg(a), 2)
	v.write(a, 3)
	v.free(b)
	if _, ok := v.f.mem[uint64(b)]; !ok {
		t.Fatal("b was freed while the snapshot holds it")
	}
	c := v.malloc(50)
	v.write(c, 9)
	for round := range 2 {
		v.restore(s)
		if got := v.read(a); got != 1 {
			t.Errorf("round %d: a = %d after restore, want 1", round, got)
		}
		if got := v.read(b); got != 2 {
			t.Errorf("round %d: b = %d after restore, want 2", round, got)
		}
		v.write(a, 4)
	}
	if _, ok := v.f.mem[uint64(c)]; ok || !slices.Contains(v.f.freed, seg(c)) {
		t.Error("c, made after the snapshot, survived the restore")
	}
	v.wantRefs(seg(a), 2) // the view and the snapshot
	v.wantRefs(seg(b), 2)
	// The snapshot dies (its cleanup queues it): only the view holds.
	v.r.bury(s)
	v.r.drain()
	v.wantRefs(seg(a), 1)
	v.free(b)
	if _, ok := v.f.mem[uint64(b)]; ok {
		t.Error("b outlived its last holder")
	}
}

// TestRegistryClonesTakeTurns: clones see their own contents whoever used
// the GPU last, a clone of a clone that is not the owner shares its backup
// (no copy), and a clone's free leaves the others' segment alone.
func TestRegistryClonesTakeTurns(t *testing.T) {
	v := newRegistryView(t)
	a := v.malloc(64)
	v.write(a, 1)
	c := v.clone()
	v.write(a, 5)
	if got := c.read(a); got != 1 {
		t.Fatalf("the clone reads %d, want 1", got)
	}
	if got := v.read(a); got != 5 {
		t.Fatalf("the original reads %d, want 5", got)
	}
	c.write(a, 7)
	if got := v.read(a); got != 5 {
		t.Fatalf("the original reads %d after the clone's write, want 5", got)
	}
	copies := v.f.copies
	cc := c.clone() // c is not the owner: its backup is shared
	if v.f.copies != copies {
		t.Errorf("a clone of a clone that is not on the GPU copied %d times", v.f.copies-copies)
	}
	if got := cc.read(a); got != 7 {
		t.Errorf("the clone's clone reads %d, want 7", got)
	}
	c.free(a)
	if got := v.read(a); got != 5 {
		t.Errorf("the original reads %d after the clone freed a, want 5", got)
	}
	if got := cc.read(a); got != 7 {
		t.Errorf("the clone's clone reads %d after the clone freed a, want 7", got)
	}
	v.wantRefs(seg(a), 2)
}

// TestRegistryCopySources: a snapshot and a clone keep an executable
// graph's copy sources; restoring and taking turns set them back on the
// GPU where they differ.
func TestRegistryCopySources(t *testing.T) {
	v := newRegistryView(t)
	dst, s1, s2 := v.malloc(64), v.malloc(64), v.malloc(64)
	e := v.exec(0x100, dst, s1)
	snap := v.snapshot()
	c := v.clone()
	v.updateCopy(e, dst, s2)
	if got := v.f.nodes[e][dst].src; got != s2 {
		t.Fatalf("node copies from %#x after UpdateCopy, want s2", uint64(got))
	}
	c.use()
	if got := v.f.nodes[e][dst].src; got != s1 {
		t.Errorf("the clone's turn left the node on %#x, want s1", uint64(got))
	}
	v.use()
	if got := v.f.nodes[e][dst].src; got != s2 {
		t.Errorf("the original's turn left the node on %#x, want s2", uint64(got))
	}
	v.restore(snap)
	if got := v.f.nodes[e][dst].src; got != s1 {
		t.Errorf("restore left the node on %#x, want s1", uint64(got))
	}
}

// TestRegistryExecHoldsGraph: an executable graph holds its graph; the
// graph is destroyed after both are given back, the exec first.
func TestRegistryExecHoldsGraph(t *testing.T) {
	v := newRegistryView(t)
	p := v.malloc(64)
	e := v.exec(0x200, p, p)
	g := device.GraphHandle(0x200)
	delete(v.st.graphs, g)
	if err := v.r.drop(resource{resGraph, uint64(g)}); err != nil {
		t.Fatal(err)
	}
	if len(v.f.freed) != 0 {
		t.Fatalf("destroying the graph freed %v while its exec holds it", v.f.freed)
	}
	delete(v.st.execs, e)
	if err := v.r.drop(resource{resExec, uint64(e)}); err != nil {
		t.Fatal(err)
	}
	want := []resource{{resExec, uint64(e)}, {resGraph, uint64(g)}}
	if !slices.Equal(v.f.freed, want) {
		t.Errorf("freed %v, want %v", v.f.freed, want)
	}
	if err := v.r.drop(resource{resExec, uint64(e)}); err == nil {
		t.Error("a second drop of the exec succeeded")
	}
}

// TestRegistryDeadOwner: a clone that dies while on the GPU is not saved
// when another takes its turn, and its segments go.
func TestRegistryDeadOwner(t *testing.T) {
	v := newRegistryView(t)
	a := v.malloc(64)
	v.write(a, 3)
	c := v.clone()
	b := c.malloc(64) // c is the owner now
	c.write(b, 4)
	copies := v.f.copies
	v.r.buryView(c.st) // c's cleanup
	if got := v.read(a); got != 3 {
		t.Errorf("the original reads %d, want 3", got)
	}
	if v.f.copies != copies+1 {
		t.Errorf("%d copies to take the GPU from a dead clone, want 1 (the original's restore only)", v.f.copies-copies)
	}
	if _, ok := v.f.mem[uint64(b)]; ok {
		t.Error("the dead clone's segment is still allocated")
	}
	v.wantRefs(seg(a), 1)
	if v.f.released != 0 {
		t.Error("the device was released with a clone left")
	}
	v.r.buryView(v.st)
	if v.f.released != 1 {
		t.Errorf("released %d times when the last clone died, want 1", v.f.released)
	}
}

// TestRegistrySpareBackups: a dead snapshot's buffer serves the next.
func TestRegistrySpareBackups(t *testing.T) {
	v := newRegistryView(t)
	v.malloc(1000)
	s := v.snapshot()
	buf := s.backup.buf
	allocs := v.f.allocs
	v.r.bury(s) // its state's release gives back the backup it alone held
	v.r.drain()
	s2 := v.snapshot()
	if v.f.allocs != allocs {
		t.Errorf("the second snapshot allocated %d buffers, want the spare", v.f.allocs-allocs)
	}
	if s2.backup.buf != buf {
		t.Errorf("the second snapshot's buffer %v is not the spare %v", s2.backup.buf, buf)
	}
	if got, want := snapshotBytes(v.st), int64(1024); got != want {
		t.Errorf("snapshotBytes = %d, want %d (1000 rounded to %d)", got, want, backupAlign)
	}
}

// TestRegistryViews checks the count of open clones: the device is given
// back by the last one closed, once, and never while one is open.
func TestRegistryViews(t *testing.T) {
	g := &registry{}
	g.addView() // the device itself
	g.addView() // a clone
	if g.closeView() {
		t.Fatal("closing the clone reported the last view while the device was open")
	}
	if !g.closeView() {
		t.Fatal("closing the last view did not report it")
	}
	if g.closeView() {
		t.Fatal("a view closed after the last reported it again")
	}
}

// TestRegistryBackupsCounted checks that a backup's buffer comes back when
// the last state holding it goes, and not before, with no garbage
// collection: a clone that restores a snapshot while another clone has the
// GPU shares the snapshot's backup. The engine snapshots the GPU before
// every record that can fail, and buffers freed only by the collector
// filled the H200 (docs/gpu-runs/2026-12-01-h200.md, run 15).
func TestRegistryBackupsCounted(t *testing.T) {
	v := newRegistryView(t)
	a := v.malloc(1000)
	v.write(a, 1)
	s := v.snapshot() // v has the GPU: a new backup of a's contents
	buf := s.backup.buf
	c := v.clone() // another backup, for the clone
	v.write(a, 2)  // v keeps the GPU
	c.restore(s)   // c is not the owner: its state shares s's backup
	if c.st.backup != s.backup || s.backup.refs != 2 {
		t.Fatalf("the restored clone does not share the snapshot's backup (refs %d)", s.backup.refs)
	}
	b := s.backup
	held := func() bool { _, ok := v.f.mem[buf.ptr]; return ok && v.r.backups[b] }
	v.r.bury(s) // the snapshot dies: the clone still needs the contents
	v.r.drain()
	if !held() {
		t.Fatal("the backup went with the snapshot while the clone still holds it")
	}
	if got := c.read(a); got != 1 {
		t.Errorf("the clone reads %d, want the snapshot's 1", got)
	}
	// c took the GPU: its contents are the segments' now, so the backup's
	// last holder let go; the buffer waits as a spare for the next backup
	// (once the device's next call drains).
	v.r.drain()
	if len(v.r.backups) != 1 || v.r.spareBytes == 0 {
		t.Errorf("after the clone took the GPU: %d backups held, %d spare bytes; want v's one backup and the spare", len(v.r.backups), v.r.spareBytes)
	}
	// The last clone closes: everything left is freed, spares and the
	// backup v holds included.
	v.r.buryView(c.st)
	v.r.buryView(v.st)
	if len(v.f.mem) != 0 {
		t.Errorf("after the last clone: %d buffers still allocated", len(v.f.mem))
	}
	if v.f.released != 1 {
		t.Errorf("released %d times, want 1", v.f.released)
	}
}

// TestRegistryRandomTimeTravel drives one registry through random
// sequences of what the engine and the sessions do with clones and
// snapshots (allocate, write, free, make an executable graph and point its
// memcpy node elsewhere, snapshot, restore, clone, and drop either, their
// cleanups drained at the registry's next call) and checks every live
// clone against a model after every step: it reads what it last wrote or
// restored, whoever had the GPU in between, its graphs are alive and copy
// from where it says, and no segment a live state holds is ever freed (the
// fake driver fails a read of freed memory and a second free).
func TestRegistryRandomTimeTravel(t *testing.T) {
	for seed := uint64(1); seed <= 300; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		type snap struct {
			st  *state
			val map[device.Ptr]byte
		}
		type clone struct {
			v   *view
			val map[device.Ptr]byte
		}
		first := newRegistryView(t)
		views := []*clone{{first, map[device.Ptr]byte{}}}
		var snaps []*snap
		copyVals := func(m map[device.Ptr]byte) map[device.Ptr]byte {
			c := make(map[device.Ptr]byte, len(m))
			for k, v := range m {
				c[k] = v
			}
			return c
		}
		anySeg := func(m map[device.Ptr]byte) (device.Ptr, bool) {
			keys := make([]device.Ptr, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			if len(keys) == 0 {
				return 0, false
			}
			slices.Sort(keys)
			return keys[r.IntN(len(keys))], true
		}
		var log []string
		// set writes a new byte all over segment p of c, in the model too.
		set := func(c *clone, p device.Ptr, what string) {
			b := byte(1 + r.IntN(250))
			c.v.write(p, b)
			c.val[p] = b
			log = append(log, fmt.Sprintf("%s %#x = %d", what, uint64(p), b))
		}
		h := uint64(0x5000)
		for step := 0; step < 60; step++ {
			c := views[r.IntN(len(views))]
			v := c.v
			switch op := r.IntN(12); op {
			case 10:
				// an executable graph whose memcpy node writes one of the
				// clone's segments from another
				dst, ok1 := anySeg(c.val)
				src, ok2 := anySeg(c.val)
				if ok1 && ok2 {
					v.use()
					v.exec(h, dst, src)
					h += 2
					log = append(log, fmt.Sprintf("exec %#x: %#x <- %#x", h-1, uint64(dst), uint64(src)))
				}
			case 11:
				// the node pointed at another source (an input's new address)
				if src, ok := anySeg(c.val); ok && len(v.st.execs) > 0 {
					es := make([]device.ExecHandle, 0, len(v.st.execs))
					for e := range v.st.execs {
						es = append(es, e)
					}
					slices.Sort(es)
					e := es[r.IntN(len(es))]
					for dst := range v.st.execs[e].src {
						v.updateCopy(e, dst, src)
						log = append(log, fmt.Sprintf("copy of %#x: %#x <- %#x", uint64(e), uint64(dst), uint64(src)))
					}
				}
			case 0, 1:
				set(c, v.malloc(int64(64*(1+r.IntN(4)))), "malloc")
			case 2:
				if p, ok := anySeg(c.val); ok {
					set(c, p, "write")
				}
			case 3:
				if p, ok := anySeg(c.val); ok {
					v.free(p)
					delete(c.val, p)
					log = append(log, fmt.Sprintf("free %#x", uint64(p)))
				}
			case 4, 5:
				snaps = append(snaps, &snap{v.snapshot(), copyVals(c.val)})
				log = append(log, "snapshot")
			case 6:
				if len(snaps) > 0 {
					s := snaps[r.IntN(len(snaps))]
					v.restore(s.st)
					c.val = copyVals(s.val)
					log = append(log, "restore")
				}
			case 7:
				views = append(views, &clone{v.clone(), copyVals(c.val)})
				log = append(log, "clone")
			case 8:
				if len(snaps) > 0 {
					k := r.IntN(len(snaps))
					v.r.bury(snaps[k].st)
					snaps = slices.Delete(snaps, k, k+1)
					log = append(log, "drop a snapshot")
				}
			case 9:
				if len(views) > 1 {
					k := r.IntN(len(views))
					v.r.buryView(views[k].v.st)
					views = slices.Delete(views, k, k+1)
					log = append(log, "drop a clone")
				}
			}
			for i, x := range views {
				for p, want := range x.val {
					if got := x.v.read(p); got != want {
						t.Fatalf("seed %d, step %d: clone %d reads %d at %#x, want %d; steps:\n%s",
							seed, step, i, got, uint64(p), want, strings.Join(log, "\n"))
					}
				}
				// On the GPU, each of the clone's executable graphs is
				// alive and copies from where the clone says.
				x.v.use()
				for e, info := range x.v.st.execs {
					if slices.Contains(x.v.f.freed, resource{resExec, uint64(e)}) {
						t.Fatalf("seed %d, step %d: clone %d's executable graph %#x was freed; steps:\n%s",
							seed, step, i, uint64(e), strings.Join(log, "\n"))
					}
					for dst, want := range info.src {
						if got := x.v.f.nodes[e][dst]; got != want {
							t.Fatalf("seed %d, step %d: clone %d's graph %#x copies %#x from %#x, want %#x; steps:\n%s",
								seed, step, i, uint64(e), uint64(dst), uint64(got.src), uint64(want.src), strings.Join(log, "\n"))
						}
					}
				}
			}
		}
	}
}

// TestRegistryUnknownTravels: which bytes are not modelled is part of a
// state, as its contents are: a snapshot keeps the set it was taken with,
// a restore brings it back, and a clone's set is its own.
func TestRegistryUnknownTravels(t *testing.T) {
	v := newRegistryView(t)
	a := v.malloc(64)
	opq := opaque.Op{Out: opaque.Range{Lo: a, Hi: a + 16}, Opaque: true, Whole: true}
	v.st.unknown.Apply(&opq)
	s := v.snapshot()
	v.st.unknown.Written(a, 4)
	if !v.st.unknown.Known(a, 4) || s.unknown.Known(a, 4) {
		t.Fatal("a write after the snapshot reached the snapshot's set")
	}
	v.restore(s)
	if v.st.unknown.Known(a, 4) {
		t.Fatal("the restore did not bring back the snapshot's set")
	}
	c := v.clone()
	c.st.unknown.Written(a, 4)
	if v.st.unknown.Known(a, 4) || !c.st.unknown.Known(a, 4) {
		t.Fatal("a clone's set is not its own")
	}
}
