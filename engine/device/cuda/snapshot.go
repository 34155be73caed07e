//go:build cuda

package cuda

// This file is time travel on the GPU: the Device's Snapshot, Restore and
// CloneDevice over the registry (registry.go), and the registry's driver,
// the CUDA calls it needs.

// #include "cgt.h"
import "C"

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/cgtviz/cgtviz/engine/device"
)

// freeResource frees a segment, graph or executable graph in the driver.
func (g *gpu) freeResource(r resource) error {
	switch r.kind {
	case resSegment:
		return check(fmt.Sprintf("cuMemFree(%#x)", r.h), C.cgt_mem_free(g.cctx, C.CUdeviceptr(r.h)))
	case resGraph:
		delete(g.programs, device.GraphHandle(r.h))
		return check("cuGraphDestroy", C.cgt_graph_destroy(g.cctx, C.uint64_t(r.h)))
	}
	return check("cuGraphExecDestroy", C.cgt_exec_destroy(g.cctx, C.uint64_t(r.h)))
}

// allocMem reserves a backup's buffer (cuMemAlloc in relaxed capture mode).
func (g *gpu) allocMem(bytes int64) (uint64, bool, error) {
	var p C.CUdeviceptr
	r := C.cgt_mem_alloc(g.cctx, C.size_t(bytes), &p)
	return uint64(p), r == C.CUDA_ERROR_OUT_OF_MEMORY, check(fmt.Sprintf("cuMemAlloc(%d)", bytes), r)
}

func (g *gpu) freeMem(ptr uint64) {
	_ = C.cgt_mem_free(g.cctx, C.CUdeviceptr(ptr)) // see registry.drain
}

// copySpans copies device ranges on the default stream between fences of
// both streams (cgt_copy_spans): after all queued work, before all later.
func (g *gpu) copySpans(dst, src []uint64, n []int64) error {
	if len(dst) == 0 {
		return nil
	}
	cd, cs, cn := make([]C.CUdeviceptr, len(dst)), make([]C.CUdeviceptr, len(dst)), make([]C.size_t, len(dst))
	for i := range dst {
		cd[i], cs[i], cn[i] = C.CUdeviceptr(dst[i]), C.CUdeviceptr(src[i]), C.size_t(n[i])
	}
	return check("cuMemcpyDtoDAsync", C.cgt_copy_spans(g.cctx, C.size_t(len(cd)), &cd[0], &cs[0], &cn[0],
		g.cstream[device.DefaultStream], g.cstream[device.SideStream], g.events[device.DefaultStream], g.events[device.SideStream]))
}

// setCopyNode is cuGraphExecMemcpyNodeSetParams on the memcpy node of
// e's graph gh that writes dst.
func (g *gpu) setCopyNode(e device.ExecHandle, gh device.GraphHandle, dst device.Ptr, c copySrc) error {
	r := C.cgt_exec_update_copy(g.cctx, C.uint64_t(gh), C.uint64_t(e), C.CUdeviceptr(dst), C.CUdeviceptr(c.src), C.size_t(c.bytes))
	return check("cuGraphExecMemcpyNodeSetParams", r)
}

// errCapturing refuses what would move contents while a stream captures:
// the copies would be captured.
var errCapturing = errors.New("cuda: a stream of this GPU is capturing: end the capture first")

func (g *gpu) isCapturing() bool {
	return g.capturing[device.DefaultStream] || g.capturing[device.SideStream]
}

// activate puts d's contents on the GPU, saving the owner's first.
func (d *Device) activate() error {
	if d.g.isCapturing() {
		return errCapturing
	}
	if err := d.g.activate(d.st); err != nil {
		d.bad = err
		return err
	}
	return nil
}

// snapshot is what Snapshot returns: a state held until the garbage
// collector finds the snapshot dead, or the reason there is none.
type snapshot struct {
	g       *gpu
	st      *state
	err     error
	cleanup runtime.Cleanup
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
	if d.g.isCapturing() {
		return &snapshot{err: fmt.Errorf("cuda: snapshot: %w", errCapturing)}
	}
	st, err := d.g.freeze(d.st)
	if err != nil {
		return &snapshot{err: err}
	}
	s := &snapshot{g: d.g, st: st}
	s.cleanup = runtime.AddCleanup(s, d.g.bury, st)
	return s
}

// Release gives back what the snapshot holds (device.Releaser) now rather
// than when the garbage collector finds it dead: the collector sees only
// the snapshot's few bytes of Go memory, not the device memory its copies
// hold, so a loop of records each snapshotting a pool (the engine's
// rollback) filled the GPU before it ran. A released snapshot restores
// nothing; releasing twice does nothing.
func (s *snapshot) Release() {
	if s == nil || s.st == nil {
		return
	}
	s.cleanup.Stop()
	s.g.bury(s.st)
	s.st, s.err = nil, errors.New("the snapshot was released")
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
	switch {
	case !ok || s == nil:
		d.bad = fmt.Errorf("cuda: restore: %T is not a snapshot of a cuda device", snap)
	case s.err != nil:
		d.bad = fmt.Errorf("cuda: restore: %w", s.err)
	case s.g != d.g:
		d.bad = fmt.Errorf("cuda: restore: the snapshot is of another device (%s)", s.g.name)
	case d.g.isCapturing():
		d.bad = fmt.Errorf("cuda: restore: %w", errCapturing)
	default:
		d.bad = d.g.restore(d.st, s.st)
	}
	return d.bad
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
	if d.g.isCapturing() {
		return nil, fmt.Errorf("cuda: clone: %w", errCapturing)
	}
	st, err := d.g.freeze(d.st)
	if err != nil {
		return nil, fmt.Errorf("cuda: clone: %w", err)
	}
	return d.g.newView(st), nil
}

// SnapshotBytes is the device memory of one more snapshot or clone: the
// bytes of the device's segments (rounded up to backupAlign each).
func (d *Device) SnapshotBytes() int64 { return snapshotBytes(d.st) }
