package ops

import (
	"fmt"
	"math"
	"unsafe"
)

// This file is the CPU reference of every kernel: the simulated device runs
// it, and the GPU kernels are checked against it. The functions never
// allocate and never panic: a length that does not fit is an error, reported
// before anything is written.
//
// Rounding: every elementwise result is one float32 operation rounded to
// nearest, as CUDA's default (non-fast-math) code does. exp and tanh are
// computed in float64 and rounded once, so they are within one float32 ulp
// of the exact value; CUDA's expf and tanhf are within two, so results of
// the two devices agree to a relative 1e-6, not bit for bit.
//
// In place: out may be the very slice a or b (the same first element and
// length); every function reads an element before it writes it, and reads a
// broadcast b[0] once before the loop. Partial overlap is not in-place use and
// gives whatever a sequential loop gives (the GPU gives something else).

// Elementwise runs an elementwise kernel: out[i] = a[i] op y, where y is
// b[i] (bk BTensor, len(b) == len(out)), b[0] (BBroadcast, len(b) >= 1) or
// scalar (BScalar, b unused), for add, sub, mul, div, max and min; and
// out[i] = op(a[i]) for neg, relu, exp, sqrt, tanh and abs, where b, bk and
// scalar are unused. len(a) must equal len(out).
//
// Special values follow CUDA's float32 functions: x/0 is ±Inf and 0/0 NaN;
// sqrt of a negative number is NaN (sqrtf); max and min propagate NaN, as
// torch.maximum, torch.minimum and the clamps do (fmaxf and fminf would drop
// it), and otherwise pick x when it is strictly larger (smaller), else y, as
// the CUDA kernels (kernels.cu's cgt_max, cgt_min) do: max(-0, +0) is +0,
// max(+0, -0) is -0. relu keeps NaN (PyTorch's relu is
// clamp_min, which propagates NaN) and maps everything not above zero,
// -0 included, to +0. neg and abs only flip or clear the sign bit.
func Elementwise(k Kernel, out, a, b []float32, bk BKind, scalar float32) error {
	if len(a) != len(out) {
		return fmt.Errorf("kernels: %s: a has %d elements, out %d", k, len(a), len(out))
	}
	a = a[:len(out)]
	switch {
	case k.IsUnary():
		unary(k, out, a)
		return nil
	case !k.IsBinary():
		return fmt.Errorf("kernels: %s is not an elementwise kernel", k)
	}
	switch bk {
	case BTensor:
		if len(b) != len(out) {
			return fmt.Errorf("kernels: %s: b has %d elements, out %d", k, len(b), len(out))
		}
		binaryTensor(k, out, a, b[:len(out)])
	case BBroadcast:
		if len(b) < 1 {
			return fmt.Errorf("kernels: %s: broadcast b is empty", k)
		}
		binaryScalar(k, out, a, b[0])
	case BScalar:
		binaryScalar(k, out, a, scalar)
	default:
		return fmt.Errorf("kernels: %s: unknown form of b (%d)", k, bk)
	}
	return nil
}

// binaryTensor has one loop per kernel, rather than one loop calling a
// function value, so that the compiler can inline the operation. The
// arithmetic loops take four elements a round (unrolled below).
func binaryTensor(k Kernel, out, a, b []float32) {
	a, b = a[:len(out)], b[:len(out)]
	switch k {
	case Add:
		i := 0
		for ; i+4 <= len(out); i += 4 {
			o, x, z := out[i:i+4:i+4], a[i:i+4:i+4], b[i:i+4:i+4]
			o[0] = x[0] + z[0]
			o[1] = x[1] + z[1]
			o[2] = x[2] + z[2]
			o[3] = x[3] + z[3]
		}
		for ; i < len(out); i++ {
			out[i] = a[i] + b[i]
		}
	case Sub:
		i := 0
		for ; i+4 <= len(out); i += 4 {
			o, x, z := out[i:i+4:i+4], a[i:i+4:i+4], b[i:i+4:i+4]
			o[0] = x[0] - z[0]
			o[1] = x[1] - z[1]
			o[2] = x[2] - z[2]
			o[3] = x[3] - z[3]
		}
		for ; i < len(out); i++ {
			out[i] = a[i] - b[i]
		}
	case Mul:
		i := 0
		for ; i+4 <= len(out); i += 4 {
			o, x, z := out[i:i+4:i+4], a[i:i+4:i+4], b[i:i+4:i+4]
			o[0] = x[0] * z[0]
			o[1] = x[1] * z[1]
			o[2] = x[2] * z[2]
			o[3] = x[3] * z[3]
		}
		for ; i < len(out); i++ {
			out[i] = a[i] * b[i]
		}
	case Div:
		i := 0
		for ; i+4 <= len(out); i += 4 {
			o, x, z := out[i:i+4:i+4], a[i:i+4:i+4], b[i:i+4:i+4]
			o[0] = x[0] / z[0]
			o[1] = x[1] / z[1]
			o[2] = x[2] / z[2]
			o[3] = x[3] / z[3]
		}
		for ; i < len(out); i++ {
			out[i] = a[i] / b[i]
		}
	case Max:
		for i := range out {
			out[i] = maxf(a[i], b[i])
		}
	case Min:
		for i := range out {
			out[i] = minf(a[i], b[i])
		}
	}
}

