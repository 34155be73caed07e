package sim

import (
	"fmt"
	"slices"

	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/traces/ops"
)

// This file holds the memory of the simulated device: segments, the
// checked spans of them that operations touch, copy-on-write, and the
// host and device copies.

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
	for j := range d.segs[i].ext {
		if x := &d.segs[i].ext[j]; x.kind == kindData {
			d.dataElems -= x.end - x.off
		}
	}
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

// plan holds a launch's checked operands.
type plan struct{ out, a, b span }

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
	d.order.fence() // (the CUDA device's host copies wait for both streams)
	// Literal values are kept whatever their size: the caller holds them.
	copy(d.target(sp, true), src)
	return nil
}

// CopyDtoH copies len(dst) elements at src to dst, synchronously; it is
// never captured. When some of them were not computed (content.go) it
// fails with device.ErrValuesUnknown and leaves dst alone.
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
	d.order.fence() // (the CUDA device's host copies wait for both streams)
	if !d.known(sp) {
		return fmt.Errorf("sim: copy DtoH: src 0x%x+%s: %w", src, bytes(sp.n), device.ErrValuesUnknown)
	}
	if sp.seg >= 0 {
		d.materialise(&d.segs[sp.seg], sp.off, dst)
	}
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
	if err := d.touch(s, "copy", &p); err != nil {
		return fmt.Errorf("sim: copy DtoD: %w", err)
	}
	d.copySpan(p.out, p.a)
	return nil
}
