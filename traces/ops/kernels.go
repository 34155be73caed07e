package ops

import "fmt"

// Kernel is one kernel of the trace format's op set. The statements "view"
// and "empty" launch no kernel and have no Kernel value.
type Kernel uint8

// The kernels. The order is part of no contract; use Name/Parse for text.
const (
	Invalid Kernel = iota
	Add
	Sub
	Mul
	Div
	Max
	Min
	Neg
	Relu
	Exp
	Sqrt
	Tanh
	Abs
	Matmul
	Sum
	Copy
	Fill
	numKernels
)

var names = [...]string{
	Invalid: "invalid",
	Add:     "add", Sub: "sub", Mul: "mul", Div: "div", Max: "max", Min: "min",
	Neg: "neg", Relu: "relu", Exp: "exp", Sqrt: "sqrt", Tanh: "tanh", Abs: "abs",
	Matmul: "matmul", Sum: "sum", Copy: "copy", Fill: "fill",
}

// String returns the kernel's name as the trace format spells it.
func (k Kernel) String() string {
	if int(k) < len(names) {
		return names[k]
	}
	return fmt.Sprintf("kernel(%d)", uint8(k))
}

// All returns every kernel of the op set, in a fixed order.
func All() []Kernel {
	out := make([]Kernel, 0, numKernels-1)
	for k := Add; k < numKernels; k++ {
		out = append(out, k)
	}
	return out
}

// Parse returns the kernel of a statement's "k". ok is false for unknown
// names and for "view" and "empty", which are statements but not kernels.
func Parse(name string) (k Kernel, ok bool) {
	for i := Add; i < numKernels; i++ {
		if names[i] == name {
			return i, true
		}
	}
	return Invalid, false
}

// IsBinary reports whether k is elementwise with a second operand b.
func (k Kernel) IsBinary() bool { return k >= Add && k <= Min }

// IsUnary reports whether k is elementwise with only a.
func (k Kernel) IsUnary() bool { return k >= Neg && k <= Abs }

// BKind says what a binary kernel's second operand is.
type BKind uint8

// The forms of operand b (spec: "a tensor of the same shape, a tensor of
// shape [1], or a number").
const (
	BTensor    BKind = iota // same element count as a
	BBroadcast              // a tensor of one element, broadcast
	BScalar                 // the number Launch.Scalar
)
