//go:build cuda

package cuda

// This file is time travel on the GPU: snapshots and clones of a device.
//
// A graph replays on the addresses it was captured with, so a snapshot
// cannot move memory: it keeps the same segments and saves their contents.
// Every clone of a device and every snapshot is a state: the segments,
// graphs and executable graphs it holds (by address and handle, counted in
// gpu.refs) and, while it is not the one on the GPU, a backup of the
// contents of its segments (device memory, copied device to device). One
// state at a time, the owner, has its contents in the segments; a call on
// another clone first saves the owner's contents to a backup and copies
// its own back (activate). Restoring a snapshot copies its backup into the
// segments. A segment, graph or executable graph is freed only when no
// state holds it, so that a snapshot taken before a FreeSegment, or a
// clone that lives on after it, finds it at the same address; one that
// the restored state does not hold (allocated after the snapshot) is freed
// unless another state holds it: the allocator restored with the engine
// decides what is in use.
//
// Snapshots and clones are dropped by their users without a call (the
// engine drops its record snapshots, sessions their keyframes), so the
// garbage collector's cleanups (runtime.AddCleanup) queue what they held,
// and the device gives it back at its next call that may allocate
// (drain). Backups whose snapshots died are kept as spares for the next
// snapshot, up to maxSpareBytes.

// #include "cgt.h"
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/cgtviz/cgtviz/engine/device"
)

// resource names a segment, graph or executable graph in gpu.refs.
type resource struct {
	kind resourceKind
	h    uint64
}

type resourceKind uint8

const (
	resSegment resourceKind = iota
	resGraph
	resExec
)

// state is what one clone or snapshot holds. A snapshot's state never
// changes; a clone changes its maps in place (they are its own: Snapshot
// and CloneDevice copy them) and replaces an execInfo rather than change
// it (snapshots share them).
type state struct {
	segs   map[device.Ptr]int64 // segment address -> bytes
	graphs map[device.GraphHandle]bool
	execs  map[device.ExecHandle]*execInfo
	// backup holds the contents of segs while the state is not the
	// owner; nil while it is (or when it has no segments).
	backup *backup
}

// execInfo is what an executable graph's memcpy nodes copy from, by
// destination, in one state.
type execInfo struct {
	src map[device.Ptr]copySrc
}

type copySrc struct {
	src   device.Ptr
	bytes int64
}

func newState() *state {
	return &state{segs: map[device.Ptr]int64{}, graphs: map[device.GraphHandle]bool{}, execs: map[device.ExecHandle]*execInfo{}}
}

// copyState returns a state with the same holdings (not yet counted) and
// backup.
func copyState(s *state) *state {
	c := &state{
		segs:   make(map[device.Ptr]int64, len(s.segs)),
		graphs: make(map[device.GraphHandle]bool, len(s.graphs)),
		execs:  make(map[device.ExecHandle]*execInfo, len(s.execs)),
		backup: s.backup,
	}
	for k, v := range s.segs {
		c.segs[k] = v
	}
	for k := range s.graphs {
		c.graphs[k] = true
	}
	for k, v := range s.execs {
		c.execs[k] = v
	}
	return c
}

// backup is a device buffer holding the contents of a state's segments,
// each at off[segment]. It never changes once made, so states share it;
// the garbage collector's cleanup gives its buffer back.
type backup struct {
	buf spareBuf
	off map[device.Ptr]int64
}

type spareBuf struct {
	ptr   C.CUdeviceptr
	bytes int64
}

// maxSpareBytes bounds the buffers of dead backups kept for reuse.
const maxSpareBytes = 1 << 30

// reclaimAt is the device memory in backups beyond which a new backup
// first runs the garbage collector, so that dead snapshots' buffers come
// back before more are allocated.
const reclaimAt = 4 << 30

// hold counts s's holdings as held once more.
func (g *gpu) hold(s *state) {
	for p := range s.segs {
		g.refs[resource{resSegment, uint64(p)}]++
	}
	for h := range s.graphs {
		g.refs[resource{resGraph, uint64(h)}]++
	}
	for h := range s.execs {
		g.refs[resource{resExec, uint64(h)}]++
	}
}

// releaseState gives back everything s holds.
func (g *gpu) releaseState(s *state) error {
	var errs []error
	for p := range s.segs {
		errs = append(errs, g.drop(resource{resSegment, uint64(p)}))
	}
	for h := range s.execs {
		errs = append(errs, g.drop(resource{resExec, uint64(h)}))
	}
	for h := range s.graphs {
		errs = append(errs, g.drop(resource{resGraph, uint64(h)}))
	}
	return errors.Join(errs...)
}

