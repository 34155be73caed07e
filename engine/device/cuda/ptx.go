package cuda

import (
	_ "embed"
	"fmt"
	"regexp"

	"github.com/cgtviz/cgtviz/engine/kernels"
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
var binaryOps = map[kernels.Kernel]string{
	kernels.Add: "add", kernels.Sub: "sub", kernels.Mul: "mul",
	kernels.Div: "div", kernels.Max: "max", kernels.Min: "min",
}

// bformSuffix is the part of a binary kernel's symbol that names the form
// of operand b.
var bformSuffix = map[kernels.BKind]string{
	kernels.BTensor:    "tensor",
	kernels.BBroadcast: "broadcast",
	kernels.BScalar:    "scalar",
}

// BKinds lists every form of operand b, in a fixed order.
func BKinds() []kernels.BKind {
	return []kernels.BKind{kernels.BTensor, kernels.BBroadcast, kernels.BScalar}
}

// Symbol returns the name of the PTX entry that runs kernel k; b matters
// for binary kernels only. It fails for kernels outside the op set and for
// unknown forms of b, so a caller never launches a guessed name.
func Symbol(k kernels.Kernel, b kernels.BKind) (string, error) {
	if op, ok := binaryOps[k]; ok {
		suffix, ok := bformSuffix[b]
		if !ok {
			return "", fmt.Errorf("cuda: kernel %s: unknown form of operand b (%d)", k, b)
		}
		return "cgtviz_" + op + "_" + suffix, nil
	}
	switch k {
	case kernels.Neg, kernels.Relu, kernels.Exp, kernels.Sqrt, kernels.Tanh, kernels.Abs,
		kernels.Matmul, kernels.Sum, kernels.Copy, kernels.Fill:
		return "cgtviz_" + k.String(), nil
	}
	return "", fmt.Errorf("cuda: no PTX entry for kernel %s", k)
}

// Symbols returns the name of every PTX entry the op set needs: one per
// kernel of kernels.All, and one per form of b for binary kernels.
func Symbols() ([]string, error) {
	var out []string
	for _, k := range kernels.All() {
		forms := []kernels.BKind{kernels.BTensor}
		if k.IsBinary() {
			forms = BKinds()
		}
		for _, b := range forms {
			name, err := Symbol(k, b)
			if err != nil {
				return nil, err
			}
			out = append(out, name)
		}
	}
	return out, nil
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
