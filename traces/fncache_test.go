package traces

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/cgtviz/cgtviz/traces/ops"
)

// TestFnIndex checks that the cache in front of the defs' map gives the
// map's answer for names at the address a slot holds, at other addresses
// (the same name copied), for names whose addresses share a set, and for
// names no def has, with the cache remade as the defs grow.
func TestFnIndex(t *testing.T) {
	c := newChecker("t", Header{Config: DefaultConfig()})
	const n = 300
	names := make([][]string, n) // names[i]: copies of def i's name, each at its own address
	for i := range n {
		name := fmt.Sprintf("f%d", i)
		c.def(&Record{Line: i + 2, Op: OpDef, Fn: name, Params: []string{"x"}, Returns: []string{"x"}})
		for range 3 {
			names[i] = append(names[i], strings.Clone(name))
		}
		// Every few defs, look up all the names so far: the cache is
		// remade at sizes 16, 32, ... with names in it.
		if i%7 == 0 {
			for k := 0; k <= i; k++ {
				if got, ok := c.fnIndex(names[k][0]); !ok || got != int32(k) {
					t.Fatalf("after %d defs: fnIndex(%s) = %d, %v; want %d", i+1, names[k][0], got, ok, k)
				}
			}
		}
	}
	if len(c.fnCache.sets) < n {
		t.Fatalf("%d sets for %d defs", len(c.fnCache.sets), n)
	}
	for round := range 4 {
		for i := range n {
			for _, s := range names[i] {
				got, ok := c.fnIndex(s)
				if !ok || got != int32(i) {
					t.Fatalf("round %d: fnIndex(%s) = %d, %v; want %d", round, s, got, ok, i)
				}
			}
		}
	}
	for _, s := range []string{"", "f", "f300", "g0", strings.Clone("f1") + "x"} {
		if got, ok := c.fnIndex(s); ok {
			t.Errorf("fnIndex(%q) = %d, true; no def has that name", s, got)
		}
	}
}

