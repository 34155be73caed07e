package sim

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/traces/ops"
)

// The fake address space.
const (
	// BaseAddress is the first segment's address: a typical address of a
	// CUDA allocation on Linux, so that addresses in traces and the UI look
	// like the ones a GPU gives.
	BaseAddress device.Ptr = 0x7f0000000000
	// SegmentAlign is the alignment of every segment address, cudaMalloc's
	// 2 MiB granularity.
	SegmentAlign = 2 << 20
)

// Defaults of Options.
const (
	DefaultTotalBytes int64 = 80 << 30 // an 80 GiB GPU
	DefaultName             = "sim"
)

// numStreams is how many streams the device has: device.DefaultStream and
// device.SideStream.
const numStreams = 2

// Options configure New. Zero fields take the defaults.
type Options struct {
	// TotalBytes is the device's memory; MallocSegment fails with
	// device.ErrOutOfMemory beyond it. Default DefaultTotalBytes.
	TotalBytes int64
	// Name is what Name returns. Default DefaultName.
	Name string
}

// segment is one live allocation. Segments are values in Device.segs so
// that a snapshot copies them in one allocation.
type segment struct {
	addr device.Ptr
	size int64 // bytes asked for; the address space spends a multiple of SegmentAlign
	// data holds size/4 elements. It is nil until the segment is first
	// touched, so that reserving a large segment costs no Go memory.
	data []float32
	// gen is the device generation that owns data. When it differs from
	// Device.gen, data is shared with a snapshot and must be copied before
	// it is written (copy-on-write).
	gen uint64
}

// capture is the capture state of one stream.
type capture struct {
	active bool
	// nodes are the launches recorded so far. A snapshot holds them with
	// capacity equal to length, so that an append after a Restore never
	// writes into an array another snapshot can see.
	nodes []node
}

// Device is the simulated device. Create it with New. Like every
// device.Device, it is used from one goroutine at a time; its snapshots may
// be read from any goroutine.
type Device struct {
	name  string
	total int64
	used  int64
	next  device.Ptr // the bump pointer: the next segment's address

	segs []segment // live segments, sorted by address
	last int       // index in segs of the last lookup's hit, a cache for the hot path

	gen uint64 // bumped by Snapshot and Restore; see segment.gen

	graphs    map[device.GraphHandle]*graph
	execs     map[device.ExecHandle]*exec
	mapShared bool // graphs and execs are shared with a snapshot: clone before a change
	nextGraph device.GraphHandle
	nextExec  device.ExecHandle

	capture [numStreams]capture

	faults []pending
	calls  [numFaultOps]int
	// fired are the faults that fired. Restore keeps them (see fault), so
	// they are not part of a snapshot; Clone copies them.
	fired []pending

	closed bool
	// broken is set by a Restore given something that is not a snapshot of
	// this device: the caller no longer knows the state, so every later
	// call fails.
	broken error
}

var (
	_ device.Device        = (*Device)(nil)
	_ device.Snapshotter   = (*Device)(nil)
	_ device.Cloner        = (*Device)(nil)
	_ device.SnapshotSizer = (*Device)(nil)
)

var errClosed = errors.New("sim: device is closed")

// New returns a device with no segments and no graphs.
func New(opts Options) *Device {
	d := &Device{
		name:   opts.Name,
		total:  opts.TotalBytes,
		next:   BaseAddress,
		last:   -1,
		graphs: map[device.GraphHandle]*graph{},
		execs:  map[device.ExecHandle]*exec{},
	}
	if d.name == "" {
		d.name = DefaultName
	}
	if d.total <= 0 {
		d.total = DefaultTotalBytes
	}
	return d
}

// Name returns the name from Options.
func (d *Device) Name() string { return d.name }

func (d *Device) alive() error {
	if d.broken != nil {
		return d.broken
	}
	if d.closed {
		return errClosed
	}
	return nil
}

