//go:build cuda

package cuda

// This file holds the package's cgo flags and the Go side of cgt.c that
// is not the Device itself: errors with CUresult names, and graph
// introspection.

/*
#cgo CFLAGS: -I/usr/local/cuda/include
#cgo LDFLAGS: -L/usr/local/cuda/lib64 -lcuda
#include "cgt.h"
*/
import "C"

import (
	"fmt"
	"strings"
	"sync"
	"unsafe"

	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/traces/ops"
)

// Kernel signatures, as cgt_launch spells them.
const (
	sigBinary = C.CGT_SIG_BINARY
	sigScalar = C.CGT_SIG_SCALAR
	sigUnary  = C.CGT_SIG_UNARY
	sigFill   = C.CGT_SIG_FILL
	sigMatmul = C.CGT_SIG_MATMUL

	sigStrided       = C.CGT_SIG_STRIDED
	sigStridedSum    = C.CGT_SIG_STRIDED_SUM
	sigStridedMatmul = C.CGT_SIG_STRIDED_MATMUL
)

// sigArgs is the number of parameters of each signature.
var sigArgs = map[C.int]int{sigBinary: 4, sigScalar: 4, sigUnary: 3, sigFill: 3, sigMatmul: 6,
	sigStrided: 8, sigStridedSum: 4, sigStridedMatmul: 7}

var resolveOnce sync.Once

// resolve looks up the entry points newer than the build header.
func resolve() { resolveOnce.Do(func() { C.cgt_resolve() }) }

// Error is a failed CUDA driver call: what the device was doing and the
// CUresult by number and by name (cuGetErrorName).
type Error struct {
	Op   string
	Code int
	Name string
}

func (e *Error) Error() string {
	return fmt.Sprintf("cuda: %s: %s (%d)", e.Op, e.Name, e.Code)
}

// Is makes errors.Is(err, device.ErrOutOfMemory) hold for
// CUDA_ERROR_OUT_OF_MEMORY, the contract of Device.MallocSegment.
func (e *Error) Is(target error) bool {
	return target == device.ErrOutOfMemory && e.Code == int(C.CUDA_ERROR_OUT_OF_MEMORY)
}

// errorName returns the CUresult's name, or a number where the driver does
// not know it.
func errorName(code int) string {
	if s := C.cgt_error_name(C.CUresult(code)); s != nil {
		return C.GoString(s)
	}
	return fmt.Sprintf("CUresult(%d)", code)
}

// check turns a CUresult into nil or an *Error.
func check(op string, r C.CUresult) error {
	if r == C.CUDA_SUCCESS {
		return nil
	}
	return &Error{Op: op, Code: int(r), Name: errorName(int(r))}
}

// graphNodeKinds names the driver's node types as GraphNode.Kind shows them.
var graphNodeKinds = map[C.int]string{
	C.CU_GRAPH_NODE_TYPE_KERNEL:           "kernel",
	C.CU_GRAPH_NODE_TYPE_MEMCPY:           "memcpy",
	C.CU_GRAPH_NODE_TYPE_MEMSET:           "memset",
	C.CU_GRAPH_NODE_TYPE_HOST:             "host",
	C.CU_GRAPH_NODE_TYPE_GRAPH:            "graph",
	C.CU_GRAPH_NODE_TYPE_EMPTY:            "empty",
	C.CU_GRAPH_NODE_TYPE_WAIT_EVENT:       "wait_event",
	C.CU_GRAPH_NODE_TYPE_EVENT_RECORD:     "event_record",
	C.CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL: "ext_semas_signal",
	C.CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT:   "ext_semas_wait",
	C.CU_GRAPH_NODE_TYPE_MEM_ALLOC:        "mem_alloc",
	C.CU_GRAPH_NODE_TYPE_MEM_FREE:         "mem_free",
}

// memoryTypeNames gives the letter a memcpy direction uses ("DtoD").
var memoryTypeNames = map[C.CUmemorytype]string{
	C.CU_MEMORYTYPE_HOST:    "H",
	C.CU_MEMORYTYPE_DEVICE:  "D",
	C.CU_MEMORYTYPE_ARRAY:   "A",
	C.CU_MEMORYTYPE_UNIFIED: "U",
}

