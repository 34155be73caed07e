//go:build cuda

package cuda

// #include "cgt.h"
import "C"

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/engine/device/opaque"
)

// gpu is what every clone of one opened device shares: the device's
// primary context (the one the CUDA runtime, hence PyTorch, uses), two
// created non-blocking streams, an event per stream, the pinned staging
// buffer of uploads, the module of kernels.ptx, and the registry of the
// segments, graphs and executable graphs that the clones and their
// snapshots hold (snapshot.go).
type gpu struct {
	ordinal int
	name    string
	dev     cu.Device
	ctx     cu.CUContext
	cctx    C.CUcontext
	cstream [2]C.CUstream
	// events[s] is recorded on stream s for a wait on it; one per stream
	// is enough because a wait takes the event's state when it is queued.
	events  [2]C.CUevent
	staging *C.cgt_staging // C memory: the driver's pointers live in it
	module  C.CUmodule
	kernels [][3]kernelEntry // by kernel, then by BKind (index 0 for non-binary)
	byFunc  map[uintptr]kernelEntry
	// strided are the entries of launches over strided operands
	// (StridedSymbols): elementwise, sum, matmul.
	strided [3]kernelEntry
	// inits are the init kernels (InitSymbols), by CGT_INIT_* kind.
	inits [3]kernelEntry
	// capturing is per stream, and streams are shared by the clones.
	capturing [2]bool
	// captured is the effect of each capture's launches and copies so
	// far, by stream, and programs each graph's (opaque.go).
	captured [2][]opaque.Op
	programs map[device.GraphHandle]*opaque.Program

	// registry is the bookkeeping of the clones and snapshots
	// (registry.go); gpu is its driver (snapshot.go).
	registry
}

// Device is a CUDA GPU driven through the driver API, or a clone of one
// (CloneDevice): a clone shares the GPU, its streams and its memory with
// the device it came from, and has its own segments, graphs and contents;
// the clones take turns on the GPU's memory (snapshot.go).
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
// the simulated device's semantics require. Host copies are queued on the
// streams between event fences (memory.go), so they see all queued work
// and all later work sees them, as on the simulated device.
type Device struct {
	g  *gpu
	st *state
	// bad is errClosed after Close, or the reason a Restore failed: every
	// call but Close returns it (one check on the hot path for both).
	bad     error
	closed  bool
	cleanup runtime.Cleanup
}

var (
	_ device.Device        = (*Device)(nil)
	_ device.Snapshotter   = (*Device)(nil)
	_ device.Cloner        = (*Device)(nil)
	_ device.SnapshotSizer = (*Device)(nil)
)

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
	g := &gpu{ordinal: ordinal, name: fmt.Sprintf("cuda:%d %s", ordinal, name), dev: dev, ctx: ctx}
	g.registry.init(g)
	if err := g.open(ptx); err != nil {
		return nil, errors.Join(fmt.Errorf("cuda: opening device %d: %w", ordinal, err), g.release())
	}
	return g.newView(newState()), nil
}

// open makes the streams, events and staging buffer and loads the module;
// release undoes what it did.
func (g *gpu) open(ptx string) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cu.SetCurrentContext(g.ctx); err != nil {
		return wrapCU("cuCtxSetCurrent", err)
	}
	var cctx C.CUcontext
	if err := check("cuCtxGetCurrent", C.cgt_current(&cctx)); err != nil {
		return err
	}
	g.cctx = cctx
	for i := range g.cstream {
		if err := check("cuStreamCreate", C.cgt_stream_create(g.cctx, C.CU_STREAM_NON_BLOCKING, &g.cstream[i])); err != nil {
			return err
		}
		if err := check("cuEventCreate", C.cgt_event_create(g.cctx, &g.events[i])); err != nil {
			return err
		}
	}
	g.staging = (*C.cgt_staging)(C.calloc(1, C.sizeof_cgt_staging))
	if g.staging == nil {
		return errors.New("cuda: no host memory for the staging buffer")
	}
	image := C.CString(ptx)
	defer C.free(unsafe.Pointer(image))
	const logSize = 8192
	log := (*C.char)(C.calloc(logSize, 1))
	defer C.free(unsafe.Pointer(log))
	var module C.CUmodule
	if err := check("cuModuleLoadData", C.cgt_module_load(g.cctx, image, &module, log, logSize)); err != nil {
		if msg := C.GoString(log); msg != "" {
			return fmt.Errorf("%w: %s", err, msg)
		}
		return err
	}
	g.module = module
	return g.lookupKernels()
}

