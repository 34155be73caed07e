package ops

import (
	"fmt"
	"slices"
	"strings"
)

// Statement kinds that are not kernels but are valid in a body or eager record.
const (
	StmtView  = "view"
	StmtEmpty = "empty"
)

// IsStmt reports whether name is a valid statement kind ("k"): a kernel,
// "view" or "empty".
func IsStmt(name string) bool {
	if name == StmtView || name == StmtEmpty {
		return true
	}
	_, ok := Parse(name)
	return ok
}

// StmtNames lists every valid statement kind, for error messages.
func StmtNames() []string {
	out := []string{}
	for _, k := range All() {
		out = append(out, k.String())
	}
	return append(out, StmtView, StmtEmpty)
}

// Operands are the shapes a statement sees: A's shape (nil when absent), B's
// shape (nil when b is a number or absent), whether b is a number, and the
// statement's own "shape" field (nil when absent).
type Operands struct {
	A      []int
	HasA   bool
	B      []int
	HasB   bool // b given as a tensor
	BIsNum bool // b given as a number
	Shape  []int
	HasVal bool // fill's "value" present
	// Strided marks a view with "offset" or "strides" (as_strided): its
	// shape is its own, and the element count may differ from a's (the
	// caller checks the extent with ViewExtent).
	Strided bool
}

// ResultShape returns the shape a statement of kind k produces from its
// operands, or an error saying in plain words what does not fit. The
// returned BKind is meaningful for binary kernels only.
func ResultShape(k string, o Operands) ([]int, BKind, error) {
	switch k {
	case StmtView:
		if !o.HasA {
			return nil, 0, fmt.Errorf("view needs a")
		}
		if o.Strided {
			if o.Shape == nil {
				return nil, 0, fmt.Errorf("a view with strides or offset needs shape")
			}
			return clone(o.Shape), 0, nil
		}
		if o.Shape == nil {
			return clone(o.A), 0, nil
		}
		if elems(o.Shape) != elems(o.A) {
			return nil, 0, fmt.Errorf("view of %s (%d elements) as %s (%d elements): element counts differ",
				FormatShape(o.A), elems(o.A), FormatShape(o.Shape), elems(o.Shape))
		}
		return clone(o.Shape), 0, nil
	case StmtEmpty:
		if o.Shape == nil {
			return nil, 0, fmt.Errorf("empty needs shape")
		}
		return clone(o.Shape), 0, nil
	}
	kern, ok := Parse(k)
	if !ok {
		return nil, 0, fmt.Errorf("unknown kernel %q (kernels: %s)", k, strings.Join(StmtNames(), ", "))
	}
	switch {
	case kern.IsBinary():
		if !o.HasA {
			return nil, 0, fmt.Errorf("%s needs a", k)
		}
		switch {
		case o.BIsNum:
			return clone(o.A), BScalar, nil
		case !o.HasB:
			return nil, 0, fmt.Errorf("%s needs b (a tensor or a number)", k)
		case slices.Equal(o.A, o.B):
			return clone(o.A), BTensor, nil
		case len(o.B) == 1 && o.B[0] == 1:
			return clone(o.A), BBroadcast, nil
		default:
			return nil, 0, fmt.Errorf("%s: b has shape %s, want %s (as a) or [1]", k, FormatShape(o.B), FormatShape(o.A))
		}
	case kern.IsUnary(), kern == Copy:
		if !o.HasA {
			return nil, 0, fmt.Errorf("%s needs a", k)
		}
		return clone(o.A), 0, nil
	case kern == Sum:
		if !o.HasA {
			return nil, 0, fmt.Errorf("sum needs a")
		}
		return []int{1}, 0, nil
	case kern == Matmul:
		if !o.HasA || !o.HasB {
			return nil, 0, fmt.Errorf("matmul needs tensors a and b")
		}
		if len(o.A) != 2 || len(o.B) != 2 {
			return nil, 0, fmt.Errorf("matmul needs a [m, k] and b [k, n], got %s and %s", FormatShape(o.A), FormatShape(o.B))
		}
		if o.A[1] != o.B[0] {
			return nil, 0, fmt.Errorf("matmul of %s and %s: inner sizes %d and %d differ", FormatShape(o.A), FormatShape(o.B), o.A[1], o.B[0])
		}
		return []int{o.A[0], o.B[1]}, 0, nil
	case kern == Fill:
		if o.Shape == nil {
			return nil, 0, fmt.Errorf("fill needs shape")
		}
		if !o.HasVal {
			return nil, 0, fmt.Errorf("fill needs value")
		}
		return clone(o.Shape), 0, nil
	}
	return nil, 0, fmt.Errorf("kernel %q has no shape rule", k)
}

// FormatShape prints a shape as the trace format writes it: [2, 3].
func FormatShape(s []int) string { return formatList(s) }

// formatList prints integers as a JSON list with a space after each comma.
func formatList[T int | int64](s []T) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, d := range s {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprint(&b, d)
	}
	b.WriteByte(']')
	return b.String()
}

func elems(s []int) int64 {
	n := int64(1)
	for _, d := range s {
		n *= int64(d)
	}
	return n
}

func clone(s []int) []int { return append([]int(nil), s...) }
