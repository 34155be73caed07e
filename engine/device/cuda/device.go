//go:build cuda

package cuda

// #include "cgt.h"
import "C"

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/traces/ops"
)

// Launch geometry. Elementwise kernels loop over the grid, so the block
// count is capped without losing elements; sum runs as one block of
// sumThreads (CGT_SUM_THREADS in kernels.cu); matmul uses square tiles.
const (
	elementwiseThreads = 256
	maxBlocks          = 65535
	sumThreads         = 256
	matmulTile         = 16
	maxGridY           = 65535
)

// kernelEntry is one PTX entry, looked up once at New.
type kernelEntry struct {
	fn     C.CUfunction
	sig    C.int
	symbol string
}

// Device is a CUDA GPU driven through the driver API: the device's primary
// context (the one the CUDA runtime, hence PyTorch, uses), two created
// non-blocking streams, and the module of kernels.ptx.
//
// Threads. The driver binds a context to an OS thread, and thread-local
// stream capture binds a capture to the thread that began it. Device does
// not own a thread: every method makes the context current on the calling
// OS thread first, inside the same cgo call as the work on the hot path
// (Launch, CopyDtoD, LaunchGraph), so any goroutine may call it, one at a
// time as device.Device says, at the cost of one cuCtxGetCurrent per call.
// BeginCapture locks the calling goroutine to its OS thread
// (runtime.LockOSThread) until EndCapture, so the launches of a capture and
// its end run on the thread that began it. EndCapture from another
// goroutine fails with CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD and leaves
// the capture open for the goroutine that began it: cgt.c keeps a
// thread-local record of the captures each thread began and checks it
// before asking the driver, which would end the capture as well as fail.
// The alternative, a goroutine per device that runs every call sent over a
// channel, costs a cross-thread hand-off per call (BenchmarkLockedHandoff),
// which the replay hot path cannot afford next to a graph launch.
//
// Streams. DefaultStream is a created stream, not the legacy stream 0:
// capture on the legacy stream is illegal, and its implicit
// synchronization with other streams would hide a missing WaitStream that
// the simulated device's semantics require. Host copies synchronize the
// whole context first, so they see all queued work as on the simulated
// device.
type Device struct {
	ordinal int
	name    string
	dev     cu.Device
	ctx     cu.CUContext
	cctx    C.CUcontext
	streams [2]cu.Stream
	cstream [2]C.CUstream
	// events[s] is recorded on stream s for WaitStream; one per stream is
	// enough because a wait takes the event's state when it is enqueued.
	events    [2]cu.Event
	module    C.CUmodule
	kernels   [][3]kernelEntry // by kernel, then by BKind (index 0 for non-binary)
	byFunc    map[uintptr]kernelEntry
	capturing [2]bool
	closed    bool
	// execGraph maps an executable graph to the graph it was instantiated
	// from: UpdateCopy needs the graph's node handles.
	execGraph map[device.ExecHandle]device.GraphHandle
}

var _ device.Device = (*Device)(nil)

// errClosed is returned by every method of a closed Device.
var errClosed = errors.New("cuda: device is closed")

// New opens GPU ordinal with the embedded PTX.
func New(ordinal int) (*Device, error) {
	return NewWithPTX(ordinal, PTX)
}

// NewWithPTX opens GPU ordinal with the kernels of ptx, which must define
// every entry of Symbols (a kernels.cu built another way, say).
func NewWithPTX(ordinal int, ptx string) (*Device, error) {
	n, err := cu.NumDevices()
	if err != nil {
		return nil, wrapCU("cuDeviceGetCount", err)
	}
	if ordinal < 0 || ordinal >= n {
		return nil, fmt.Errorf("cuda: no device %d (%d devices)", ordinal, n)
	}
	dev, err := cu.GetDevice(ordinal)
	if err != nil {
		return nil, wrapCU(fmt.Sprintf("cuDeviceGet(%d)", ordinal), err)
	}
	name, err := dev.Name()
	if err != nil {
		return nil, wrapCU("cuDeviceGetName", err)
	}
	ctx, err := dev.RetainPrimaryCtx()
	if err != nil {
		return nil, wrapCU("cuDevicePrimaryCtxRetain", err)
	}
	d := &Device{ordinal: ordinal, name: fmt.Sprintf("cuda:%d %s", ordinal, name), dev: dev, ctx: ctx}
	if err := d.open(ptx); err != nil {
		return nil, errors.Join(fmt.Errorf("cuda: opening device %d: %w", ordinal, err), d.release())
	}
	return d, nil
}