// TestCheckLastResult checks the calls that a def's last body result (in
// its fnInfo) must not answer: another shape, dtype, limit or def, each
// after a call that took it, and calls whose memo keys are too long for
// fnInfo (six 2-d args), which only the memo answers.
func TestCheckLastResult(t *testing.T) {
	const head = `{"cgtviz": 1}
{"op": "def", "fn": "v4", "params": ["x"], "body": [{"out": "y", "k": "view", "a": "x", "shape": [4]}], "returns": ["y"]}
{"op": "def", "fn": "add", "params": ["x"], "body": [{"out": "y", "k": "add", "a": "x", "b": 1}], "returns": ["y"]}
{"op": "def", "fn": "mm", "params": ["a", "b", "c", "d", "e", "f"], "body": [{"out": "y", "k": "matmul", "a": "a", "b": "b"}], "returns": ["y"]}
{"op": "def", "fn": "mm2", "params": ["a", "b"], "body": [{"out": "y", "k": "matmul", "a": "a", "b": "b"}], "returns": ["y"]}
{"op": "tensor", "name": "a", "shape": [4], "init": "zeros"}
{"op": "tensor", "name": "b", "shape": [8], "init": "zeros"}
{"op": "tensor", "name": "h", "shape": [4], "init": "zeros", "dtype": "float16"}
{"op": "tensor", "name": "m", "shape": [100, 2], "init": "zeros"}
{"op": "tensor", "name": "n", "shape": [2, 100], "init": "zeros"}
{"op": "tensor", "name": "p", "shape": [3, 100], "init": "zeros"}
`
	const first = 12 // the line of the first of lines
	type problem struct {
		line int
		msg  string // part of the message
	}
	tests := []struct {
		name  string
		lines []string
		want  []problem
	}{
		{"shape", []string{
			`{"op": "call", "fn": "v4", "args": ["a"], "out": ["y"]}`,
			`{"op": "call", "fn": "v4", "args": ["b"], "out": ["y"]}`,
			`{"op": "call", "fn": "v4", "args": ["a"], "out": ["y"]}`,
			`{"op": "call", "fn": "v4", "args": ["b"], "out": ["y"]}`,
		}, []problem{{first + 1, "view"}, {first + 3, "view"}}},
		{"dtype", []string{
			`{"op": "call", "fn": "add", "args": ["a"], "out": ["y"]}`,
			`{"op": "call", "fn": "add", "args": ["h"], "out": ["z"]}`,
			`{"op": "expect", "values": {"name": "y", "values": [1, 1, 1, 1]}}`,
			`{"op": "expect", "values": {"name": "z", "values": [1, 1, 1, 1]}}`,
		}, []problem{{first + 3, "z is float16"}}},
		{"limit", []string{
			`{"op": "call", "fn": "mm2", "args": ["m", "n"], "out": ["y"]}`,
			`{"op": "call", "fn": "mm2", "args": ["m", "n"], "out": ["y"]}`,
			`{"op": "config", "max_tensor_bytes": 1000}`,
			`{"op": "call", "fn": "mm2", "args": ["m", "n"], "out": ["y"]}`,
		}, []problem{{first + 3, "over max_tensor_bytes"}}},
		{"long keys", []string{
			`{"op": "call", "fn": "mm", "args": ["m", "n", "m", "n", "m", "n"], "out": ["y"]}`,
			`{"op": "call", "fn": "mm", "args": ["m", "p", "m", "n", "m", "n"], "out": ["y"]}`,
			`{"op": "call", "fn": "mm", "args": ["m", "n", "m", "n", "m", "n"], "out": ["y"]}`,
			`{"op": "call", "fn": "mm", "args": ["m", "p", "m", "n", "m", "n"], "out": ["y"]}`,
		}, []problem{{first + 1, "inner sizes 2 and 3 differ"}, {first + 3, "inner sizes 2 and 3 differ"}}},
		{"defs", []string{
			`{"op": "call", "fn": "add", "args": ["b"], "out": ["y"]}`,
			`{"op": "call", "fn": "v4", "args": ["b"], "out": ["y"]}`,
			`{"op": "call", "fn": "add", "args": ["b"], "out": ["y"]}`,
		}, []problem{{first + 1, "view"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps := Check(strings.NewReader(head+strings.Join(tt.lines, "\n")+"\n"), "t")
			ok := len(ps) == len(tt.want)
			for i := 0; ok && i < len(ps); i++ {
				ok = ps[i].Line == tt.want[i].line && strings.Contains(ps[i].Msg, tt.want[i].msg)
			}
			if !ok {
				t.Errorf("problems:\n%s\nwant %v", Problems(ps).Error(), tt.want)
			}
		})
	}
}

// TestFnInfoSize checks that a def's entry is one cache line, and that the
// memo key of a call of one tensor of 256 float32s (the scale trace's)
// fits in it.
func TestFnInfoSize(t *testing.T) {
	if n := unsafe.Sizeof(fnInfo{}); n != 64 {
		t.Errorf("fnInfo is %d bytes, want 64", n)
	}
	c := newChecker("t", Header{Config: DefaultConfig()})
	c.def(&Record{Line: 2, Op: OpDef, Fn: "f", Params: []string{"x"}, Returns: []string{"x"}})
	x := &binding{layout: layout{shape: []int{256}, dtype: ops.Float32, stElems: 256}}
	c.runBody(0, []*binding{x})
	if got := len(c.key) - 4; got != 13 {
		t.Errorf("the key past the def's index is %d bytes, want 13", got)
	}
	if c.defs[0].lastLen != 13 || c.defs[0].last == nil {
		t.Errorf("the def's entry holds %d bytes of key, result %v; want 13 and the result", c.defs[0].lastLen, c.defs[0].last)
	}
}
