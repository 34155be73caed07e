//go:build cuda

package cuda

// This file launches kernels: the PTX entries looked up once at New, the
// launch geometry of each kernel, and the ordering of the two streams.

// #include "cgt.h"
import "C"

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/engine/device/opaque"
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

// lookupKernels finds every entry the op set needs, so that a launch never
// looks a name up.
func (g *gpu) lookupKernels() error {
	top := ops.Invalid
	for _, k := range ops.All() {
		top = max(top, k)
	}
	g.kernels = make([][3]kernelEntry, int(top)+1)
	g.byFunc = make(map[uintptr]kernelEntry)
	err := ForEachEntry(func(k ops.Kernel, b ops.BKind, symbol string) error {
		fn, err := g.moduleFunction(symbol)
		if err != nil {
			return err
		}
		e := kernelEntry{fn: fn, sig: signature(k, b), symbol: symbol}
		g.kernels[k][b] = e
		g.byFunc[uintptr(unsafe.Pointer(fn))] = e
		return nil
	})
	if err != nil {
		return err
	}
	if err := g.lookupStrided(); err != nil {
		return err
	}
	return g.lookupInits()
}

// lookupStrided finds the entries of strided launches (StridedSymbols).
func (g *gpu) lookupStrided() error {
	// The geometry crosses to C by address, as a cgt_geom.
	if unsafe.Sizeof(ops.Geometry{}) != C.sizeof_cgt_geom || ops.MaxRank != C.CGT_MAX_RANK {
		return fmt.Errorf("cuda: ops.Geometry (%d B, rank %d) is not cgt.h's cgt_geom (%d B, rank %d)",
			unsafe.Sizeof(ops.Geometry{}), ops.MaxRank, C.sizeof_cgt_geom, C.CGT_MAX_RANK)
	}
	sigs := [3]C.int{sigStrided, sigStridedSum, sigStridedMatmul}
	for i, symbol := range StridedSymbols() {
		fn, err := g.moduleFunction(symbol)
		if err != nil {
			return err
		}
		g.strided[i] = kernelEntry{fn: fn, sig: sigs[i], symbol: symbol}
		g.byFunc[uintptr(unsafe.Pointer(fn))] = g.strided[i]
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

// Launch enqueues a kernel on s, or records it when s is capturing. Kernels
// with nothing to compute (n = 0, an empty matrix) launch nothing; sum of
// nothing still writes its 0. What it writes is noted (opaque.go).
func (d *Device) Launch(s device.Stream, l *device.Launch) error {
	if err := d.launch(s, l); err != nil {
		return err
	}
	if d.noting(s, l.Opaque) {
		d.noteOp(s, opaque.LaunchOp(l))
	}
	return nil
}

func (d *Device) launch(s device.Stream, l *device.Launch) error {
	if err := d.use(); err != nil {
		return err
	}
	if l == nil {
		return errors.New("cuda: launch of nothing")
	}
	g := d.g
	st, err := g.stream(s)
	if err != nil {
		return err
	}
	if int(l.K) >= len(g.kernels) || l.K == ops.Invalid {
		return fmt.Errorf("cuda: launch: unknown kernel %s", l.K)
	}
	bi := 0
	if l.K.IsBinary() {
		if l.BKind > ops.BScalar {
			return fmt.Errorf("cuda: launch %s: unknown form of operand b (%d)", l.K, l.BKind)
		}
		bi = int(l.BKind)
	}
	if l.Geom != nil {
		return g.launchStrided(st, l)
	}
	e := &g.kernels[l.K][bi]
	gx, gy, bx, by := uint32(1), uint32(1), uint32(elementwiseThreads), uint32(1)
	switch {
	case l.K == ops.Matmul:
		if l.M < 0 || l.Kd < 0 || l.Cols < 0 {
			return fmt.Errorf("cuda: launch matmul: sizes [%d,%d]x[%d,%d]", l.M, l.Kd, l.Kd, l.Cols)
		}
		if l.M == 0 || l.Cols == 0 {
			return nil
		}
		if gx, gy, err = matmulGrid(l); err != nil {
			return err
		}
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
	if err := nullOperand(l); err != nil {
		return err
	}
	r := C.cgt_launch(g.cctx, e.fn, e.sig, C.uint(gx), C.uint(gy), C.uint(bx), C.uint(by), st,
		C.CUdeviceptr(l.Out), C.CUdeviceptr(l.A), C.CUdeviceptr(l.B), C.float(l.Scalar),
		C.longlong(l.N), C.longlong(l.M), C.longlong(l.Kd), C.longlong(l.Cols))
	if r != C.CUDA_SUCCESS {
		return check("cuLaunchKernel("+e.symbol+")", r)
	}
	return nil
}

// launchStrided launches l over strided operands (l.Geom): the checks of
// the sim's planStrided that need no memory map, then one of the strided
// entries with the geometry as its last parameter, by value.
func (g *gpu) launchStrided(st C.CUstream, l *device.Launch) error {
	geom := l.Geom
	// The geometry's checks are every device's (a malformed geometry, n
	// not its elements, an output element written twice).
	if _, err := device.LaunchOperands(l); err != nil {
		return fmt.Errorf("cuda: launch %s: %w", l.K, err)
	}
	e := &g.strided[0]
	op, bform := int32(-1), int32(ops.BScalar) // BScalar: b is not read
	gx, gy, bx, by := uint32(1), uint32(1), uint32(elementwiseThreads), uint32(1)
	switch k := l.K; {
	case k == ops.Matmul:
		e = &g.strided[2]
		if l.M == 0 || l.Cols == 0 {
			return nil
		}
		var err error
		if gx, gy, err = matmulGrid(l); err != nil {
			return err
		}
		bx, by = matmulTile, matmulTile
	case k == ops.Sum:
		e = &g.strided[1]
		bx = sumThreads
	default:
		code, ok := StridedOp(k)
		if !ok {
			return fmt.Errorf("cuda: launch: no strided entry for kernel %s", k)
		}
		op = code
		if k.IsBinary() {
			bform = int32(l.BKind)
		}
		if l.N == 0 {
			return nil
		}
		gx = uint32(min((l.N+elementwiseThreads-1)/elementwiseThreads, maxBlocks))
	}
	if err := nullOperand(l); err != nil {
		return err
	}
	// The geometry holds no Go pointer, so C may read it for the call;
	// cgt_launch_strided copies it before the launch.
	r := C.cgt_launch_strided(g.cctx, e.fn, e.sig, C.uint(gx), C.uint(gy), C.uint(bx), C.uint(by), st,
		C.CUdeviceptr(l.Out), C.CUdeviceptr(l.A), C.CUdeviceptr(l.B), C.float(l.Scalar),
		C.longlong(l.N), C.longlong(l.M), C.longlong(l.Kd), C.longlong(l.Cols),
		C.int(op), C.int(bform), (*C.cgt_geom)(unsafe.Pointer(geom)))
	if r != C.CUDA_SUCCESS {
		return check("cuLaunchKernel("+e.symbol+")", r)
	}
	return nil
}

// matmulGrid is the grid of a matmul launch: a block of matmulTile x
// matmulTile threads for each tile of the output.
func matmulGrid(l *device.Launch) (gx, gy uint32, err error) {
	rows := (l.M + matmulTile - 1) / matmulTile
	if rows > maxGridY {
		return 0, 0, fmt.Errorf("cuda: launch matmul: %d rows is more than %d", l.M, maxGridY*matmulTile)
	}
	return uint32(min((l.Cols+matmulTile-1)/matmulTile, 1<<31-1)), uint32(rows), nil
}

// WaitStream makes s wait for the work queued on other so far (an event
// recorded on other, waited on by s). During a capture this joins the
// streams' work in the graph.
func (d *Device) WaitStream(s, other device.Stream) error {
	if err := d.use(); err != nil {
		return err
	}
	g := d.g
	st, err := g.stream(s)
	if err != nil {
		return err
	}
	ot, err := g.stream(other)
	if err != nil {
		return err
	}
	if s == other {
		return nil
	}
	return check("cuStreamWaitEvent", C.cgt_wait_stream(g.cctx, st, ot, g.events[other]))
}

// nullOperand refuses a launch missing an operand its kernel reads or
// writes (a zero pointer would fault on the device, not here).
func nullOperand(l *device.Launch) error {
	if l.Out == 0 || (l.K != ops.Fill && l.A == 0) ||
		((l.K == ops.Matmul || (l.K.IsBinary() && l.BKind != ops.BScalar)) && l.B == 0) {
		return fmt.Errorf("cuda: launch %s: null operand (out %#x a %#x b %#x)", l.K, uint64(l.Out), uint64(l.A), uint64(l.B))
	}
	return nil
}