// open makes the streams and events and loads the module; release undoes
// what it did.
func (d *Device) open(ptx string) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cu.SetCurrentContext(d.ctx); err != nil {
		return wrapCU("cuCtxSetCurrent", err)
	}
	var cctx C.CUcontext
	if err := check("cuCtxGetCurrent", C.cgt_current(&cctx)); err != nil {
		return err
	}
	d.cctx = cctx
	for i := range d.streams {
		s, err := cu.MakeStream(cu.NonBlocking)
		if err != nil {
			return wrapCU("cuStreamCreate", err)
		}
		d.streams[i] = s
		d.cstream[i] = C.CUstream(unsafe.Pointer(s.C()))
		ev, err := cu.MakeEvent(cu.DisableTiming)
		if err != nil {
			return wrapCU("cuEventCreate", err)
		}
		d.events[i] = ev
	}
	image := C.CString(ptx)
	defer C.free(unsafe.Pointer(image))
	const logSize = 8192
	log := (*C.char)(C.calloc(logSize, 1))
	defer C.free(unsafe.Pointer(log))
	var module C.CUmodule
	if err := check("cuModuleLoadData", C.cgt_module_load(d.cctx, image, &module, log, logSize)); err != nil {
		if msg := C.GoString(log); msg != "" {
			return fmt.Errorf("%w: %s", err, msg)
		}
		return err
	}
	d.module = module
	return d.lookupKernels()
}

// lookupKernels finds every entry the op set needs, so that a launch never
// looks a name up.
func (d *Device) lookupKernels() error {
	top := ops.Invalid
	for _, k := range ops.All() {
		top = max(top, k)
	}
	d.kernels = make([][3]kernelEntry, int(top)+1)
	d.byFunc = make(map[uintptr]kernelEntry)
	for _, k := range ops.All() {
		forms := []ops.BKind{ops.BTensor}
		if k.IsBinary() {
			forms = BKinds()
		}
		for _, b := range forms {
			symbol, err := Symbol(k, b)
			if err != nil {
				return err
			}
			cname := C.CString(symbol)
			var fn C.CUfunction
			r := C.cgt_module_function(d.module, cname, &fn)
			C.free(unsafe.Pointer(cname))
			if err := check("cuModuleGetFunction("+symbol+")", r); err != nil {
				return err
			}
			e := kernelEntry{fn: fn, sig: signature(k, b), symbol: symbol}
			d.kernels[k][b] = e
			d.byFunc[uintptr(unsafe.Pointer(fn))] = e
		}
	}
	return nil
}

// signature says how kernel k's parameters are laid out (kernels.cu).
func signature(k ops.Kernel, b ops.BKind) C.int {
	switch {
	case k.IsBinary() && b == ops.BScalar:
		return sigScalar
	case k.IsBinary():
		return sigBinary
	case k == ops.Matmul:
		return sigMatmul
	case k == ops.Fill:
		return sigFill
	}
	return sigUnary // unary kernels, sum and copy
}

// release frees what open made, in reverse order, and the context.
func (d *Device) release() error {
	var errs []error
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if d.cctx != nil {
		if err := d.bindThread(); err != nil {
			return errors.Join(err, wrapCU("cuDevicePrimaryCtxRelease", d.dev.ReleasePrimaryCtx()))
		}
		if d.module != nil {
			errs = append(errs, check("cuModuleUnload", C.cgt_module_unload(d.cctx, d.module)))
			d.module = nil
		}
		for i := range d.streams {
			if d.events[i] != (cu.Event{}) {
				errs = append(errs, wrapCU("cuEventDestroy", cu.DestroyEvent(&d.events[i])))
			}
			if d.streams[i] != (cu.Stream{}) {
				errs = append(errs, wrapCU("cuStreamDestroy", d.streams[i].Destroy()))
			}
		}
	}
	errs = append(errs, wrapCU("cuDevicePrimaryCtxRelease", d.dev.ReleasePrimaryCtx()))
	return errors.Join(errs...)
}