func checkStream(s device.Stream) error {
	if s < 0 || s >= numStreams {
		return fmt.Errorf("stream %d does not exist (streams: 0, 1)", s)
	}
	return nil
}

// MallocSegment reserves size bytes at the next free 2 MiB-aligned address.
// Freed ranges are never handed out again: addresses then depend only on
// the sequence of calls (determinism across runs and devices), and a stale
// address of a freed segment can never alias a newer one, so every
// use-after-free is caught as "not in any live segment". The memory budget
// counts the bytes asked for, which is what PyTorch's allocator asks of
// cudaMalloc (already a multiple of 2 MiB).
func (d *Device) MallocSegment(size int64) (device.Ptr, error) {
	if err := d.alive(); err != nil {
		return 0, err
	}
	if err := d.fault(FaultMalloc); err != nil {
		return 0, err
	}
	if size <= 0 {
		return 0, fmt.Errorf("sim: malloc_segment %d B: size must be positive", size)
	}
	if free := d.total - d.used; size > free {
		return 0, fmt.Errorf("sim: malloc_segment %d B: only %d B free of %d B: %w", size, free, d.total, device.ErrOutOfMemory)
	}
	// Rounded in uint64, where a positive int64 plus the alignment cannot
	// overflow.
	span := (uint64(size) + SegmentAlign - 1) / SegmentAlign * SegmentAlign
	if uint64(d.next)+span < uint64(d.next) {
		return 0, fmt.Errorf("sim: malloc_segment %d B: fake address space exhausted at 0x%x: %w", size, d.next, device.ErrOutOfMemory)
	}
	p := d.next
	d.next += device.Ptr(span)
	d.used += size
	d.segs = append(d.segs, segment{addr: p, size: size, gen: d.gen})
	return p, nil
}

// FreeSegment releases the segment that starts at p. Graphs that use it
// stay valid as objects, but replaying them is an error from now on.
func (d *Device) FreeSegment(p device.Ptr) error {
	if err := d.alive(); err != nil {
		return err
	}
	i := d.find(p)
	if i < 0 {
		return fmt.Errorf("sim: free_segment 0x%x: not a live segment", p)
	}
	if d.segs[i].addr != p {
		return fmt.Errorf("sim: free_segment 0x%x: inside segment 0x%x, not its start", p, d.segs[i].addr)
	}
	d.used -= d.segs[i].size
	d.segs = slices.Delete(d.segs, i, i+1)
	d.last = -1
	return nil
}

// MemInfo returns the free and total bytes.
func (d *Device) MemInfo() (free, total int64) { return d.total - d.used, d.total }