// graphNodes lists g's nodes with their kinds, names, dependencies and
// operands. names maps the device's kernel functions to their symbols.
func graphNodes(ctx C.CUcontext, g device.GraphHandle, names map[uintptr]kernelEntry) ([]device.GraphNode, error) {
	resolve()
	var n C.size_t
	if err := check("cuGraphGetNodes", C.cgt_graph_nodes(ctx, C.uint64_t(g), nil, &n)); err != nil {
		return nil, err
	}
	if n == 0 {
		return []device.GraphNode{}, nil
	}
	nodes := make([]C.CUgraphNode, n)
	if err := check("cuGraphGetNodes", C.cgt_graph_nodes(ctx, C.uint64_t(g), &nodes[0], &n)); err != nil {
		return nil, err
	}
	nodes = nodes[:n]
	index := make(map[C.CUgraphNode]int, len(nodes))
	for i, node := range nodes {
		index[node] = i
	}
	out := make([]device.GraphNode, len(nodes))
	for i, node := range nodes {
		var t C.int
		if err := check("cuGraphNodeGetType", C.cgt_node_type(node, &t)); err != nil {
			return nil, err
		}
		kind, ok := graphNodeKinds[t]
		if !ok {
			kind = fmt.Sprintf("type(%d)", int(t))
		}
		gn := device.GraphNode{Kind: kind, Deps: []int{}}
		var err error
		switch t {
		case C.CU_GRAPH_NODE_TYPE_KERNEL:
			gn.Name, gn.Detail, err = kernelNode(node, names)
		case C.CU_GRAPH_NODE_TYPE_MEMCPY:
			gn.Name, gn.Detail, err = memcpyNode(node)
		case C.CU_GRAPH_NODE_TYPE_MEMSET:
			gn.Name, gn.Detail, err = memsetNode(node)
		}
		if err != nil {
			return nil, fmt.Errorf("graph node %d: %w", i, err)
		}
		var nd C.size_t
		if err := check("cuGraphNodeGetDependencies", C.cgt_node_deps(node, nil, &nd)); err != nil {
			return nil, err
		}
		if nd > 0 {
			deps := make([]C.CUgraphNode, nd)
			if err := check("cuGraphNodeGetDependencies", C.cgt_node_deps(node, &deps[0], &nd)); err != nil {
				return nil, err
			}
			for _, dep := range deps[:nd] {
				j, ok := index[dep]
				if !ok {
					return nil, fmt.Errorf("graph node %d depends on a node outside the graph", i)
				}
				gn.Deps = append(gn.Deps, j)
			}
		}
		out[i] = gn
	}
	return out, nil
}

// kernelNode names a kernel node by its function and describes its
// operands, decoded by the kernel's signature.
func kernelNode(node C.CUgraphNode, names map[uintptr]kernelEntry) (name, detail string, err error) {
	var p C.cgt_kernel_params
	if err := check("cuGraphKernelNodeGetParams", C.cgt_kernel_node(node, &p)); err != nil {
		return "", "", err
	}
	grid := fmt.Sprintf("grid=%dx%d block=%dx%d", p.gridDimX, p.gridDimY, p.blockDimX, p.blockDimY)
	e, ok := names[uintptr(unsafe.Pointer(p._func))]
	if !ok {
		// Not one of this device's kernels: name it as the driver can.
		name = "unknown"
		if p._func != nil {
			if s := C.cgt_func_name(p._func); s != nil {
				name = C.GoString(s)
			}
		}
		return name, grid, nil
	}
	if p.kernelParams == nil {
		return e.symbol, grid, nil
	}
	args := unsafe.Slice(p.kernelParams, sigArgs[e.sig])
	ptr := func(i int) string { return fmt.Sprintf("%#x", uint64(*(*C.CUdeviceptr)(args[i]))) }
	i64 := func(i int) int64 { return int64(*(*C.longlong)(args[i])) }
	f32 := func(i int) float32 { return float32(*(*C.float)(args[i])) }
	switch e.sig {
	case sigBinary:
		detail = fmt.Sprintf("out=%s a=%s b=%s n=%d", ptr(0), ptr(1), ptr(2), i64(3))
	case sigScalar:
		detail = fmt.Sprintf("out=%s a=%s s=%g n=%d", ptr(0), ptr(1), f32(2), i64(3))
	case sigUnary:
		detail = fmt.Sprintf("out=%s a=%s n=%d", ptr(0), ptr(1), i64(2))
	case sigFill:
		detail = fmt.Sprintf("out=%s s=%g n=%d", ptr(0), f32(1), i64(2))
	case sigMatmul:
		detail = fmt.Sprintf("out=%s a=%s b=%s m=%d k=%d n=%d", ptr(0), ptr(1), ptr(2), i64(3), i64(4), i64(5))
	case sigStrided:
		i32 := func(i int) int32 { return int32(*(*C.int)(args[i])) }
		op := "op=" + fmt.Sprint(i32(5))
		if k, ok := StridedKernel(i32(5)); ok {
			op = "op=" + k.String()
		}
		detail = fmt.Sprintf("%s out=%s a=%s b=%s bform=%d s=%g n=%d %s", op, ptr(0), ptr(1), ptr(2), i32(6), f32(3), i64(4), geomDetail(args[7]))
	case sigStridedSum:
		detail = fmt.Sprintf("out=%s a=%s n=%d %s", ptr(0), ptr(1), i64(2), geomDetail(args[3]))
	case sigStridedMatmul:
		detail = fmt.Sprintf("out=%s a=%s b=%s m=%d k=%d n=%d %s", ptr(0), ptr(1), ptr(2), i64(3), i64(4), i64(5), geomDetail(args[6]))
	}
	return e.symbol, detail + " " + grid, nil
}

// geomDetail describes a strided launch's geometry parameter as the sim
// does: "shape=[...] strides=[out]/[a]/[b]" over the dims it uses.
func geomDetail(p unsafe.Pointer) string {
	g := (*ops.Geometry)(p)
	r := g.Dims()
	list := func(x *[ops.MaxRank]int64) string {
		return strings.ReplaceAll(fmt.Sprint(x[ops.MaxRank-r:]), " ", ",")
	}
	return "shape=" + list(&g.Shape) + " strides=" + list(&g.Out) + "/" + list(&g.A) + "/" + list(&g.B)
}

