//go:build cuda

package cuda

// This file initialises tensors on the GPU (device.Initializer): the
// engine's zeros, ones, rand and arange are kernels (kernels.cu: fill,
// rand, arange), never values generated on the host and copied, which for
// a real model's parameters took most of a replay's time (issue 30).

// #include "cgt.h"
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/traces/ops"
)

var _ device.Initializer = (*Device)(nil)

// The init kernels, by cgt_init's kind (cgt.h).
const (
	initFill   = C.CGT_INIT_FILL
	initRand   = C.CGT_INIT_RAND
	initArange = C.CGT_INIT_ARANGE
)

// moduleFunction finds a kernel of the loaded module by its symbol.
func (g *gpu) moduleFunction(symbol string) (C.CUfunction, error) {
	cname := C.CString(symbol)
	var fn C.CUfunction
	r := C.cgt_module_function(g.module, cname, &fn)
	C.free(unsafe.Pointer(cname))
	return fn, check("cuModuleGetFunction("+symbol+")", r)
}

// lookupInits finds the init kernels: fill is the op set's, rand and
// arange are InitSymbols.
func (g *gpu) lookupInits() error {
	g.inits[initFill] = g.kernels[ops.Fill][0]
	for i, symbol := range InitSymbols() {
		fn, err := g.moduleFunction(symbol)
		if err != nil {
			return err
		}
		g.inits[initRand+i] = kernelEntry{fn: fn, symbol: symbol}
	}
	return nil
}

// InitFill sets the n values at dst to v, ordered as CopyHtoD is.
func (d *Device) InitFill(dst device.Ptr, n int64, v float32) error {
	return d.init(initFill, dst, n, v, 0, 0)
}

// InitRand sets value i of the n at dst to traces.Rand(seed, i).
func (d *Device) InitRand(dst device.Ptr, n int64, seed int64) error {
	return d.init(initRand, dst, n, 0, seed, 0)
}

// InitArange sets value i of the n at dst to float32(i).
func (d *Device) InitArange(dst device.Ptr, n int64) error {
	return d.init(initArange, dst, n, 0, 0, 0)
}

// init launches init kernel kind over the n values at dst (cgt_init:
// between fences of both streams, as cgt_upload copies; while a stream
// captures, on the other, the host waiting for it). first is the index of
// dst's value in the rand or arange sequence (0 for a whole tensor).
func (d *Device) init(kind C.int, dst device.Ptr, n int64, v float32, seed, first int64) error {
	if n < 0 {
		return fmt.Errorf("cuda: init %d values", n)
	}
	if n == 0 {
		return nil
	}
	if err := d.use(); err != nil {
		return err
	}
	g := d.g
	e := &g.inits[kind]
	what := fmt.Sprintf("%s(%#x, %d floats)", e.symbol, uint64(dst), n)
	if dst == 0 {
		return fmt.Errorf("cuda: %s: null pointer", what)
	}
	s, o, fence, err := g.hostCopyStreams(what)
	if err != nil {
		return err
	}
	gx := uint32(min((n+elementwiseThreads-1)/elementwiseThreads, maxBlocks))
	r := C.cgt_init(g.cctx, e.fn, kind, C.uint(gx), C.uint(elementwiseThreads),
		C.CUdeviceptr(dst), C.float(v), C.longlong(n), C.longlong(seed), C.longlong(first),
		g.cstream[s], g.cstream[o], g.events[s], g.events[o], fence)
	if err := check("cuLaunchKernel("+what+")", r); err != nil {
		return err
	}
	d.st.unknown.Written(dst, n)
	return nil
}
