package cuda

// This file is the bookkeeping of time travel on the GPU, in pure Go so
// that it is tested on any machine (registry_test.go, with a driver that
// keeps memory in Go); snapshot.go puts it on the CUDA driver.
//
// A graph replays on the addresses it was captured with, so a snapshot
// cannot move memory: it keeps the same segments and saves their contents.
// Every clone of a device and every snapshot is a state: the segments,
// graphs and executable graphs it holds (by address and handle, counted in
// registry.refs) and, while it is not the one on the GPU, a backup of the
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

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/engine/device/opaque"
)

// resource names a segment, graph or executable graph in registry.refs.
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

func (r resource) String() string {
	return fmt.Sprintf("%s %#x", [...]string{"segment", "graph", "executable graph"}[r.kind], r.h)
}

// state is what one clone or snapshot holds. A snapshot's state never
// changes; a clone changes its maps in place (they are its own: freeze
// copies them) and replaces an execInfo rather than change it (snapshots
// share them).
type state struct {
	segs   map[device.Ptr]int64 // segment address -> bytes
	graphs map[device.GraphHandle]bool
	execs  map[device.ExecHandle]*execInfo
	// unknown is the bytes whose values the engine does not model
	// (package opaque): the GPU holds a number there, but not one the
	// engine may show (opaque.go).
	unknown opaque.Set
	// backup holds the contents of segs while the state is not the
	// owner; nil while it is (or when it has no segments).
	backup *backup
}

