package engine

import (
	"fmt"
	"slices"
	"testing"

	"github.com/cgtviz/cgtviz/traces"
)

// TestText holds text's strings to what concatenation with strconv makes,
// for the numbers a node's names carry (negative warmup ids, ids past the
// small ones strconv keeps, a buffer too short for the result).
func TestText(t *testing.T) {
	long := string(make([]byte, 200))
	for _, c := range []struct {
		name string
		got  func(buf []byte) string
		want string
	}{
		{"record", func(b []byte) string { return text{b}.s("call ").s("f12").s(": record #").i(4071).String() }, "call f12: record #4071"},
		{"warmup", func(b []byte) string { return text{b}.s("call ").s("f").s(": warmup ").i(-10000).String() }, "call f: warmup -10000"},
		{"two numbers", func(b []byte) string {
			return text{b}.s("f").s(" input ").i(0).s(" (placeholder of #").i(99).s(")").String()
		}, "f input 0 (placeholder of #99)"},
		{"past the buffer", func(b []byte) string { return text{b}.s(long).i(7).String() }, long + "7"},
		{"empty", func(b []byte) string { return text{b}.String() }, ""},
	} {
		var buf [16]byte
		if got := c.got(buf[:0]); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
		if got := c.got(nil); got != c.want {
			t.Errorf("%s, no buffer: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestNameOfStorageIsLeast holds nameOfStorage, which finds its name
// without the list, to the first of namesOfStorage's sorted names, with
// names bound to several views of one storage and to other storages.
func TestNameOfStorageIsLeast(t *testing.T) {
	bl := traces.NewBuilder("names")
	bl.Def("f", []string{"x"}, []string{"y"}, traces.S("y", "add", "x", 1))
	bl.TensorSeed("m", []int{4}, 1).TensorSeed("b", []int{4}, 2).TensorSeed("z", []int{4}, 3)
	bl.Call("f", []string{"b"}, "q").Call("f", []string{"m"}, "a")
	tr := bl.Trace()
	e := ranEngine(t, tr)
	// More names on m's tensor and on z's: the least of a storage's
	// names is in neither the first nor the last place bound.
	for _, alias := range []struct{ name, of string }{{"k", "m"}, {"c", "m"}, {"y2", "z"}, {"a0", "z"}} {
		src, _, err := e.tt.lookup(alias.of)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.tt.bind(alias.name, src); err != nil {
			t.Fatal(err)
		}
	}
	checked := 0
	for _, id := range e.tt.names {
		sid := e.tt.tensors.get(id).Storage
		names := e.tt.namesOfStorage(sid)
		if !slices.IsSorted(names) || len(names) == 0 {
			t.Fatalf("storage %d: names %v", sid, names)
		}
		if got := e.tt.nameOfStorage(sid); got != names[0] {
			t.Errorf("storage %d: nameOfStorage %q, want %q (of %v)", sid, got, names[0], names)
		}
		checked++
	}
	if got := e.tt.nameOfStorage(1 << 30); got != "" {
		t.Errorf("a storage no name views: %q", got)
	}
	if checked < 5 {
		t.Fatalf("only %d names checked", checked)
	}
}

// TestTensorRecordShapeCopied: a tensor keeps the shape it is given
// (newTensor does not copy), so a tensor record's, whose slice a reader
// may reuse for a later line, must be copied before: writing the record's
// shape after it is applied leaves the tensor's as it was.
func TestTensorRecordShapeCopied(t *testing.T) {
	bl := traces.NewBuilder("shape")
	bl.TensorSeed("x", []int{2, 3}, 1)
	tr := bl.Trace()
	e := ranEngine(t, tr)
	for i := range tr.Records {
		for j := range tr.Records[i].Shape {
			tr.Records[i].Shape[j] = 99
		}
	}
	x, _, err := e.tt.lookup("x")
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(x.Shape); got != "[2 3]" {
		t.Errorf("x's shape %s after its record's was written, want [2 3]", got)
	}
}