// drop gives back one hold of r; the last frees it in the driver (an
// executable graph then gives back its graph).
func (g *gpu) drop(r resource) error {
	n, ok := g.refs[r]
	if !ok {
		return fmt.Errorf("cuda: internal error: %v is held by nothing", r)
	}
	if n > 1 {
		g.refs[r] = n - 1
		return nil
	}
	delete(g.refs, r)
	if g.closed {
		return nil // the context went, and everything in it
	}
	switch r.kind {
	case resSegment:
		return check(fmt.Sprintf("cuMemFree(%#x)", r.h), C.cgt_mem_free(g.cctx, C.CUdeviceptr(r.h)))
	case resGraph:
		return check("cuGraphDestroy", C.cgt_graph_destroy(g.cctx, C.uint64_t(r.h)))
	}
	e := device.ExecHandle(r.h)
	err := check("cuGraphExecDestroy", C.cgt_exec_destroy(g.cctx, C.uint64_t(r.h)))
	gh := g.execGraph[e]
	delete(g.execGraph, e)
	delete(g.execSrc, e)
	return errors.Join(err, g.drop(resource{resGraph, uint64(gh)}))
}

// bury, buryView and buryBackup are the garbage collector's cleanups of a
// snapshot, a clone and a backup: they run on another goroutine, so they
// only queue, and drain gives back on the device's goroutine.
func (g *gpu) bury(s *state) {
	g.mu.Lock()
	g.dead = append(g.dead, s)
	g.mu.Unlock()
}

func (g *gpu) buryView(s *state) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.dead = append(g.dead, s)
	g.views--
	if g.views == 0 && !g.closed {
		// No clone is left to call the device: this goroutine frees it.
		g.closed = true
		_ = g.release() // nobody is left to tell
	}
}

func (g *gpu) buryBackup(b spareBuf) {
	g.mu.Lock()
	g.deadBackups = append(g.deadBackups, b)
	g.mu.Unlock()
}

// drain gives back what the dead snapshots, clones and backups held.
// Errors of the driver's frees have no caller to go to: a segment the
// driver failed to free stays allocated, which costs memory only. It must
// not run while the owner's contents are being saved (a dead owner's
// segments would be freed under the copy): activate drains first.
func (g *gpu) drain() {
	g.mu.Lock()
	dead := g.dead
	g.dead = nil
	g.mu.Unlock()
	for _, s := range dead {
		if g.owner == s {
			g.owner = nil
		}
		_ = g.releaseState(s)
	}
	g.drainBackups()
}

// drainBackups keeps the buffers of dead backups as spares, or frees them;
// it touches no segment, so it may run at any point.
func (g *gpu) drainBackups() {
	g.mu.Lock()
	backups := g.deadBackups
	g.deadBackups = nil
	g.mu.Unlock()
	for _, b := range backups {
		g.backupBytes -= b.bytes
		if g.spareBytes+b.bytes <= maxSpareBytes && !g.closed {
			g.spare = append(g.spare, b)
			g.spareBytes += b.bytes
			continue
		}
		g.freeBuf(b)
	}
}

func (g *gpu) freeBuf(b spareBuf) {
	if !g.closed {
		_ = C.cgt_mem_free(g.cctx, b.ptr) // see drain
	}
}