// wrapCU turns an error of gorgonia.org/cu into an *Error with the
// CUresult's name; cu's errors are CUresult values of an unexported type.
func wrapCU(op string, err error) error {
	if err == nil {
		return nil
	}
	if code, ok := cuResultCode(err); ok {
		return &Error{Op: op, Code: code, Name: errorName(code)}
	}
	return fmt.Errorf("cuda: %s: %w", op, err)
}

// cuResultCode recovers the CUresult number from an error of
// gorgonia.org/cu: its errors are values of an unexported integer type
// (cu.OutOfMemory, ...) whose value is the CUresult.
func cuResultCode(err error) (int, bool) {
	v := reflect.ValueOf(err)
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return int(v.Int()), true
	}
	return 0, false
}

// Name describes the device: "cuda:0 NVIDIA H200".
func (d *Device) Name() string { return d.name }

// Ordinal is the device's number among the CUDA devices.
func (d *Device) Ordinal() int { return d.ordinal }

// enter pins the calling goroutine to its thread and makes the context
// current there, for methods that call gorgonia.org/cu; leave undoes the
// pin (a capture's own pin stays: LockOSThread nests).
func (d *Device) enter() error {
	if d.closed {
		return errClosed
	}
	runtime.LockOSThread()
	if err := check("cuCtxSetCurrent", C.cgt_bind(d.cctx)); err != nil {
		runtime.UnlockOSThread()
		return err
	}
	return nil
}

func (d *Device) leave() { runtime.UnlockOSThread() }

func (d *Device) stream(s device.Stream) (C.CUstream, error) {
	if s != device.DefaultStream && s != device.SideStream {
		return nil, fmt.Errorf("cuda: no stream %d", s)
	}
	return d.cstream[s], nil
}

// MallocSegment reserves size bytes with cuMemAlloc, in relaxed capture
// mode so that it is legal while this thread captures (PyTorch does the
// same). Out of memory is an error wrapping device.ErrOutOfMemory.
func (d *Device) MallocSegment(size int64) (device.Ptr, error) {
	if d.closed {
		return 0, errClosed
	}
	if size <= 0 {
		return 0, fmt.Errorf("cuda: segment of %d bytes", size)
	}
	var p C.CUdeviceptr
	if err := check(fmt.Sprintf("cuMemAlloc(%d)", size), C.cgt_mem_alloc(d.cctx, C.size_t(size), &p)); err != nil {
		return 0, err
	}
	return device.Ptr(p), nil
}