// binaryScalar is binaryTensor with one operand y for every element. Its
// arithmetic loops take four elements a round, element by element in
// order (each read before it is written, as the one-element loop does,
// so that in-place and overlapping use give what that loop gives), over
// slices resliced to out's length so that no element's index is checked:
// in the replay benchmarks' 256-element add, the loop's counter and the
// checks had cost more than the adds, and the loop's cost moved with
// where the linker happened to place it.
func binaryScalar(k Kernel, out, a []float32, y float32) {
	a = a[:len(out)]
	switch k {
	case Add:
		i := 0
		for ; i+4 <= len(out); i += 4 {
			o, x := out[i:i+4:i+4], a[i:i+4:i+4]
			o[0] = x[0] + y
			o[1] = x[1] + y
			o[2] = x[2] + y
			o[3] = x[3] + y
		}
		for ; i < len(out); i++ {
			out[i] = a[i] + y
		}
	case Sub:
		i := 0
		for ; i+4 <= len(out); i += 4 {
			o, x := out[i:i+4:i+4], a[i:i+4:i+4]
			o[0] = x[0] - y
			o[1] = x[1] - y
			o[2] = x[2] - y
			o[3] = x[3] - y
		}
		for ; i < len(out); i++ {
			out[i] = a[i] - y
		}
	case Mul:
		i := 0
		for ; i+4 <= len(out); i += 4 {
			o, x := out[i:i+4:i+4], a[i:i+4:i+4]
			o[0] = x[0] * y
			o[1] = x[1] * y
			o[2] = x[2] * y
			o[3] = x[3] * y
		}
		for ; i < len(out); i++ {
			out[i] = a[i] * y
		}
	case Div:
		i := 0
		for ; i+4 <= len(out); i += 4 {
			o, x := out[i:i+4:i+4], a[i:i+4:i+4]
			o[0] = x[0] / y
			o[1] = x[1] / y
			o[2] = x[2] / y
			o[3] = x[3] / y
		}
		for ; i < len(out); i++ {
			out[i] = a[i] / y
		}
	case Max:
		for i := range out {
			out[i] = maxf(a[i], y)
		}
	case Min:
		for i := range out {
			out[i] = minf(a[i], y)
		}
	}
}

func unary(k Kernel, out, a []float32) {
	switch k {
	case Neg:
		for i := range out {
			out[i] = -a[i]
		}
	case Relu:
		for i := range out {
			x := a[i]
			if !(x > 0) && x == x {
				x = 0
			}
			out[i] = x
		}
	case Exp:
		for i := range out {
			out[i] = float32(math.Exp(float64(a[i])))
		}
	case Sqrt:
		// Rounding the float64 square root to float32 is correctly
		// rounded (float64 has more than 2*24+2 bits), as sqrtf is.
		for i := range out {
			out[i] = float32(math.Sqrt(float64(a[i])))
		}
	case Tanh:
		for i := range out {
			out[i] = float32(math.Tanh(float64(a[i])))
		}
	case Abs:
		for i := range out {
			out[i] = math.Float32frombits(math.Float32bits(a[i]) &^ (1 << 31))
		}
	}
}