// reclaim runs the garbage collector and gives back what it found dead:
// the buffers of backups, spares included, and with states also the
// segments of dead snapshots and clones (not while a save is under way:
// see drain). It reports whether any memory came back.
func (g *gpu) reclaim(states bool) bool {
	before := g.backupBytes + g.spareBytes
	n0 := len(g.refs)
	runtime.GC()
	// Cleanups run on their own goroutine after the collection: give
	// them a moment.
	for i := 0; i < 20; i++ {
		g.mu.Lock()
		n := len(g.deadBackups) + len(g.dead)
		g.mu.Unlock()
		if n > 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if states {
		g.drain()
	} else {
		g.drainBackups()
	}
	for _, b := range g.spare {
		g.freeBuf(b)
	}
	g.spare, g.spareBytes = nil, 0
	return g.backupBytes < before || len(g.refs) < n0
}

// allocBackup returns a buffer of at least bytes: a spare that is not more
// than twice too big, or a new one.
func (g *gpu) allocBackup(bytes int64) (spareBuf, error) {
	g.drainBackups()
	for i, b := range g.spare {
		if b.bytes >= bytes && b.bytes <= 2*bytes {
			g.spare = slices.Delete(g.spare, i, i+1)
			g.spareBytes -= b.bytes
			g.backupBytes += b.bytes
			return b, nil
		}
	}
	if g.backupBytes > reclaimAt {
		g.reclaim(false)
	}
	var p C.CUdeviceptr
	r := C.cgt_mem_alloc(g.cctx, C.size_t(bytes), &p)
	if r == C.CUDA_ERROR_OUT_OF_MEMORY && g.reclaim(false) {
		r = C.cgt_mem_alloc(g.cctx, C.size_t(bytes), &p)
	}
	if err := check(fmt.Sprintf("cuMemAlloc(%d) for a snapshot", bytes), r); err != nil {
		return spareBuf{}, err
	}
	g.backupBytes += bytes
	return spareBuf{ptr: p, bytes: bytes}, nil
}

// backupAlign keeps each segment's copy in a backup aligned as cuMemAlloc
// aligns segments.
const backupAlign = 256

// save copies the contents of segs into a new backup, ordered after all
// queued work and before all later work (cgt_copy_spans). nil for no
// segments.
func (g *gpu) save(segs map[device.Ptr]int64) (*backup, error) {
	if len(segs) == 0 {
		return nil, nil
	}
	addrs := make([]device.Ptr, 0, len(segs))
	for p := range segs {
		addrs = append(addrs, p)
	}
	slices.Sort(addrs)
	off := make(map[device.Ptr]int64, len(addrs))
	var total int64
	for _, p := range addrs {
		off[p] = total
		total += (segs[p] + backupAlign - 1) / backupAlign * backupAlign
	}
	buf, err := g.allocBackup(total)
	if err != nil {
		return nil, err
	}
	dst, src, n := make([]C.CUdeviceptr, len(addrs)), make([]C.CUdeviceptr, len(addrs)), make([]C.size_t, len(addrs))
	for i, p := range addrs {
		dst[i], src[i], n[i] = buf.ptr+C.CUdeviceptr(off[p]), C.CUdeviceptr(p), C.size_t(segs[p])
	}
	if err := g.copySpans(dst, src, n); err != nil {
		g.buryBackup(buf)
		return nil, fmt.Errorf("cuda: snapshot: %w", err)
	}
	b := &backup{buf: buf, off: off}
	runtime.AddCleanup(b, g.buryBackup, buf)
	return b, nil
}

func (g *gpu) copySpans(dst, src []C.CUdeviceptr, n []C.size_t) error {
	if len(dst) == 0 {
		return nil
	}
	return check("cuMemcpyDtoDAsync", C.cgt_copy_spans(g.cctx, C.size_t(len(dst)), &dst[0], &src[0], &n[0],
		g.cstream[device.DefaultStream], g.cstream[device.SideStream], g.events[device.DefaultStream], g.events[device.SideStream]))
}

// load makes s's contents the GPU's: its backup copied into its segments,
// and its executable graphs' copy sources set where the GPU's differ.
func (g *gpu) load(s *state, b *backup) error {
	if len(s.segs) > 0 {
		if b == nil {
			return errors.New("cuda: internal error: a state with segments has no backup")
		}
		var dst, src []C.CUdeviceptr
		var n []C.size_t
		for p, size := range s.segs {
			off, ok := b.off[p]
			if !ok {
				return fmt.Errorf("cuda: internal error: segment %#x is not in the backup", uint64(p))
			}
			dst, src, n = append(dst, C.CUdeviceptr(p)), append(src, b.buf.ptr+C.CUdeviceptr(off)), append(n, C.size_t(size))
		}
		if err := g.copySpans(dst, src, n); err != nil {
			return fmt.Errorf("cuda: restore: %w", err)
		}
	}
	for e, info := range s.execs {
		now := g.execSrc[e]
		for dst, c := range info.src {
			if now[dst] != c {
				if err := g.setCopy(e, dst, c); err != nil {
					return fmt.Errorf("cuda: restore: %w", err)
				}
			}
		}
	}
	return nil
}

// errCapturing refuses what would move contents while a stream captures:
// the copies would be captured.
var errCapturing = errors.New("cuda: a stream of this GPU is capturing: end the capture first")

// activate puts d's contents on the GPU, saving the owner's first.
func (d *Device) activate() error {
	g := d.g
	if g.capturing[device.DefaultStream] || g.capturing[device.SideStream] {
		return errCapturing
	}
	// A dead owner's contents need no saving, and must not be freed
	// under the copy: drain before looking at the owner.
	g.drain()
	if o := g.owner; o != nil {
		b, err := g.save(o.segs)
		if err != nil {
			return err
		}
		o.backup = b
		g.owner = nil
	}
	if err := g.load(d.st, d.st.backup); err != nil {
		d.bad = err
		return err
	}
	g.owner, d.st.backup = d.st, nil
	return nil
}

// snapshot is what Snapshot returns: a state held until the garbage
// collector finds the snapshot dead, or the reason there is none.
type snapshot struct {
	g   *gpu
	st  *state
	err error
}

// freeze returns a copy of d's state, held, with a backup of its contents.
func (d *Device) freeze() (*state, error) {
	g := d.g
	if g.capturing[device.DefaultStream] || g.capturing[device.SideStream] {
		return nil, errCapturing
	}
	g.drain()
	c := copyState(d.st)
	if g.owner == d.st {
		b, err := g.save(d.st.segs)
		if err != nil {
			return nil, err
		}
		c.backup = b
	}
	g.hold(c)
	return c, nil
}

// Snapshot saves the device's state: its segments (which stay allocated
// while the snapshot lives) and their contents (copied device to device,
// SnapshotBytes of device memory), graphs, executable graphs and their
// copy sources. It fails while a stream captures (the copies would be
// captured); the failure is the snapshot's Restore error.
func (d *Device) Snapshot() any {
	if d.bad != nil {
		return &snapshot{err: d.bad}
	}
	st, err := d.freeze()
	if err != nil {
		return &snapshot{err: fmt.Errorf("cuda: snapshot: %w", err)}
	}
	s := &snapshot{g: d.g, st: st}
	runtime.AddCleanup(s, d.g.bury, st)
	return s
}

// Restore puts back the state of a snapshot of this device or of any of
// its clones: the segments, graphs and executable graphs it holds, their
// contents and copy sources. What the device holds and the snapshot does
// not is given back. On failure every later call returns the error, until
// a Restore succeeds.
func (d *Device) Restore(snap any) error {
	if d.closed {
		return errClosed
	}
	s, ok := snap.(*snapshot)
	if !ok || s == nil {
		d.bad = fmt.Errorf("cuda: restore: %T is not a snapshot of a cuda device", snap)
		return d.bad
	}
	if s.err != nil {
		d.bad = fmt.Errorf("cuda: restore: %w", s.err)
		return d.bad
	}
	if s.g != d.g {
		d.bad = fmt.Errorf("cuda: restore: the snapshot is of another device (%s)", s.g.name)
		return d.bad
	}
	g := d.g
	if g.capturing[device.DefaultStream] || g.capturing[device.SideStream] {
		d.bad = fmt.Errorf("cuda: restore: %w", errCapturing)
		return d.bad
	}
	g.drain()
	next := copyState(s.st)
	g.hold(next)
	if g.owner == d.st {
		if err := g.load(next, s.st.backup); err != nil {
			_ = g.releaseState(next)
			d.bad = err
			return err
		}
		next.backup = nil
	}
	old := *d.st
	// d.st keeps its identity: the owner and d's cleanup point at it.
	*d.st = *next
	d.bad = nil
	// Giving back frees only what no state holds: nothing the restored
	// state needs.
	return g.releaseState(&old)
}

// CloneDevice returns a clone: a device on the same GPU, in the same state
// (segments at the same addresses and their contents, graphs, executable
// graphs), independent from now on. A clone costs SnapshotBytes of device
// memory while the other clones use the GPU, and a copy of the contents
// each time the clones take turns. Close it, or drop it: the garbage
// collector gives back what it holds.
func (d *Device) CloneDevice() (device.Device, error) {
	if d.bad != nil {
		return nil, d.bad
	}
	st, err := d.freeze()
	if err != nil {
		return nil, fmt.Errorf("cuda: clone: %w", err)
	}
	return d.g.newView(st), nil
}

// SnapshotBytes is the device memory of one more snapshot or clone: the
// bytes of the device's segments (rounded up to backupAlign each).
func (d *Device) SnapshotBytes() int64 {
	var n int64
	for _, size := range d.st.segs {
		n += (size + backupAlign - 1) / backupAlign * backupAlign
	}
	return n
}
