//go:build cuda

package cuda

// This file holds the device's memory: segments (cuMemAlloc) and the
// copies between host and device and within the device, each ordered with
// the work on both streams.

// #include "cgt.h"
import "C"

import (
	"fmt"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/engine/device/opaque"
)

// MallocSegment reserves size bytes with cuMemAlloc, in relaxed capture
// mode so that it is legal while this thread captures (PyTorch does the
// same). Out of memory is an error wrapping device.ErrOutOfMemory.
func (d *Device) MallocSegment(size int64) (device.Ptr, error) {
	if err := d.use(); err != nil {
		return 0, err
	}
	if size <= 0 {
		return 0, fmt.Errorf("cuda: segment of %d bytes", size)
	}
	g := d.g
	g.drain()
	var p C.CUdeviceptr
	r := C.cgt_mem_alloc(g.cctx, C.size_t(size), &p)
	if r == C.CUDA_ERROR_OUT_OF_MEMORY && g.reclaim(true) {
		// Backups of dead snapshots held the memory.
		r = C.cgt_mem_alloc(g.cctx, C.size_t(size), &p)
	}
	if err := check(fmt.Sprintf("cuMemAlloc(%d)", size), r); err != nil {
		return 0, err
	}
	ptr := device.Ptr(p)
	d.st.segs[ptr] = size
	g.refs[resource{resSegment, uint64(ptr)}] = 1
	return ptr, nil
}

// FreeSegment gives back a segment of this device. The driver frees it
// (cuMemFree) once no clone or snapshot of the device holds it: a snapshot
// restored later needs it at the same address. An address that is not a
// segment of this device is refused before the driver sees it, since it
// may be another device's segment in the same context.
func (d *Device) FreeSegment(p device.Ptr) error {
	if err := d.use(); err != nil {
		return err
	}
	if _, ok := d.st.segs[p]; !ok {
		return check(fmt.Sprintf("cuMemFree(%#x): not a segment of this device", uint64(p)), C.CUDA_ERROR_INVALID_VALUE)
	}
	// Its bytes are no one's now: a segment allocated there later starts
	// modelled, as fresh memory does.
	d.st.unknown.Written(p, d.st.segs[p]/4)
	delete(d.st.segs, p)
	return d.g.drop(resource{resSegment, uint64(p)})
}

// MemInfo returns cuMemGetInfo's free and total bytes, or zeros when the
// driver cannot tell.
func (d *Device) MemInfo() (free, total int64) {
	if d.enter() != nil {
		return 0, 0
	}
	defer d.leave()
	free, total, err := cu.MemInfo()
	if err != nil {
		return 0, 0
	}
	return free, total
}

// capturingStream returns whether a stream is capturing, and a stream that
// is not (the one host copies use then).
func (g *gpu) capturingStream() (capturing bool, free device.Stream, ok bool) {
	switch {
	case !g.capturing[device.DefaultStream] && !g.capturing[device.SideStream]:
		return false, device.DefaultStream, true
	case !g.capturing[device.DefaultStream]:
		return true, device.DefaultStream, true
	case !g.capturing[device.SideStream]:
		return true, device.SideStream, true
	}
	return true, 0, false
}

// CopyHtoD copies src to dst after all work queued on both streams and
// before any work queued after it (cgt_upload: through the pinned staging
// buffer, between event fences). src may be reused once it returns. While
// a stream captures, the copy is not captured: it runs on the other
// stream, and the host waits for it.
func (d *Device) CopyHtoD(dst device.Ptr, src []float32) error {
	if len(src) == 0 {
		return nil
	}
	if err := d.use(); err != nil {
		return err
	}
	g := d.g
	s, o, fence, err := g.hostCopyStreams(fmt.Sprintf("cuMemcpyHtoD(%#x, %d floats)", uint64(dst), len(src)))
	if err != nil {
		return err
	}
	r := C.cgt_upload(g.cctx, g.staging, C.CUdeviceptr(dst), unsafe.Pointer(&src[0]), C.size_t(len(src)*4),
		g.cstream[s], g.cstream[o], g.events[o], fence)
	if err := check(fmt.Sprintf("cuMemcpyHtoDAsync(%#x, %d floats)", uint64(dst), len(src)), r); err != nil {
		return err
	}
	d.st.unknown.Written(dst, int64(len(src)))
	return nil
}

// CopyDtoH copies len(dst) values from src once all work queued on both
// streams is done (cgt_download), and returns when they have landed.
func (d *Device) CopyDtoH(dst []float32, src device.Ptr) error {
	if len(dst) == 0 {
		return nil
	}
	if err := d.use(); err != nil {
		return err
	}
	if !d.st.unknown.Known(src, int64(len(dst))) {
		// The bytes are there, but not values the engine models.
		return fmt.Errorf("cuda: copy DtoH: %#x+%d floats: %w", uint64(src), len(dst), device.ErrValuesUnknown)
	}
	g := d.g
	s, o, fence, err := g.hostCopyStreams(fmt.Sprintf("cuMemcpyDtoH(%#x, %d floats)", uint64(src), len(dst)))
	if err != nil {
		return err
	}
	r := C.cgt_download(g.cctx, unsafe.Pointer(&dst[0]), C.CUdeviceptr(src), C.size_t(len(dst)*4),
		g.cstream[s], g.cstream[o], g.events[o], fence)
	return check(fmt.Sprintf("cuMemcpyDtoHAsync(%#x, %d floats)", uint64(src), len(dst)), r)
}

// CopyDtoD copies n float32 values on s (cuMemcpyDtoDAsync), or records the
// copy when s is capturing.
func (d *Device) CopyDtoD(s device.Stream, dst, src device.Ptr, n int64) error {
	if err := d.use(); err != nil {
		return err
	}
	st, err := d.g.stream(s)
	if err != nil {
		return err
	}
	if n < 0 {
		return fmt.Errorf("cuda: copy of %d elements", n)
	}
	if n == 0 {
		return nil
	}
	r := C.cgt_memcpy_dtod(d.g.cctx, C.CUdeviceptr(dst), C.CUdeviceptr(src), C.size_t(n*4), st)
	if r != C.CUDA_SUCCESS {
		return check(fmt.Sprintf("cuMemcpyDtoDAsync(%#x <- %#x, %d floats)", uint64(dst), uint64(src), n), r)
	}
	if d.noting(s, false) {
		d.noteOp(s, opaque.CopyOp(dst, src, n))
	}
	return nil
}

// hostCopyStreams picks the streams of a copy between host and device: s,
// the one it runs on, and o, the other, whose queued work it waits for;
// fence is 0 while s captures (the copy is then not part of the graph and
// the host waits for it instead). what names the copy in the error.
func (g *gpu) hostCopyStreams(what string) (s, o device.Stream, fence C.int, err error) {
	capturing, s, ok := g.capturingStream()
	if !ok {
		return 0, 0, 0, fmt.Errorf("cuda: %s: both streams are capturing", what)
	}
	fence = 1
	if capturing {
		fence = 0
	}
	return s, 1 - s, fence, nil
}