// maxf is kernels.cu's cgt_max: NaN when either operand is NaN (x+y is
// one), else x when it is larger, else y.
func maxf(x, y float32) float32 {
	if x != x || y != y {
		return x + y
	}
	if x > y {
		return x
	}
	return y
}

// minf is kernels.cu's cgt_min: NaN when either operand is NaN, else x
// when it is smaller, else y.
func minf(x, y float32) float32 {
	if x != x || y != y {
		return x + y
	}
	if x < y {
		return x
	}
	return y
}

// MatmulCPU computes out = a·b for row-major a [m, k], b [k, n] and out [m, n].
// Each out element is a float32 sum taken in k order, starting from 0, of
// float32 products each rounded before the add (written so that Go cannot
// fuse them into an FMA). The GPU kernel sums in the same order; with or
// without FMA there, results agree within 1e-5 for the trace format's sizes.
// out must not overlap a or b (each out element needs a whole row of a and a
// whole column of b); m, k or n may be zero, and k == 0 gives zeros.
func MatmulCPU(out, a, b []float32, m, k, n int) error {
	if m < 0 || k < 0 || n < 0 {
		return fmt.Errorf("kernels: matmul: negative size m=%d k=%d n=%d", m, k, n)
	}
	mk, okA := mulInt(m, k)
	kn, okB := mulInt(k, n)
	mn, okO := mulInt(m, n)
	if !okA || !okB || !okO {
		return fmt.Errorf("kernels: matmul: sizes m=%d k=%d n=%d overflow", m, k, n)
	}
	if len(a) != mk || len(b) != kn || len(out) != mn {
		return fmt.Errorf("kernels: matmul [%d, %d]·[%d, %d]: a has %d elements (want %d), b %d (want %d), out %d (want %d)",
			m, k, k, n, len(a), mk, len(b), kn, len(out), mn)
	}
	if overlaps(out, a) || overlaps(out, b) {
		return fmt.Errorf("kernels: matmul: out overlaps an operand")
	}
	for i := 0; i < m; i++ {
		row := a[i*k : i*k+k]
		dst := out[i*n : i*n+n]
		for j := range dst {
			var acc float32
			for p, x := range row {
				acc += float32(x * b[p*n+j])
			}
			dst[j] = acc
		}
	}
	return nil
}

// SumCPU sets out[0] to the sum of a, taken in index order. It
// accumulates in float64 and rounds to float32 once at the end: float64
// carries 29 more bits than float32, so for the trace format's sizes the
// accumulated error is far below one float32 ulp of the result, and a GPU
// reduction (which adds in a tree order) is checked against it within a
// relative 1e-5. out may be a itself; the sum of no elements is 0.
func SumCPU(out, a []float32) error {
	if len(out) < 1 {
		return fmt.Errorf("kernels: sum: out is empty")
	}
	var acc float64
	for _, x := range a {
		acc += float64(x)
	}
	out[0] = float32(acc)
	return nil
}

// CopyCPU copies a into out; they must have the same length. Overlapping
// slices are copied as if through a temporary (memmove).
func CopyCPU(out, a []float32) error {
	if len(a) != len(out) {
		return fmt.Errorf("kernels: copy: a has %d elements, out %d", len(a), len(out))
	}
	copy(out, a)
	return nil
}

// FillCPU sets every element of out to v.
func FillCPU(out []float32, v float32) {
	for i := range out {
		out[i] = v
	}
}

// overlaps reports whether two slices share an element. Go cannot order
// pointers, so it compares addresses as integers; the slices are live for
// the whole call, and Go's heap does not move objects, so the numbers stay
// meaningful while they are compared.
func overlaps(x, y []float32) bool {
	if len(x) == 0 || len(y) == 0 {
		return false
	}
	const size = uintptr(unsafe.Sizeof(float32(0)))
	x0 := uintptr(unsafe.Pointer(unsafe.SliceData(x)))
	y0 := uintptr(unsafe.Pointer(unsafe.SliceData(y)))
	return x0 < y0+uintptr(len(y))*size && y0 < x0+uintptr(len(x))*size
}

func mulInt(x, y int) (int, bool) {
	if x == 0 || y == 0 {
		return 0, true
	}
	p := x * y
	if p/y != x || p < 0 {
		return 0, false
	}
	return p, true
}
