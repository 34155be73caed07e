package cuda

import (
	_ "embed"
	"fmt"
	"regexp"

	"github.com/cgtviz/cgtviz/traces/ops"
)

// This file has no build tag and does not import gorgonia.org/cu, so that
// builds and tests without a GPU can still check the embedded PTX against
// the op set.

// PTX is the module the device loads with cuModuleLoadData: kernels.cu
// compiled by nvcc for a virtual architecture (compute_75), which the
// driver compiles for the GPU at load time. Regenerate it with make ptx.
//
//go:embed kernels.ptx
var PTX string

// binaryOps spells the binary kernels as kernels.cu names them.
var binaryOps = map[ops.Kernel]string{
	ops.Add: "add", ops.Sub: "sub", ops.Mul: "mul",
	ops.Div: "div", ops.Max: "max", ops.Min: "min",
}

// bformSuffix is the part of a binary kernel's symbol that names the form
// of operand b.
var bformSuffix = map[ops.BKind]string{
	ops.BTensor:    "tensor",
	ops.BBroadcast: "broadcast",
	ops.BScalar:    "scalar",
}

// BKinds lists every form of operand b, in a fixed order.
func BKinds() []ops.BKind {
	return []ops.BKind{ops.BTensor, ops.BBroadcast, ops.BScalar}
}

// Symbol returns the name of the PTX entry that runs kernel k; b matters
// for binary kernels only. It fails for kernels outside the op set and for
// unknown forms of b, so a caller never launches a guessed name.
func Symbol(k ops.Kernel, b ops.BKind) (string, error) {
	if op, ok := binaryOps[k]; ok {
		suffix, ok := bformSuffix[b]
		if !ok {
			return "", fmt.Errorf("cuda: kernel %s: unknown form of operand b (%d)", k, b)
		}
		return "cgtviz_" + op + "_" + suffix, nil
	}
	switch k {
	case ops.Neg, ops.Relu, ops.Exp, ops.Sqrt, ops.Tanh, ops.Abs,
		ops.Matmul, ops.Sum, ops.Copy, ops.Fill:
		return "cgtviz_" + k.String(), nil
	}
	return "", fmt.Errorf("cuda: no PTX entry for kernel %s", k)
}

// InitSymbols are the PTX entries of tensor inits (device.Initializer)
// beside the op set's fill: traces.Rand's values and arange's.
func InitSymbols() []string { return []string{"cgtviz_rand", "cgtviz_arange"} }

// The PTX entries of launches over strided operands (Launch.Geom): one
// for every elementwise kernel, copy and fill (the op a parameter, as
// StridedOp numbers it), one for sum and one for matmul.
const (
	StridedSymbol       = "cgtviz_strided"
	StridedSumSymbol    = "cgtviz_strided_sum"
	StridedMatmulSymbol = "cgtviz_strided_matmul"
)

// StridedSymbols lists the entries of strided launches.
func StridedSymbols() []string {
	return []string{StridedSymbol, StridedSumSymbol, StridedMatmulSymbol}
}

// stridedOps are kernels.cu's CGT_OP_* codes of cgtviz_strided, by code.
var stridedOps = [...]ops.Kernel{
	ops.Add, ops.Sub, ops.Mul, ops.Div, ops.Max, ops.Min,
	ops.Neg, ops.Relu, ops.Exp, ops.Sqrt, ops.Tanh, ops.Abs,
	ops.Copy, ops.Fill,
}

// StridedOp returns the op code cgtviz_strided runs kernel k with; ok is
// false for sum, matmul and kernels outside the op set, which have
// entries of their own or none.
func StridedOp(k ops.Kernel) (code int32, ok bool) {
	for i, x := range stridedOps {
		if x == k {
			return int32(i), true
		}
	}
	return -1, false
}

// StridedKernel is StridedOp's inverse, for graph introspection.
func StridedKernel(code int32) (ops.Kernel, bool) {
	if code < 0 || int(code) >= len(stridedOps) {
		return ops.Invalid, false
	}
	return stridedOps[code], true
}

// Forms returns the forms of operand b that kernel k has a PTX entry for:
// every form for binary kernels, BTensor (standing for "no b") otherwise.
func Forms(k ops.Kernel) []ops.BKind {
	if k.IsBinary() {
		return BKinds()
	}
	return []ops.BKind{ops.BTensor}
}

// ForEachEntry calls f with every PTX entry the op set needs, kernel by
// kernel in the order of ops.All and form by form (Forms), and stops at
// the first error. The device's kernel table, Symbols and the tests walk
// the entries with it.
func ForEachEntry(f func(k ops.Kernel, b ops.BKind, symbol string) error) error {
	for _, k := range ops.All() {
		for _, b := range Forms(k) {
			symbol, err := Symbol(k, b)
			if err != nil {
				return err
			}
			if err := f(k, b, symbol); err != nil {
				return err
			}
		}
	}
	return nil
}

// Symbols returns the name of every PTX entry the op set needs: one per
// kernel of ops.All, and one per form of b for binary ops.
func Symbols() ([]string, error) {
	var out []string
	err := ForEachEntry(func(_ ops.Kernel, _ ops.BKind, symbol string) error {
		out = append(out, symbol)
		return nil
	})
	return out, err
}

var entryRE = regexp.MustCompile(`(?m)^\s*(?:\.visible\s+)?\.entry\s+([A-Za-z_$][A-Za-z0-9_$]*)\s*\(`)

// Entries returns the names of the kernels a PTX text defines (its .entry
// directives), in the order they appear.
func Entries(ptx string) []string {
	var out []string
	for _, m := range entryRE.FindAllStringSubmatch(ptx, -1) {
		out = append(out, m[1])
	}
	return out
}
