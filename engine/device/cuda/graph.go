//go:build cuda

package cuda

// This file holds stream capture and graphs: capture, instantiation,
// replay, the update of a replay's input copies, introspection and
// destruction.

// #include "cgt.h"
import "C"

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/engine/device/opaque"
)

// BeginCapture starts capturing s in thread-local mode and pins the calling
// goroutine to its OS thread until EndCapture.
func (d *Device) BeginCapture(s device.Stream) error {
	if err := d.use(); err != nil {
		return err
	}
	g := d.g
	st, err := g.stream(s)
	if err != nil {
		return err
	}
	if g.capturing[s] {
		return fmt.Errorf("cuda: stream %d is already capturing", s)
	}
	runtime.LockOSThread()
	if err := check("cuStreamBeginCapture", C.cgt_begin_capture(g.cctx, st)); err != nil {
		runtime.UnlockOSThread()
		return err
	}
	g.capturing[s] = true
	g.captured[s] = nil // the last capture's slice went to its program
	return nil
}

// EndCapture ends the capture of s and returns its graph. It must run on
// the goroutine that called BeginCapture (device.Device).
func (d *Device) EndCapture(s device.Stream) (device.GraphHandle, error) {
	if err := d.use(); err != nil {
		return 0, err
	}
	g := d.g
	st, err := g.stream(s)
	if err != nil {
		return 0, err
	}
	if !g.capturing[s] {
		return 0, fmt.Errorf("cuda: stream %d is not capturing", s)
	}
	var cg C.uint64_t
	r := C.cgt_end_capture(g.cctx, st, &cg)
	if r == C.CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD {
		// cgt_end_capture refused before asking the driver: the capture
		// stays open for the goroutine that began it.
		return 0, check("cuStreamEndCapture: not the goroutine that began the capture", r)
	}
	g.capturing[s] = false
	runtime.UnlockOSThread()
	ops := g.captured[s]
	g.captured[s] = nil
	if err := check("cuStreamEndCapture", r); err != nil {
		if cg != 0 {
			C.cgt_graph_destroy(g.cctx, cg)
		}
		return 0, err
	}
	h := device.GraphHandle(cg)
	if g.programs == nil {
		g.programs = map[device.GraphHandle]*opaque.Program{}
	}
	g.programs[h] = opaque.NewProgram(ops)
	d.st.graphs[h] = true
	g.refs[resource{resGraph, uint64(h)}] = 1
	return h, nil
}

// Instantiate makes an executable graph (cuGraphInstantiateWithFlags) of
// a graph of this device. The executable graph holds its graph until it is
// destroyed: UpdateCopy finds the copy nodes there.
func (d *Device) Instantiate(gh device.GraphHandle) (device.ExecHandle, error) {
	if err := d.use(); err != nil {
		return 0, err
	}
	if !d.st.graphs[gh] {
		return 0, fmt.Errorf("cuda: instantiate: %#x is not a graph of this device", uint64(gh))
	}
	g := d.g
	srcs, err := g.graphCopies(gh)
	if err != nil {
		return 0, err
	}
	var e C.uint64_t
	if err := check("cuGraphInstantiateWithFlags", C.cgt_instantiate(g.cctx, C.uint64_t(gh), &e)); err != nil {
		return 0, err
	}
	h := device.ExecHandle(e)
	g.addExec(h, gh, srcs)
	own := make(map[device.Ptr]copySrc, len(srcs))
	for k, v := range srcs {
		own[k] = v
	}
	d.st.execs[h] = &execInfo{src: own, opq: g.programs[gh].Exec()}
	return h, nil
}

// graphCopies reads the source of each memcpy node of g, by destination:
// what an executable graph of g copies from until UpdateCopy changes it.
func (g *gpu) graphCopies(gh device.GraphHandle) (map[device.Ptr]copySrc, error) {
	var n C.size_t
	if err := check("cuGraphGetNodes", C.cgt_graph_copies(g.cctx, C.uint64_t(gh), nil, nil, nil, &n)); err != nil {
		return nil, err
	}
	out := make(map[device.Ptr]copySrc, int(n))
	if n == 0 {
		return out, nil
	}
	dst := make([]C.CUdeviceptr, n)
	src := make([]C.CUdeviceptr, n)
	bytes := make([]C.size_t, n)
	if err := check("cuGraphMemcpyNodeGetParams", C.cgt_graph_copies(g.cctx, C.uint64_t(gh), &dst[0], &src[0], &bytes[0], &n)); err != nil {
		return nil, err
	}
	for i := 0; i < int(n); i++ {
		out[device.Ptr(dst[i])] = copySrc{src: device.Ptr(src[i]), bytes: int64(bytes[i])}
	}
	return out, nil
}