// release frees what open made, in reverse order, and the context (which
// frees the memory, graphs and executable graphs still in it once no other
// user holds the primary context).
func (g *gpu) release() error {
	var errs []error
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if g.cctx != nil {
		if err := check("cuCtxSetCurrent", C.cgt_bind(g.cctx)); err != nil {
			return errors.Join(err, wrapCU("cuDevicePrimaryCtxRelease", g.dev.ReleasePrimaryCtx()))
		}
		if g.module != nil {
			errs = append(errs, check("cuModuleUnload", C.cgt_module_unload(g.cctx, g.module)))
			g.module = nil
		}
		if g.staging != nil {
			errs = append(errs, check("cuMemFreeHost(staging)", C.cgt_staging_free(g.cctx, g.staging)))
			C.free(unsafe.Pointer(g.staging))
			g.staging = nil
		}
		for i := range g.cstream {
			if g.events[i] != nil {
				errs = append(errs, check("cuEventDestroy", C.cgt_event_destroy(g.cctx, g.events[i])))
				g.events[i] = nil
			}
			if g.cstream[i] != nil {
				errs = append(errs, check("cuStreamDestroy", C.cgt_stream_destroy(g.cctx, g.cstream[i])))
				g.cstream[i] = nil
			}
		}
	}
	errs = append(errs, wrapCU("cuDevicePrimaryCtxRelease", g.dev.ReleasePrimaryCtx()))
	return errors.Join(errs...)
}

// newView makes a Device of g on st (which holds its resources already)
// and counts it among g's open clones. A clone dropped without Close gives
// its resources back when the garbage collector finds it (snapshot.go).
func (g *gpu) newView(st *state) *Device {
	d := &Device{g: g, st: st}
	g.addView()
	d.cleanup = runtime.AddCleanup(d, g.buryView, st)
	return d
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
func (d *Device) Name() string { return d.g.name }

// Ordinal is the device's number among the CUDA devices.
func (d *Device) Ordinal() int { return d.g.ordinal }

// use is the check at the top of every method that touches the device's
// memory or streams: the device is open and its contents are the GPU's
// (activate, snapshot.go). It is two comparisons when they are.
func (d *Device) use() error {
	if d.bad != nil {
		return d.bad
	}
	if d.g.owner != d.st {
		return d.activate()
	}
	return nil
}

// enter pins the calling goroutine to its thread and makes the context
// current there, for methods that call gorgonia.org/cu; leave undoes the
// pin (a capture's own pin stays: LockOSThread nests).
func (d *Device) enter() error {
	if d.bad != nil {
		return d.bad
	}
	runtime.LockOSThread()
	if err := d.g.bindThread(); err != nil {
		runtime.UnlockOSThread()
		return err
	}
	return nil
}

func (d *Device) leave() { runtime.UnlockOSThread() }

func (g *gpu) stream(s device.Stream) (C.CUstream, error) {
	if s != device.DefaultStream && s != device.SideStream {
		return nil, fmt.Errorf("cuda: no stream %d", s)
	}
	return g.cstream[s], nil
}

// Synchronize waits for all work queued on the device (cuCtxSynchronize).
func (d *Device) Synchronize() error {
	if d.bad != nil {
		return d.bad
	}
	return d.g.synchronize()
}

func (g *gpu) synchronize() error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := g.bindThread(); err != nil {
		return err
	}
	return wrapCU("cuCtxSynchronize", cu.Synchronize())
}

// Close waits for queued work and gives back what this device holds:
// segments, graphs and executable graphs that no clone or snapshot of it
// holds are freed. The last clone of a GPU to close also frees the module,
// streams and events and releases the primary context (which frees its
// memory, graphs and executable graphs once no other user holds it).
// Closing twice is a no-op.
func (d *Device) Close() error {
	if d.closed {
		return nil
	}
	d.cleanup.Stop()
	g := d.g
	errs := []error{g.synchronize()}
	g.drain()
	errs = append(errs, g.releaseState(d.st))
	if g.owner == d.st {
		g.owner = nil
	}
	d.closed, d.bad = true, errClosed
	if g.closeView() {
		g.freeAll()
		g.setClosed()
		errs = append(errs, g.release())
	}
	return errors.Join(errs...)
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