// execInfo is what an executable graph's memcpy nodes copy from, by
// destination, in one state.
type execInfo struct {
	src map[device.Ptr]copySrc
	// opq is the graph's effect on which values are modelled, with the
	// same copy sources (opaque.go).
	opq *opaque.Exec
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
		// The set is the state's, as its contents are.
		unknown: s.unknown.Clone(),
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
// each at off[segment]. It never changes once made, so states share it:
// refs counts the states that hold it (hold, setBackup), and the last to
// let go gives its buffer back (unrefBackup). Counted, not left to the
// garbage collector, which weighs a backup by its Go bytes and not by the
// device memory it holds.
type backup struct {
	buf  spareBuf
	off  map[device.Ptr]int64
	refs int
}

type spareBuf struct {
	ptr   uint64
	bytes int64
}

// maxSpareBytes bounds the buffers of dead backups kept for reuse.
const maxSpareBytes = 1 << 30

// reclaimAt is the device memory in backups beyond which a new backup
// first runs the garbage collector, so that dead snapshots' buffers come
// back before more are allocated.
const reclaimAt = 4 << 30

// backupAlign keeps each segment's copy in a backup aligned as cuMemAlloc
// aligns segments.
const backupAlign = 256

func alignBackup(n int64) int64 { return (n + backupAlign - 1) / backupAlign * backupAlign }

// driver is what the registry needs of the GPU. Copies are ordered after
// all work queued on the device's streams and before all later work.
type driver interface {
	// freeResource frees a segment (cuMemFree), graph or executable graph.
	freeResource(r resource) error
	// allocMem reserves device memory for a backup; oom says the error is
	// out of memory.
	allocMem(bytes int64) (ptr uint64, oom bool, err error)
	freeMem(ptr uint64)
	// copySpans copies n[i] bytes from src[i] to dst[i], device to device.
	copySpans(dst, src []uint64, n []int64) error
	// setCopyNode points the memcpy node of e (made from g) that writes
	// dst at c.
	setCopyNode(e device.ExecHandle, g device.GraphHandle, dst device.Ptr, c copySrc) error
	// release frees the device itself, when its last clone is gone.
	release() error
}

// registry is what every clone of one GPU shares for time travel.
type registry struct {
	drv driver
	// owner is the state whose contents the segments hold now; the other
	// clones' contents wait in their backups.
	owner *state
	// refs counts the holders (clones and snapshots) of each segment,
	// graph and executable graph; at zero the driver frees it.
	refs map[resource]int
	// execGraph is the graph each executable graph was made from (which
	// the executable graph holds), execSrc the source that each of its
	// memcpy nodes copies from now, by destination.
	execGraph map[device.ExecHandle]device.GraphHandle
	execSrc   map[device.ExecHandle]map[device.Ptr]copySrc
	// spare are backup buffers whose snapshots died, kept for the next.
	spare      []spareBuf
	spareBytes int64
	// backupBytes is the device memory of backups not yet given back.
	backupBytes int64
	// backups are the backups some state holds (freeAll gives them back).
	backups map[*backup]bool

	// mu guards what GC cleanups touch: the queues of dead states and
	// backups, the count of open clones, closed.
	mu          sync.Mutex
	dead        []*state
	deadBackups []spareBuf
	views       int
	closed      bool
}

// init readies an empty registry on drv.
func (g *registry) init(drv driver) {
	g.drv = drv
	g.refs = map[resource]int{}
	g.execGraph = map[device.ExecHandle]device.GraphHandle{}
	g.execSrc = map[device.ExecHandle]map[device.Ptr]copySrc{}
	g.backups = map[*backup]bool{}
}

// hold counts s's holdings as held once more.
func (g *registry) hold(s *state) {
	for p := range s.segs {
		g.refs[resource{resSegment, uint64(p)}]++
	}
	for h := range s.graphs {
		g.refs[resource{resGraph, uint64(h)}]++
	}
	for h := range s.execs {
		g.refs[resource{resExec, uint64(h)}]++
	}
	if s.backup != nil {
		s.backup.refs++
	}
}

// setBackup makes b (or nil) the backup of s, which is held: s gives back
// the one it had.
func (g *registry) setBackup(s *state, b *backup) {
	if old := s.backup; old != nil {
		g.unrefBackup(old)
	}
	s.backup = b
	if b != nil {
		b.refs++
	}
}

// unrefBackup lets go of one hold of b; the last gives its buffer back (a
// spare for the next backup, or freed: drainBackups).
func (g *registry) unrefBackup(b *backup) {
	b.refs--
	if b.refs > 0 {
		return
	}
	delete(g.backups, b)
	g.buryBackup(b.buf)
}

// releaseState gives back everything s holds.
func (g *registry) releaseState(s *state) error {
	var errs []error
	if b := s.backup; b != nil {
		s.backup = nil
		g.unrefBackup(b)
	}
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

// addExec counts a new executable graph of gh, held by one state, whose
// memcpy nodes copy from srcs; the executable graph holds its graph.
func (g *registry) addExec(e device.ExecHandle, gh device.GraphHandle, srcs map[device.Ptr]copySrc) {
	g.refs[resource{resGraph, uint64(gh)}]++
	g.refs[resource{resExec, uint64(e)}] = 1
	g.execGraph[e] = gh
	g.execSrc[e] = srcs
}

// drop gives back one hold of r; the last frees it in the driver (an
// executable graph then gives back its graph).
func (g *registry) drop(r resource) error {
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
	err := g.drv.freeResource(r)
	if r.kind != resExec {
		return err
	}
	e := device.ExecHandle(r.h)
	gh := g.execGraph[e]
	delete(g.execGraph, e)
	delete(g.execSrc, e)
	return errors.Join(err, g.drop(resource{resGraph, uint64(gh)}))
}

// setCopy points e's memcpy node that writes dst at c, and remembers it.
func (g *registry) setCopy(e device.ExecHandle, dst device.Ptr, c copySrc) error {
	if err := g.drv.setCopyNode(e, g.execGraph[e], dst, c); err != nil {
		return err
	}
	m := g.execSrc[e]
	if m == nil {
		m = map[device.Ptr]copySrc{}
		g.execSrc[e] = m
	}
	m[dst] = c
	return nil
}

// bury, buryView and buryBackup are the garbage collector's cleanups of a
// snapshot, a clone and a backup: they run on another goroutine, so they
// only queue, and drain gives back on the device's goroutine.
func (g *registry) bury(s *state) {
	g.mu.Lock()
	g.dead = append(g.dead, s)
	g.mu.Unlock()
}

func (g *registry) buryView(s *state) {
	g.mu.Lock()
	g.dead = append(g.dead, s)
	g.views--
	last := g.views == 0 && !g.closed
	g.mu.Unlock()
	if last {
		// No clone is left to call the device: this goroutine frees it.
		g.freeAll()
		g.setClosed()
		_ = g.drv.release() // nobody is left to tell
	}
}

// freeAll gives back, as the last clone of the GPU goes, everything the
// registry still holds in the driver: what dead snapshots and clones
// held, what no one gave back, and the spare buffers. Releasing the
// primary context does not free them while another Device of the same GPU
// is open in the process (each cuda.New retains the context): a program
// or a test that opens and drops devices would keep every segment.
func (g *registry) freeAll() {
	g.drain()
	for r := range g.refs {
		_ = g.drv.freeResource(r) // memory only: nobody is left to tell
	}
	clear(g.refs)
	clear(g.execGraph)
	clear(g.execSrc)
	for b := range g.backups { // held by snapshots nobody released
		g.freeBuf(b.buf)
		g.backupBytes -= b.buf.bytes
	}
	clear(g.backups)
	for _, b := range g.spare { // (drain moved the dead backups here)
		g.freeBuf(b)
	}
	g.spare, g.spareBytes = nil, 0
}

func (g *registry) setClosed() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

func (g *registry) buryBackup(b spareBuf) {
	g.mu.Lock()
	g.deadBackups = append(g.deadBackups, b)
	g.mu.Unlock()
}

// addView counts one more open clone; closeView one less, and reports
// whether it was the last (the caller then gives back what is left,
// freeAll, closes the registry, setClosed, and releases the device; the
// frees need the registry open).
func (g *registry) addView() {
	g.mu.Lock()
	g.views++
	g.mu.Unlock()
}

func (g *registry) closeView() (last bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.views--
	return g.views == 0 && !g.closed
}

// drain gives back what the dead snapshots, clones and backups held.
// Errors of the driver's frees have no caller to go to: a segment the
// driver failed to free stays allocated, which costs memory only. It must
// not run while the owner's contents are being saved (a dead owner's
// segments would be freed under the copy): activate drains first.
func (g *registry) drain() {
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
func (g *registry) drainBackups() {
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

func (g *registry) freeBuf(b spareBuf) {
	if !g.closed {
		g.drv.freeMem(b.ptr)
	}
}

// reclaim runs the garbage collector and gives back what it found dead:
// the buffers of backups, spares included, and with states also the
// segments of dead snapshots and clones (not while a save is under way:
// see drain). It reports whether any memory came back.
func (g *registry) reclaim(states bool) bool {
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
func (g *registry) allocBackup(bytes int64) (spareBuf, error) {
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
	p, oom, err := g.drv.allocMem(bytes)
	if oom && g.reclaim(false) {
		p, _, err = g.drv.allocMem(bytes)
	}
	if err != nil {
		return spareBuf{}, fmt.Errorf("cuda: snapshot of %d bytes: %w", bytes, err)
	}
	g.backupBytes += bytes
	return spareBuf{ptr: p, bytes: bytes}, nil
}

// save copies the contents of segs into a new backup; nil for no
// segments.
func (g *registry) save(segs map[device.Ptr]int64) (*backup, error) {
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
		total += alignBackup(segs[p])
	}
	buf, err := g.allocBackup(total)
	if err != nil {
		return nil, err
	}
	dst, src, n := make([]uint64, len(addrs)), make([]uint64, len(addrs)), make([]int64, len(addrs))
	for i, p := range addrs {
		dst[i], src[i], n[i] = buf.ptr+uint64(off[p]), uint64(p), segs[p]
	}
	if err := g.drv.copySpans(dst, src, n); err != nil {
		g.buryBackup(buf)
		return nil, fmt.Errorf("cuda: snapshot: %w", err)
	}
	b := &backup{buf: buf, off: off}
	g.backups[b] = true
	return b, nil
}

// load makes s's contents the GPU's: backup b copied into s's segments,
// and s's executable graphs' copy sources set where the GPU's differ.
func (g *registry) load(s *state, b *backup) error {
	if len(s.segs) > 0 {
		if b == nil {
			return errors.New("cuda: internal error: a state with segments has no backup")
		}
		var dst, src []uint64
		var n []int64
		for p, size := range s.segs {
			off, ok := b.off[p]
			if !ok {
				return fmt.Errorf("cuda: internal error: segment %#x is not in the backup", uint64(p))
			}
			dst, src, n = append(dst, uint64(p)), append(src, b.buf.ptr+uint64(off)), append(n, size)
		}
		if err := g.drv.copySpans(dst, src, n); err != nil {
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

// activate puts st's contents on the GPU, saving the owner's first.
func (g *registry) activate(st *state) error {
	// A dead owner's contents need no saving, and must not be freed
	// under the copy: drain before looking at the owner.
	g.drain()
	if o := g.owner; o != nil && o != st {
		b, err := g.save(o.segs)
		if err != nil {
			return err
		}
		g.setBackup(o, b)
		g.owner = nil
	}
	if g.owner != st {
		if err := g.load(st, st.backup); err != nil {
			return err
		}
	}
	g.owner = st
	g.setBackup(st, nil)
	return nil
}

// freeze returns a copy of st, held, with a backup of its contents (st's
// own when it is not the owner: backups never change).
func (g *registry) freeze(st *state) (*state, error) {
	g.drain()
	c := copyState(st)
	if g.owner == st {
		b, err := g.save(st.segs)
		if err != nil {
			return nil, err
		}
		c.backup = b
	}
	g.hold(c)
	return c, nil
}

// restore makes st (a clone's state, kept at its address: the owner and
// the clone's cleanup point at it) hold what from (a frozen state) holds,
// with its contents; what st held and from does not is given back.
func (g *registry) restore(st, from *state) error {
	g.drain()
	next := copyState(from)
	g.hold(next)
	if g.owner == st {
		if err := g.load(next, from.backup); err != nil {
			_ = g.releaseState(next)
			return err
		}
		g.setBackup(next, nil)
	}
	old := *st
	*st = *next
	// Giving back frees only what no state holds: nothing the restored
	// state needs.
	return g.releaseState(&old)
}

// snapshotBytes is the device memory of a backup of st.
func snapshotBytes(st *state) int64 {
	var n int64
	for _, size := range st.segs {
		n += alignBackup(size)
	}
	return n
}