// FreeSegment returns a segment to the driver (cuMemFree).
func (d *Device) FreeSegment(p device.Ptr) error {
	if err := d.enter(); err != nil {
		return err
	}
	defer d.leave()
	return wrapCU(fmt.Sprintf("cuMemFree(%#x)", uint64(p)), cu.MemFree(cu.DevicePtr(p)))
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

// Launch enqueues a kernel on s, or records it when s is capturing. Kernels
// with nothing to compute (n = 0, an empty matrix) launch nothing; sum of
// nothing still writes its 0.
func (d *Device) Launch(s device.Stream, l *device.Launch) error {
	if d.closed {
		return errClosed
	}
	if l == nil {
		return errors.New("cuda: launch of nothing")
	}
	st, err := d.stream(s)
	if err != nil {
		return err
	}
	if int(l.K) >= len(d.kernels) || l.K == ops.Invalid {
		return fmt.Errorf("cuda: launch: unknown kernel %s", l.K)
	}
	bi := 0
	if l.K.IsBinary() {
		if l.BKind > ops.BScalar {
			return fmt.Errorf("cuda: launch %s: unknown form of operand b (%d)", l.K, l.BKind)
		}
		bi = int(l.BKind)
	}
	e := &d.kernels[l.K][bi]
	gx, gy, bx, by := uint32(1), uint32(1), uint32(elementwiseThreads), uint32(1)
	switch {
	case l.K == ops.Matmul:
		if l.M < 0 || l.Kd < 0 || l.Cols < 0 {
			return fmt.Errorf("cuda: launch matmul: sizes [%d,%d]x[%d,%d]", l.M, l.Kd, l.Kd, l.Cols)
		}
		if l.M == 0 || l.Cols == 0 {
			return nil
		}
		rows := (l.M + matmulTile - 1) / matmulTile
		if rows > maxGridY {
			return fmt.Errorf("cuda: launch matmul: %d rows is more than %d", l.M, maxGridY*matmulTile)
		}
		gx, gy = uint32(min((l.Cols+matmulTile-1)/matmulTile, 1<<31-1)), uint32(rows)
		bx, by = matmulTile, matmulTile
	case l.K == ops.Sum:
		if l.N < 0 {
			return fmt.Errorf("cuda: launch sum: %d elements", l.N)
		}
		bx = sumThreads
	default:
		if l.N < 0 {
			return fmt.Errorf("cuda: launch %s: %d elements", l.K, l.N)
		}
		if l.N == 0 {
			return nil
		}
		gx = uint32(min((l.N+elementwiseThreads-1)/elementwiseThreads, maxBlocks))
	}
	if l.Out == 0 || (l.K != ops.Fill && l.A == 0) ||
		((l.K == ops.Matmul || (l.K.IsBinary() && l.BKind != ops.BScalar)) && l.B == 0) {
		return fmt.Errorf("cuda: launch %s: null operand (out %#x a %#x b %#x)", l.K, uint64(l.Out), uint64(l.A), uint64(l.B))
	}
	r := C.cgt_launch(d.cctx, e.fn, e.sig, C.uint(gx), C.uint(gy), C.uint(bx), C.uint(by), st,
		C.CUdeviceptr(l.Out), C.CUdeviceptr(l.A), C.CUdeviceptr(l.B), C.float(l.Scalar),
		C.longlong(l.N), C.longlong(l.M), C.longlong(l.Kd), C.longlong(l.Cols))
	if r != C.CUDA_SUCCESS {
		return check("cuLaunchKernel("+e.symbol+")", r)
	}
	return nil
}

// CopyHtoD copies src to dst after all queued work is done.
func (d *Device) CopyHtoD(dst device.Ptr, src []float32) error {
	if len(src) == 0 {
		return nil
	}
	return d.syncedCopy(fmt.Sprintf("cuMemcpyHtoD(%#x, %d floats)", uint64(dst), len(src)), func() error {
		return cu.MemcpyHtoD(cu.DevicePtr(dst), unsafe.Pointer(&src[0]), int64(len(src))*4)
	})
}

// CopyDtoH copies len(dst) values from src after all queued work is done.
func (d *Device) CopyDtoH(dst []float32, src device.Ptr) error {
	if len(dst) == 0 {
		return nil
	}
	return d.syncedCopy(fmt.Sprintf("cuMemcpyDtoH(%#x, %d floats)", uint64(src), len(dst)), func() error {
		return cu.MemcpyDtoH(unsafe.Pointer(&dst[0]), cu.DevicePtr(src), int64(len(dst))*4)
	})
}

// syncedCopy runs a synchronous copy on the device's thread once the
// context has drained, so the host sees every queued kernel's writes.
func (d *Device) syncedCopy(op string, do func() error) error {
	if err := d.enter(); err != nil {
		return err
	}
	defer d.leave()
	if err := wrapCU("cuCtxSynchronize", cu.Synchronize()); err != nil {
		return err
	}
	return wrapCU(op, do())
}

// CopyDtoD copies n float32 values on s (cuMemcpyDtoDAsync), or records the
// copy when s is capturing.
func (d *Device) CopyDtoD(s device.Stream, dst, src device.Ptr, n int64) error {
	if d.closed {
		return errClosed
	}
	st, err := d.stream(s)
	if err != nil {
		return err
	}
	if n < 0 {
		return fmt.Errorf("cuda: copy of %d elements", n)
	}
	if n == 0 {
		return nil
	}
	r := C.cgt_memcpy_dtod(d.cctx, C.CUdeviceptr(dst), C.CUdeviceptr(src), C.size_t(n*4), st)
	if r != C.CUDA_SUCCESS {
		return check(fmt.Sprintf("cuMemcpyDtoDAsync(%#x <- %#x, %d floats)", uint64(dst), uint64(src), n), r)
	}
	return nil
}

// WaitStream makes s wait for the work queued on other so far (an event
// recorded on other, waited on by s). During a capture this joins the
// streams' work in the graph.
func (d *Device) WaitStream(s, other device.Stream) error {
	if _, err := d.stream(s); err != nil {
		return err
	}
	if _, err := d.stream(other); err != nil {
		return err
	}
	if s == other {
		return nil
	}
	if err := d.enter(); err != nil {
		return err
	}
	defer d.leave()
	if err := wrapCU("cuEventRecord", d.events[other].Record(d.streams[other])); err != nil {
		return err
	}
	return wrapCU("cuStreamWaitEvent", d.streams[s].Wait(d.events[other], 0))
}

// BeginCapture starts capturing s in thread-local mode and pins the calling
// goroutine to its OS thread until EndCapture.
func (d *Device) BeginCapture(s device.Stream) error {
	if d.closed {
		return errClosed
	}
	st, err := d.stream(s)
	if err != nil {
		return err
	}
	if d.capturing[s] {
		return fmt.Errorf("cuda: stream %d is already capturing", s)
	}
	runtime.LockOSThread()
	if err := check("cuStreamBeginCapture", C.cgt_begin_capture(d.cctx, st)); err != nil {
		runtime.UnlockOSThread()
		return err
	}
	d.capturing[s] = true
	return nil
}

// EndCapture ends the capture of s and returns its graph. It must run on
// the goroutine that called BeginCapture.
func (d *Device) EndCapture(s device.Stream) (device.GraphHandle, error) {
	if d.closed {
		return 0, errClosed
	}
	st, err := d.stream(s)
	if err != nil {
		return 0, err
	}
	if !d.capturing[s] {
		return 0, fmt.Errorf("cuda: stream %d is not capturing", s)
	}
	var g C.uint64_t
	r := C.cgt_end_capture(d.cctx, st, &g)
	if r == C.CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD {
		// cgt_end_capture refused before asking the driver: the capture
		// stays open for the goroutine that began it.
		return 0, check("cuStreamEndCapture: not the goroutine that began the capture", r)
	}
	d.capturing[s] = false
	runtime.UnlockOSThread()
	if err := check("cuStreamEndCapture", r); err != nil {
		if g != 0 {
			C.cgt_graph_destroy(d.cctx, g)
		}
		return 0, err
	}
	return device.GraphHandle(g), nil
}

// Instantiate makes an executable graph (cuGraphInstantiateWithFlags).
func (d *Device) Instantiate(g device.GraphHandle) (device.ExecHandle, error) {
	if d.closed {
		return 0, errClosed
	}
	if g == 0 {
		return 0, errors.New("cuda: instantiate: null graph")
	}
	var e C.uint64_t
	if err := check("cuGraphInstantiateWithFlags", C.cgt_instantiate(d.cctx, C.uint64_t(g), &e)); err != nil {
		return 0, err
	}
	if d.execGraph == nil {
		d.execGraph = map[device.ExecHandle]device.GraphHandle{}
	}
	d.execGraph[device.ExecHandle(e)] = g
	return device.ExecHandle(e), nil
}

// LaunchGraph replays e on s (cuGraphLaunch): one cgo call, no allocation.
func (d *Device) LaunchGraph(e device.ExecHandle, s device.Stream) error {
	if d.closed {
		return errClosed
	}
	if e == 0 {
		return errors.New("cuda: launch of a null graph")
	}
	if s != device.DefaultStream && s != device.SideStream {
		return fmt.Errorf("cuda: no stream %d", s)
	}
	r := C.cgt_graph_launch(d.cctx, C.uint64_t(e), d.cstream[s])
	if r != C.CUDA_SUCCESS {
		return check("cuGraphLaunch", r)
	}
	return nil
}

// GraphNodes lists g's nodes as cuGraphGetNodes returns them (creation
// order, hence capture order). Kernel nodes are named by their PTX symbol
// ("cgtviz_add_tensor"), copies by direction ("DtoD").
func (d *Device) GraphNodes(g device.GraphHandle) ([]device.GraphNode, error) {
	if d.closed {
		return nil, errClosed
	}
	if g == 0 {
		return nil, errors.New("cuda: nodes of a null graph")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return graphNodes(d.cctx, g, d.byFunc)
}

// GraphDOT returns cuGraphDebugDotPrint's Graphviz text for g, by way of a
// temporary file the driver writes.
func (d *Device) GraphDOT(g device.GraphHandle) (string, error) {
	if d.closed {
		return "", errClosed
	}
	if g == 0 {
		return "", errors.New("cuda: DOT of a null graph")
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
	if err := check("cuGraphDebugDotPrint", C.cgt_graph_dot(d.cctx, C.uint64_t(g), cpath)); err != nil {
		return "", err
	}
	text, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("cuda: graph DOT: %w", err)
	}
	return string(text), nil
}

// DestroyGraph frees a captured graph.
func (d *Device) DestroyGraph(g device.GraphHandle) error {
	if d.closed {
		return errClosed
	}
	if g == 0 {
		return errors.New("cuda: destroy of a null graph")
	}
	return check("cuGraphDestroy", C.cgt_graph_destroy(d.cctx, C.uint64_t(g)))
}

// DestroyExec frees an executable graph.
func (d *Device) DestroyExec(e device.ExecHandle) error {
	if d.closed {
		return errClosed
	}
	if e == 0 {
		return errors.New("cuda: destroy of a null executable graph")
	}
	delete(d.execGraph, e)
	return check("cuGraphExecDestroy", C.cgt_exec_destroy(d.cctx, C.uint64_t(e)))
}

// UpdateCopy points the memcpy node of e that writes dst at src
// (cuGraphExecMemcpyNodeSetParams on the node found in e's graph).
func (d *Device) UpdateCopy(e device.ExecHandle, dst, src device.Ptr, n int64) error {
	if d.closed {
		return errClosed
	}
	g, ok := d.execGraph[e]
	if !ok {
		return fmt.Errorf("cuda: update_copy: exec %#x was not instantiated by this device", uint64(e))
	}
	if n < 0 {
		return fmt.Errorf("cuda: update_copy: %d elements", n)
	}
	r := C.cgt_exec_update_copy(d.cctx, C.uint64_t(g), C.uint64_t(e), C.CUdeviceptr(dst), C.CUdeviceptr(src), C.size_t(n*4))
	return check("cuGraphExecMemcpyNodeSetParams", r)
}

// Synchronize waits for all work queued on the device (cuCtxSynchronize).
func (d *Device) Synchronize() error {
	if err := d.enter(); err != nil {
		return err
	}
	defer d.leave()
	return wrapCU("cuCtxSynchronize", cu.Synchronize())
}

// Close waits for queued work, then frees the module, streams and events
// and releases the primary context (which frees its memory, graphs and
// executable graphs once no other user holds it). Closing twice is a no-op.
func (d *Device) Close() error {
	if d.closed {
		return nil
	}
	syncErr := d.Synchronize()
	d.closed = true
	return errors.Join(syncErr, d.release())
}

// Info reports the driver's CUDA version (1000*major + 10*minor, as
// cuDriverGetVersion gives it) and the name of each device, for cgtviz
// version.
func Info() (driverVersion int, devices []string, err error) {
	driverVersion = cu.Version()
	if driverVersion < 0 {
		return 0, nil, errors.New("cuda: cuDriverGetVersion failed")
	}
	n, err := cu.NumDevices()
	if err != nil {
		return driverVersion, nil, wrapCU("cuDeviceGetCount", err)
	}
	for i := 0; i < n; i++ {
		name, err := cu.Device(i).Name()
		if err != nil {
			return driverVersion, devices, wrapCU(fmt.Sprintf("cuDeviceGetName(%d)", i), err)
		}
		devices = append(devices, name)
	}
	return driverVersion, devices, nil
}