// memcpyNode names a copy by its direction ("DtoD").
func memcpyNode(node C.CUgraphNode) (name, detail string, err error) {
	var p C.CUDA_MEMCPY3D
	if err := check("cuGraphMemcpyNodeGetParams", C.cgt_memcpy_node(node, &p)); err != nil {
		return "", "", err
	}
	name = memoryTypeNames[p.srcMemoryType] + "to" + memoryTypeNames[p.dstMemoryType]
	bytes := uint64(p.WidthInBytes) * uint64(max(p.Height, 1)) * uint64(max(p.Depth, 1))
	detail = fmt.Sprintf("dst=%#x src=%#x bytes=%d", uint64(p.dstDevice), uint64(p.srcDevice), bytes)
	return name, detail, nil
}

func memsetNode(node C.CUgraphNode) (name, detail string, err error) {
	var p C.CUDA_MEMSET_NODE_PARAMS
	if err := check("cuGraphMemsetNodeGetParams", C.cgt_memset_node(node, &p)); err != nil {
		return "", "", err
	}
	detail = fmt.Sprintf("dst=%#x value=%#x elem=%d width=%d height=%d",
		uint64(p.dst), uint32(p.value), uint32(p.elementSize), uint64(p.width), uint64(p.height))
	return "memset", detail, nil
}

// bindThread makes the device's context current on the calling OS thread.
// With the goroutine locked to its thread, the raw calls below may follow.
func (g *gpu) bindThread() error {
	return check("cuCtxSetCurrent", C.cgt_bind(g.cctx))
}

// bindThread is gpu.bindThread for the benchmarks.
func (d *Device) bindThread() error { return d.g.bindThread() }

// rawGraphLaunch is cuGraphLaunch alone, with no check: the floor that the
// benchmarks measure LaunchGraph (and the engine's replay) against. The
// caller has bound the context to its locked thread (bindThread).
func (d *Device) rawGraphLaunch(e device.ExecHandle, s device.Stream) error {
	return check("cuGraphLaunch", C.cgt_raw_graph_launch(C.uint64_t(e), d.g.cstream[s]))
}

// rawStreamSync is cuStreamSynchronize alone, for the same benchmarks.
func (d *Device) rawStreamSync(s device.Stream) error {
	return check("cuStreamSynchronize", C.cgt_raw_stream_sync(d.g.cstream[s]))
}

// benchStream is a stream for the launch-path benchmarks
// (BenchmarkGPULaunchPaths): one of the device's, a created blocking one,
// or one of the default streams.
type benchStream struct {
	s       C.CUstream
	created bool
}

// Kinds of benchStream.
const (
	benchDeviceStream = "nonblocking" // the device's SideStream
	benchBlocking     = "blocking"    // cuStreamCreate(CU_STREAM_DEFAULT)
	benchLegacy       = "legacy"      // CU_STREAM_LEGACY, the runtime's stream 0
	benchPerThread    = "per-thread"  // CU_STREAM_PER_THREAD
)

// newBenchStream returns a stream of kind; free gives a created one back.
func (d *Device) newBenchStream(kind string) (benchStream, error) {
	switch kind {
	case benchDeviceStream:
		return benchStream{s: d.g.cstream[device.SideStream]}, nil
	case benchLegacy:
		return benchStream{s: C.cgt_legacy_stream()}, nil
	case benchPerThread:
		return benchStream{s: C.cgt_per_thread_stream()}, nil
	case benchBlocking:
		var s C.CUstream
		if err := check("cuStreamCreate", C.cgt_stream_create(d.g.cctx, C.CU_STREAM_DEFAULT, &s)); err != nil {
			return benchStream{}, err
		}
		return benchStream{s: s, created: true}, nil
	}
	return benchStream{}, fmt.Errorf("cuda: no bench stream %q", kind)
}

func (d *Device) freeBenchStream(s benchStream) error {
	if !s.created {
		return nil
	}
	return check("cuStreamDestroy", C.cgt_stream_destroy(d.g.cctx, s.s))
}

// rawLaunchOn is cuGraphLaunch alone on s; rawSyncOn cuStreamSynchronize.
// The caller has bound the context to its locked thread (bindThread).
func (d *Device) rawLaunchOn(e device.ExecHandle, s benchStream) error {
	return check("cuGraphLaunch", C.cgt_raw_graph_launch(C.uint64_t(e), s.s))
}

func (d *Device) rawSyncOn(s benchStream) error {
	return check("cuStreamSynchronize", C.cgt_raw_stream_sync(s.s))
}

// uploadGraph runs cuGraphUpload of e on s: the executable graph's work is
// put on the device ahead of its first launch.
func (d *Device) uploadGraph(e device.ExecHandle, s benchStream) error {
	return check("cuGraphUpload", C.cgt_graph_upload(d.g.cctx, C.uint64_t(e), s.s))
}