// find returns the index of the live segment holding address p, or -1.
func (d *Device) find(p device.Ptr) int {
	if c := d.last; c >= 0 && c < len(d.segs) {
		if s := &d.segs[c]; p >= s.addr && uint64(p-s.addr) < uint64(s.size) {
			return c
		}
	}
	// The largest i with segs[i].addr <= p.
	lo, hi := 0, len(d.segs)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if d.segs[mid].addr <= p {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	i := lo - 1
	if i < 0 || uint64(p-d.segs[i].addr) >= uint64(d.segs[i].size) {
		return -1
	}
	d.last = i
	return i
}

// span is a checked range of n float32 elements of one live segment. The
// zero-length span (seg -1) touches no memory and needs no address.
type span struct {
	seg int
	off int64 // in elements
	n   int64
}

var noSpan = span{seg: -1}

// span checks that n elements at p lie in one live segment, 4-byte
// aligned. role names the operand ("a", "dst") for the error.
func (d *Device) span(role string, p device.Ptr, n int64) (span, error) {
	if n == 0 {
		return noSpan, nil
	}
	if n < 0 {
		return noSpan, fmt.Errorf("%s 0x%x: negative element count %d", role, p, n)
	}
	i := d.find(p)
	if i < 0 {
		return noSpan, fmt.Errorf("%s 0x%x+%s: not in any live segment", role, p, bytes(n))
	}
	s := &d.segs[i]
	off := int64(p - s.addr)
	if off%4 != 0 {
		return noSpan, fmt.Errorf("%s 0x%x+%s: not aligned to 4 bytes (offset %d in segment 0x%x)", role, p, bytes(n), off, s.addr)
	}
	if n > s.size/4-off/4 {
		return noSpan, fmt.Errorf("%s 0x%x+%s: runs past the end of segment 0x%x (%d B)", role, p, bytes(n), s.addr, s.size)
	}
	return span{seg: i, off: off / 4, n: n}, nil
}

// bytes prints n float32 elements as a byte count, or as elements when the
// byte count would overflow.
func bytes(n int64) string {
	if n > 1<<60 {
		return fmt.Sprintf("%d elements", n)
	}
	return fmt.Sprintf("%d B", n*4)
}

// writable returns the elements of sp for writing, first giving the
// segment its own copy of data if a snapshot shares it.
func (d *Device) writable(sp span) []float32 {
	if sp.seg < 0 {
		return nil
	}
	s := &d.segs[sp.seg]
	d.ensure(s, sp.off+sp.n, true)
	return s.data[sp.off : sp.off+sp.n : sp.off+sp.n]
}

// readable returns the elements of sp for reading. An untouched segment
// reads as zeros (cudaMalloc promises nothing; zeros keep runs
// deterministic).
func (d *Device) readable(sp span) []float32 {
	if sp.seg < 0 {
		return nil
	}
	s := &d.segs[sp.seg]
	d.ensure(s, sp.off+sp.n, false)
	return s.data[sp.off : sp.off+sp.n : sp.off+sp.n]
}

// ensure makes s.data cover the first need elements, and owned by the
// device (not shared with a snapshot) when write is set. data only covers
// the part of the segment touched so far (growing by doubling): most
// segments are mostly unused, so copy-on-write after a snapshot copies
// kilobytes rather than whole 2 or 20 MiB segments.
func (d *Device) ensure(s *segment, need int64, write bool) {
	shared := s.gen != d.gen
	have := int64(len(s.data))
	if have >= need && !(write && shared) {
		return
	}
	n := have
	if n < need {
		n = max(need, 2*have, 1024)
		if lim := s.size / 4; n > lim {
			n = lim
		}
	}
	if shared || int64(cap(s.data)) < n {
		nd := make([]float32, n)
		copy(nd, s.data)
		s.data = nd
	} else {
		s.data = s.data[:n]
	}
	s.gen = d.gen
}

// plan holds a launch's checked operands.
type plan struct{ out, a, b span }

// plan checks every operand range of l (and that matmul's output overlaps
// no input) without touching memory.
func (d *Device) plan(l *device.Launch, p *plan) error {
	var err error
	k := l.K
	switch {
	case k.IsBinary(), k.IsUnary(), k == ops.Copy:
		if p.out, err = d.span("out", l.Out, l.N); err != nil {
			return err
		}
		if p.a, err = d.span("a", l.A, l.N); err != nil {
			return err
		}
		p.b = noSpan
		if !k.IsBinary() {
			return nil
		}
		switch l.BKind {
		case ops.BTensor:
			p.b, err = d.span("b", l.B, l.N)
		case ops.BBroadcast:
			p.b, err = d.span("b", l.B, 1)
		case ops.BScalar:
		default:
			err = fmt.Errorf("unknown form of b (%d)", l.BKind)
		}
		return err
	case k == ops.Fill:
		p.a, p.b = noSpan, noSpan
		p.out, err = d.span("out", l.Out, l.N)
		return err
	case k == ops.Sum:
		p.b = noSpan
		if p.out, err = d.span("out", l.Out, 1); err != nil {
			return err
		}
		p.a, err = d.span("a", l.A, l.N)
		return err
	case k == ops.Matmul:
		m, kd, n := l.M, l.Kd, l.Cols
		if m < 0 || kd < 0 || n < 0 {
			return fmt.Errorf("negative size m=%d k=%d n=%d", m, kd, n)
		}
		mn, ok1 := mul(m, n)
		mk, ok2 := mul(m, kd)
		kn, ok3 := mul(kd, n)
		if !ok1 || !ok2 || !ok3 {
			return fmt.Errorf("sizes m=%d k=%d n=%d overflow", m, kd, n)
		}
		if p.out, err = d.span("out", l.Out, mn); err != nil {
			return err
		}
		if p.a, err = d.span("a", l.A, mk); err != nil {
			return err
		}
		if p.b, err = d.span("b", l.B, kn); err != nil {
			return err
		}
		if overlap(l.Out, mn, l.A, mk) {
			return fmt.Errorf("out 0x%x+%s overlaps a 0x%x+%s", l.Out, bytes(mn), l.A, bytes(mk))
		}
		if overlap(l.Out, mn, l.B, kn) {
			return fmt.Errorf("out 0x%x+%s overlaps b 0x%x+%s", l.Out, bytes(mn), l.B, bytes(kn))
		}
		return nil
	}
	return fmt.Errorf("unknown kernel %d", uint8(k))
}

// overlap reports whether two checked element ranges share a byte.
func overlap(p device.Ptr, n int64, q device.Ptr, m int64) bool {
	if n == 0 || m == 0 {
		return false
	}
	return p < q+device.Ptr(m*4) && q < p+device.Ptr(n*4)
}

func mul(x, y int64) (int64, bool) {
	if x == 0 || y == 0 {
		return 0, true
	}
	p := x * y
	return p, p/y == x && p > 0
}

// run executes a planned launch. The output segment is made writable before
// the inputs are sliced, so that an input in the same segment reads the
// array that is written (in-place kernels see their own writes as the CPU
// reference expects).
func (d *Device) run(l *device.Launch, p *plan) error {
	out := d.writable(p.out)
	a := d.readable(p.a)
	b := d.readable(p.b)
	switch k := l.K; {
	case k.IsBinary(), k.IsUnary():
		return ops.Elementwise(k, out, a, b, l.BKind, l.Scalar)
	case k == ops.Copy:
		return ops.CopyCPU(out, a)
	case k == ops.Fill:
		ops.FillCPU(out, l.Scalar)
		return nil
	case k == ops.Sum:
		return ops.SumCPU(out, a)
	case k == ops.Matmul:
		return ops.MatmulCPU(out, a, b, int(l.M), int(l.Kd), int(l.Cols))
	}
	return fmt.Errorf("unknown kernel %d", uint8(l.K))
}

// Launch runs l now on the CPU, or records it when s is capturing. Every
// operand range is checked first, so a failing launch changes no memory.
// The launch is recorded by value: the caller may reuse l.
func (d *Device) Launch(s device.Stream, l *device.Launch) error {
	if err := d.alive(); err != nil {
		return err
	}
	if err := d.fault(FaultLaunch); err != nil {
		return err
	}
	if l == nil {
		return errors.New("sim: launch: nil launch")
	}
	if err := checkStream(s); err != nil {
		return fmt.Errorf("sim: launch %s: %w", l.K, err)
	}
	var p plan
	if err := d.plan(l, &p); err != nil {
		return fmt.Errorf("sim: launch %s: %w", l.K, err)
	}
	if c := &d.capture[s]; c.active {
		c.nodes = append(c.nodes, node{kind: kernelNode, l: *l})
		return nil
	}
	if err := d.run(l, &p); err != nil {
		return fmt.Errorf("sim: launch %s: %w", l.K, err)
	}
	return nil
}

// CopyHtoD copies src to dst, synchronously; it is never captured, even
// while a stream is (relaxed capture mode allows it).
func (d *Device) CopyHtoD(dst device.Ptr, src []float32) error {
	if err := d.alive(); err != nil {
		return err
	}
	if err := d.fault(FaultCopy); err != nil {
		return err
	}
	sp, err := d.span("dst", dst, int64(len(src)))
	if err != nil {
		return fmt.Errorf("sim: copy HtoD: %w", err)
	}
	copy(d.writable(sp), src)
	return nil
}

// CopyDtoH copies len(dst) elements at src to dst, synchronously; it is
// never captured.
func (d *Device) CopyDtoH(dst []float32, src device.Ptr) error {
	if err := d.alive(); err != nil {
		return err
	}
	if err := d.fault(FaultCopy); err != nil {
		return err
	}
	sp, err := d.span("src", src, int64(len(dst)))
	if err != nil {
		return fmt.Errorf("sim: copy DtoH: %w", err)
	}
	if sp.seg >= 0 && d.segs[sp.seg].data == nil {
		clear(dst) // untouched: zeros, without giving the segment memory
		return nil
	}
	copy(dst, d.readable(sp))
	return nil
}

// CopyDtoD copies n elements from src to dst on s, or records a "memcpy"
// node when s is capturing. Overlapping ranges copy as memmove does.
func (d *Device) CopyDtoD(s device.Stream, dst, src device.Ptr, n int64) error {
	if err := d.alive(); err != nil {
		return err
	}
	if err := d.fault(FaultCopy); err != nil {
		return err
	}
	if err := checkStream(s); err != nil {
		return fmt.Errorf("sim: copy DtoD: %w", err)
	}
	nd := node{kind: memcpyNode, l: device.Launch{K: ops.Copy, Out: dst, A: src, N: n}}
	var p plan
	if err := d.planNode(&nd, &p); err != nil {
		return fmt.Errorf("sim: copy DtoD: %w", err)
	}
	if c := &d.capture[s]; c.active {
		c.nodes = append(c.nodes, nd)
		return nil
	}
	copy(d.writable(p.out), d.readable(p.a))
	return nil
}

// WaitStream checks both streams. The simulated device runs every launch
// when it is made, so there is nothing to wait for.
func (d *Device) WaitStream(s, other device.Stream) error {
	if err := d.alive(); err != nil {
		return err
	}
	if err := checkStream(s); err != nil {
		return fmt.Errorf("sim: wait_stream: %w", err)
	}
	if err := checkStream(other); err != nil {
		return fmt.Errorf("sim: wait_stream: %w", err)
	}
	return nil
}

// Synchronize has no work to wait for, but it is an error while a stream
// is capturing, as cudaDeviceSynchronize is (it would end the capture with
// cudaErrorStreamCaptureUnsupported): an engine that syncs mid-capture
// fails on the simulator as it would on a GPU.
func (d *Device) Synchronize() error {
	if err := d.alive(); err != nil {
		return err
	}
	for s := range d.capture {
		if d.capture[s].active {
			return fmt.Errorf("sim: synchronize: stream %d is capturing", s)
		}
	}
	return nil
}

// Close releases every segment, graph and executable graph. Later calls
// fail, except Restore of a snapshot taken before Close.
func (d *Device) Close() error {
	if err := d.alive(); err != nil {
		return err
	}
	d.closed = true
	d.segs = nil
	d.last = -1
	d.used = 0
	d.graphs = map[device.GraphHandle]*graph{}
	d.execs = map[device.ExecHandle]*exec{}
	d.mapShared = false
	d.capture = [numStreams]capture{}
	return nil
}

// mutateHandles is called before graphs or execs change, to stop sharing
// the maps with snapshots.
func (d *Device) mutateHandles() {
	if d.mapShared {
		d.graphs = maps.Clone(d.graphs)
		d.execs = maps.Clone(d.execs)
		d.mapShared = false
	}
}
