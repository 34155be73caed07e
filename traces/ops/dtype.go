package ops

import (
	"fmt"
	"math"
	"strings"
)

// DType is a tensor's element type, one of the torch.dtype values the
// trace format names. The zero value is Float32, the format's default, so
// an absent "dtype" and the zero DType mean the same.
type DType uint8

// The dtypes, each named as torch spells it without "torch.".
const (
	Float32 DType = iota
	Float16
	BFloat16
	Float64
	Int64
	Int32
	Int8
	UInt8
	Bool
	numDTypes
)

var dtypeInfo = [numDTypes]struct {
	name string
	size int
}{
	Float32:  {"float32", 4},
	Float16:  {"float16", 2},
	BFloat16: {"bfloat16", 2},
	Float64:  {"float64", 8},
	Int64:    {"int64", 8},
	Int32:    {"int32", 4},
	Int8:     {"int8", 1},
	UInt8:    {"uint8", 1},
	Bool:     {"bool", 1},
}

// ParseDType returns the dtype a "dtype" field names; "" (absent) is
// Float32. ok is false for any other name.
func ParseDType(name string) (d DType, ok bool) {
	if name == "" {
		return Float32, true
	}
	for i := range numDTypes {
		if dtypeInfo[i].name == name {
			return i, true
		}
	}
	return Float32, false
}

// DTypeNames lists the dtype names in a fixed order, for messages.
func DTypeNames() string {
	names := make([]string, numDTypes)
	for i := range numDTypes {
		names[i] = dtypeInfo[i].name
	}
	return strings.Join(names, ", ")
}

// String returns the dtype's name as the trace format spells it.
func (d DType) String() string {
	if d < numDTypes {
		return dtypeInfo[d].name
	}
	return fmt.Sprintf("dtype(%d)", uint8(d))
}

// Size returns the bytes of one element (torch's element_size()): what
// allocation sizes multiply the element count by.
func (d DType) Size() int {
	if d < numDTypes {
		return dtypeInfo[d].size
	}
	return 0
}

// ComputesValues reports whether the kernels compute the values of
// tensors of this dtype. The sim and cuda kernels compute float32 only:
// a tensor of another dtype takes its real size in memory, so allocation,
// aliasing and liveness behave as in PyTorch, but its contents are not
// modelled. So "values" inits and expected values are refused on it rather
// than compared against numbers no kernel produced.
func (d DType) ComputesValues() bool { return d == Float32 }

// ContiguousStrides returns the strides of a contiguous (row-major) tensor
// of shape, as torch's Tensor.stride() gives them.
func ContiguousStrides(shape []int) []int64 {
	st := make([]int64, len(shape))
	acc := int64(1)
	for i := len(shape) - 1; i >= 0; i-- {
		st[i] = acc
		if shape[i] > 1 {
			acc *= int64(shape[i])
		}
	}
	return st
}

// IsContiguous reports whether strides (nil: contiguous) lay shape out
// row-major without gaps, as torch's is_contiguous() decides: dims of size
// 1 may have any stride, and an empty tensor is contiguous.
func IsContiguous(shape []int, strides []int64) bool {
	if strides == nil {
		return true
	}
	if len(strides) != len(shape) {
		return false
	}
	for _, d := range shape {
		if d == 0 {
			return true
		}
	}
	acc := int64(1)
	for i := len(shape) - 1; i >= 0; i-- {
		if shape[i] == 1 {
			continue
		}
		if strides[i] != acc {
			return false
		}
		acc *= int64(shape[i])
	}
	return true
}

// ViewExtent returns how many elements of its storage a view of shape with
// strides (nil: contiguous) at storage offset needs: offset +
// sum((size-1)*stride) + 1, or 0 when the view has no elements (torch's
// as_strided needs no storage then). It refuses negative offsets and
// strides, a stride count that differs from the dims, and extents past
// math.MaxInt64. The engine uses it to place a view's bytes; the checker,
// to refuse views past their base's storage.
func ViewExtent(shape []int, strides []int64, offset int64) (int64, error) {
	if offset < 0 {
		return 0, fmt.Errorf("offset %d is negative", offset)
	}
	if strides != nil && len(strides) != len(shape) {
		return 0, fmt.Errorf("%d strides for %d dims of %s: give one stride per dim", len(strides), len(shape), FormatShape(shape))
	}
	for i, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("shape %s has a negative size", FormatShape(shape))
		}
		if strides != nil && strides[i] < 0 {
			return 0, fmt.Errorf("stride %d is negative", strides[i])
		}
		if d == 0 {
			return 0, nil
		}
	}
	if strides == nil {
		strides = ContiguousStrides(shape)
	}
	ext := offset
	for i, d := range shape {
		if strides[i] != 0 && int64(d-1) > (math.MaxInt64-1-ext)/strides[i] {
			return 0, fmt.Errorf("view %s with strides %s at offset %d reaches past 2^63 elements", FormatShape(shape), FormatStrides(strides), offset)
		}
		ext += int64(d-1) * strides[i]
	}
	return ext + 1, nil
}

// FormatStrides prints strides as the trace format writes them: [3, 1].
func FormatStrides(s []int64) string { return formatList(s) }
