package engine

import "testing"

// TestArgFrame checks Dynamo's automatic-dynamic merge for one argument:
// a size that changes becomes dynamic, sizes 0 and 1 are left to the
// caller, and a rank change makes every dim of every later compile dynamic.
func TestArgFrame(t *testing.T) {
	tests := []struct {
		name    string
		compile [][]int // shapes of successive compiles
		shape   []int   // shape of the compile checked
		want    []bool  // dynamic per dim of shape
	}{
		{"first compile is static", nil, []int{3, 4}, []bool{false, false}},
		{"same shape stays static", [][]int{{3, 4}}, []int{3, 4}, []bool{false, false}},
		{"changed dim is dynamic", [][]int{{3, 4}}, []int{5, 4}, []bool{true, false}},
		{"dynamic stays dynamic", [][]int{{3, 4}, {5, 4}}, []int{3, 4}, []bool{true, false}},
		{"rank change makes all dims dynamic", [][]int{{6}}, []int{3, 3}, []bool{true, true}},
		{"and keeps them dynamic", [][]int{{6}, {3, 3}}, []int{2}, []bool{true}},
		{"back to the first rank too", [][]int{{6}, {3, 3}}, []int{6}, []bool{true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a *argFrame
			for _, s := range append(tt.compile, tt.shape) {
				if a == nil {
					a = &argFrame{dims: append([]int(nil), s...)}
				} else {
					a.merge(s)
				}
			}
			for j, w := range tt.want {
				if got := a.dynamic(j); got != w {
					t.Errorf("dim %d: dynamic %v, want %v", j, got, w)
				}
			}
		})
	}
}