// LaunchGraph replays e on s (cuGraphLaunch): one cgo call, no allocation.
func (d *Device) LaunchGraph(e device.ExecHandle, s device.Stream) error {
	if err := d.use(); err != nil {
		return err
	}
	if s != device.DefaultStream && s != device.SideStream {
		return fmt.Errorf("cuda: no stream %d", s)
	}
	info, ok := d.st.execs[e]
	if !ok {
		return fmt.Errorf("cuda: launch of %#x, not an executable graph of this device", uint64(e))
	}
	r := C.cgt_graph_launch(d.g.cctx, C.uint64_t(e), d.g.cstream[s])
	if r != C.CUDA_SUCCESS {
		return check("cuGraphLaunch", r)
	}
	d.st.unknown.Run(info.opq) // a check while nothing is opaque (opaque.go)
	return nil
}

// UpdateCopy points the memcpy node of e that writes dst at src
// (cuGraphExecMemcpyNodeSetParams on the node found in e's graph).
func (d *Device) UpdateCopy(e device.ExecHandle, dst, src device.Ptr, n int64) error {
	if err := d.use(); err != nil {
		return err
	}
	info, ok := d.st.execs[e]
	if !ok {
		return fmt.Errorf("cuda: update_copy: %#x is not an executable graph of this device", uint64(e))
	}
	if n < 0 {
		return fmt.Errorf("cuda: update_copy: %d elements", n)
	}
	c := copySrc{src: src, bytes: n * 4}
	if err := d.g.setCopy(e, dst, c); err != nil {
		return err
	}
	// Snapshots may share info: it is replaced, never changed.
	ni := &execInfo{src: make(map[device.Ptr]copySrc, len(info.src))}
	for k, v := range info.src {
		ni.src[k] = v
	}
	ni.src[dst] = c
	ni.opq = info.opq.WithCopy(dst, src, n)
	d.st.execs[e] = ni
	return nil
}

// GraphNodes lists g's nodes as cuGraphGetNodes returns them (creation
// order, hence capture order). Kernel nodes are named by their PTX symbol
// ("cgtviz_add_tensor"), copies by direction ("DtoD").
func (d *Device) GraphNodes(gh device.GraphHandle) ([]device.GraphNode, error) {
	if d.bad != nil {
		return nil, d.bad
	}
	if !d.st.graphs[gh] {
		return nil, fmt.Errorf("cuda: nodes of %#x, not a graph of this device", uint64(gh))
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return graphNodes(d.g.cctx, gh, d.g.byFunc)
}

// GraphDOT returns cuGraphDebugDotPrint's Graphviz text for g, by way of a
// temporary file the driver writes.
func (d *Device) GraphDOT(gh device.GraphHandle) (string, error) {
	if d.bad != nil {
		return "", d.bad
	}
	if !d.st.graphs[gh] {
		return "", fmt.Errorf("cuda: DOT of %#x, not a graph of this device", uint64(gh))
	}
	f, err := os.CreateTemp("", "cgtviz-graph-*.dot")
	if err != nil {
		return "", fmt.Errorf("cuda: graph DOT: %w", err)
	}
	path := f.Name()
	f.Close()
	defer os.Remove(path)
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	if err := check("cuGraphDebugDotPrint", C.cgt_graph_dot(d.g.cctx, C.uint64_t(gh), cpath)); err != nil {
		return "", err
	}
	text, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("cuda: graph DOT: %w", err)
	}
	return string(text), nil
}

// DestroyGraph gives back a captured graph; the driver destroys it once
// no clone, snapshot or executable graph holds it.
func (d *Device) DestroyGraph(gh device.GraphHandle) error {
	if d.bad != nil {
		return d.bad
	}
	if gh == 0 {
		return errors.New("cuda: destroy of a null graph")
	}
	if !d.st.graphs[gh] {
		return fmt.Errorf("cuda: destroy of %#x, not a graph of this device", uint64(gh))
	}
	delete(d.st.graphs, gh)
	return d.g.drop(resource{resGraph, uint64(gh)})
}

// DestroyExec gives back an executable graph; the driver destroys it once
// no clone or snapshot holds it.
func (d *Device) DestroyExec(e device.ExecHandle) error {
	if d.bad != nil {
		return d.bad
	}
	if e == 0 {
		return errors.New("cuda: destroy of a null executable graph")
	}
	if _, ok := d.st.execs[e]; !ok {
		return fmt.Errorf("cuda: destroy of %#x, not an executable graph of this device", uint64(e))
	}
	delete(d.st.execs, e)
	return d.g.drop(resource{resExec, uint64(e)})
}
