package dynamo

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

// TestCache checks Dynamo's cache of one code object: which compiled
// graph a call runs through, when it recompiles, and what the new graph
// guards.
func TestCache(t *testing.T) {
	tests := []struct {
		name  string
		calls []call // compiled in order, each after a lookup miss
		probe call   // looked up after them
		hit   int    // gen of the graph it runs through, 0 for a miss
		dims  []int  // with a miss: the dims the recompile would guard
	}{
		{"same shape hits", []call{{"f", []int{4}, false}}, call{"f", []int{4}, false}, 1, nil},
		{"another def misses", []call{{"f", []int{4}, false}}, call{"g", []int{4}, false}, 0, []int{4}},
		{"a dynamic dim takes any size from 2", []call{{"f", []int{4}, false}, {"f", []int{5}, false}}, call{"f", []int{9}, false}, 2, nil},
		{"but not 1: sizes 0 and 1 specialize", []call{{"f", []int{4}, false}, {"f", []int{5}, false}}, call{"f", []int{1}, false}, 0, []int{1}},
		{"a static input takes dynamic dims too", []call{{"f", []int{4}, true}}, call{"f", []int{5}, true}, 0, []int{-1}},
		{"and leaves its history", []call{{"f", []int{4}, true}}, call{"f", []int{5}, false}, 0, []int{-1}},
		{"while a plain input's changed size turns dynamic", []call{{"f", []int{4}, false}}, call{"f", []int{5}, false}, 0, []int{-1}},
		{"the shared history of one code object", []call{{"f", []int{4}, false}, {"g", []int{2, 2}, false}}, call{"f", []int{3}, false}, 0, []int{-1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkCache(t, tt.calls, tt.probe, tt.hit, tt.dims, DefaultShapes) })
	}
	// Under StaticInputsStatic (one closure for every def), a static input
	// keeps static shapes and leaves no history.
	keep := DefaultShapes
	keep.StaticInputsStatic = true
	t.Run("static inputs static/keeps static shapes", func(t *testing.T) {
		checkCache(t, []call{{"f", []int{4}, true}}, call{"f", []int{5}, true}, 0, []int{5}, keep)
	})
	t.Run("static inputs static/leaves no history", func(t *testing.T) {
		checkCache(t, []call{{"f", []int{4}, true}}, call{"f", []int{5}, false}, 0, []int{5}, keep)
	})
}

type call struct {
	fn     string
	shape  []int
	static bool
}

// checkCache compiles calls in order (each after a lookup miss), then
// looks up the probe: hit is the graph it runs through (0: a miss, and
// then dims are what the recompile would guard).
func checkCache(t *testing.T, calls []call, probe call, hit int, dims []int, how Shapes) {
	t.Helper()
	cs := &Cache{}
	for _, c := range calls {
		if cs.Lookup(c.fn, [][]int{c.shape}, nil, []int{-1}) == nil {
			cs.Compile(c.fn, [][]int{c.shape}, nil, []int{-1}, []bool{c.static}, how)
		}
	}
	ent := cs.Lookup(probe.fn, [][]int{probe.shape}, nil, []int{-1})
	switch {
	case hit == 0 && ent != nil:
		t.Fatalf("hit graph %d (%s %v), want a miss", ent.Gen, ent.fn, ent.dims)
	case hit != 0 && (ent == nil || ent.Gen != hit):
		t.Fatalf("ran through %+v, want graph %d", ent, hit)
	case hit == 0:
		ent = cs.Clone().Compile(probe.fn, [][]int{probe.shape}, nil, []int{-1}, []bool{probe.static}, how)
		if got := ent.dims[0]; len(got) != len(dims) || got[0] != dims[0] {
			t.Errorf("recompile guards %v, want %v", got, dims)
		}
	}
}
