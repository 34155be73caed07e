package ops

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// TestDTypeTable checks every dtype against torch's element_size() and
// that names parse back to the same dtype.
func TestDTypeTable(t *testing.T) {
	want := []struct {
		name     string
		size     int
		computes bool
	}{
		{"float32", 4, true}, {"float16", 2, false}, {"bfloat16", 2, false}, {"float64", 8, false},
		{"int64", 8, false}, {"int32", 4, false}, {"int8", 1, false}, {"uint8", 1, false}, {"bool", 1, false},
	}
	if int(numDTypes) != len(want) {
		t.Fatalf("%d dtypes, the table here has %d", numDTypes, len(want))
	}
	for _, w := range want {
		d, ok := ParseDType(w.name)
		if !ok {
			t.Fatalf("ParseDType(%q) failed", w.name)
		}
		if d.String() != w.name || d.Size() != w.size || d.ComputesValues() != w.computes {
			t.Errorf("%s: got name %s size %d computes %t, want %d %t", w.name, d, d.Size(), d.ComputesValues(), w.size, w.computes)
		}
		if !strings.Contains(DTypeNames(), w.name) {
			t.Errorf("DTypeNames() %q lacks %s", DTypeNames(), w.name)
		}
	}
	if d, ok := ParseDType(""); !ok || d != Float32 {
		t.Errorf(`ParseDType("") = %v, %t; want float32 (absent is the default)`, d, ok)
	}
	var zero DType
	if zero != Float32 {
		t.Error("the zero DType must be float32, the format's default")
	}
	for _, bad := range []string{"float", "Float32", "torch.float32", "complex64", "float8"} {
		if _, ok := ParseDType(bad); ok {
			t.Errorf("ParseDType(%q) accepted", bad)
		}
	}
	if DType(200).Size() != 0 || !strings.Contains(DType(200).String(), "200") {
		t.Error("an out-of-range dtype must have size 0 and say its number")
	}
}

func TestViewExtent(t *testing.T) {
	cases := []struct {
		name    string
		shape   []int
		strides []int64
		offset  int64
		want    int64
		err     string
	}{
		{"contiguous", []int{2, 3}, nil, 0, 6, ""},
		{"contiguous at offset", []int{3}, nil, 3, 6, ""},
		{"x[:, -1] of [2, 3]", []int{2}, []int64{3}, 2, 6, ""},
		{"transpose of [2, 3]", []int{3, 2}, []int64{1, 3}, 0, 6, ""},
		{"broadcast (stride 0)", []int{4, 3}, []int64{0, 1}, 0, 3, ""},
		{"scalar", []int{}, []int64{}, 5, 6, ""},
		{"empty needs nothing", []int{0, 2}, []int64{1, 1}, 100, 0, ""},
		{"8 dims", []int{2, 1, 2, 1, 2, 1, 2, 1}, nil, 0, 16, ""},
		{"negative offset", []int{2}, nil, -1, 0, "offset -1 is negative"},
		{"negative stride", []int{2}, []int64{-1}, 0, 0, "stride -1 is negative"},
		{"stride count", []int{2, 2}, []int64{1}, 0, 0, "1 strides for 2 dims"},
		{"negative size", []int{-2}, nil, 0, 0, "negative size"},
		{"overflow", []int{3}, []int64{math.MaxInt64/2 + 1}, 0, 0, "past 2^63"},
		{"overflow by offset", []int{2}, []int64{1}, math.MaxInt64 - 1, 0, "past 2^63"},
		{"largest", []int{2}, []int64{1}, math.MaxInt64 - 2, math.MaxInt64, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ViewExtent(c.shape, c.strides, c.offset)
			switch {
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("got %d, %v; want an error containing %q", got, err, c.err)
			case c.err == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case c.err == "" && got != c.want:
				t.Fatalf("extent %d, want %d", got, c.want)
			}
		})
	}
}

func TestContiguous(t *testing.T) {
	if got := ContiguousStrides([]int{2, 3, 4}); !slices.Equal(got, []int64{12, 4, 1}) {
		t.Errorf("ContiguousStrides([2, 3, 4]) = %v", got)
	}
	if got := ContiguousStrides([]int{}); len(got) != 0 {
		t.Errorf("ContiguousStrides([]) = %v", got)
	}
	cases := []struct {
		shape   []int
		strides []int64
		want    bool
	}{
		{[]int{2, 3}, nil, true},
		{[]int{2, 3}, []int64{3, 1}, true},
		{[]int{2, 3}, []int64{1, 2}, false},
		{[]int{2}, []int64{3}, false},
		{[]int{1, 3}, []int64{99, 1}, true}, // a size-1 dim's stride does not matter
		{[]int{0, 3}, []int64{7, 7}, true},  // empty
		{[]int{2, 3}, []int64{3}, false},
	}
	for _, c := range cases {
		if got := IsContiguous(c.shape, c.strides); got != c.want {
			t.Errorf("IsContiguous(%v, %v) = %t, want %t", c.shape, c.strides, got, c.want)
		}
	}
}

// TestResultShapeStridedView checks the strided view rule, and that a
// plain view keeps the element-count rule it always had.
func TestResultShapeStridedView(t *testing.T) {
	got, _, err := ResultShape(StmtView, Operands{A: []int{2, 3}, HasA: true, Shape: []int{2}, Strided: true})
	if err != nil || !slices.Equal(got, []int{2}) {
		t.Errorf("strided view: %v, %v", got, err)
	}
	if _, _, err := ResultShape(StmtView, Operands{A: []int{2, 3}, HasA: true, Strided: true}); err == nil {
		t.Error("a strided view without shape was accepted")
	}
	if _, _, err := ResultShape(StmtView, Operands{A: []int{2, 3}, HasA: true, Shape: []int{2}}); err == nil || !strings.Contains(err.Error(), "element counts differ") {
		t.Errorf("plain view changing the element count: %v", err)
	}
	got, _, err = ResultShape("add", Operands{A: []int{1, 2, 1, 2, 1, 2, 1, 2}, HasA: true, BIsNum: true})
	if err != nil || len(got) != 8 {
		t.Errorf("8-dim add: %v, %v", got, err)
	}
}
