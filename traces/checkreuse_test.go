package traces

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/cgtviz/cgtviz/traces/ops"
)

// checkReuse checks what the checker's reuse of bindings and storages
// relies on, after a record: no binding or storage is free twice, none a
// name holds is free, every storage's refs count the names holding it, and
// the live bytes are those storages' bytes.
func checkReuse(t *testing.T, c *checker, where string) {
	t.Helper()
	freeB := map[*binding]bool{}
	for _, b := range c.freeBindings {
		if freeB[b] {
			t.Fatalf("%s: a binding is free twice", where)
		}
		freeB[b] = true
	}
	freeS := map[*storage]bool{}
	for _, s := range c.freeStorages {
		if freeS[s] {
			t.Fatalf("%s: a storage is free twice", where)
		}
		freeS[s] = true
	}
	refs := map[*storage]int{}
	for n, b := range c.names {
		if freeB[b] {
			t.Fatalf("%s: %s's binding is free", where, n)
		}
		if b.st != nil {
			if freeS[b.st] {
				t.Fatalf("%s: %s's storage is free", where, n)
			}
			refs[b.st]++
		}
	}
	var live int64
	for s, n := range refs {
		if s.refs != n {
			t.Fatalf("%s: a storage held by %d names counts %d", where, n, s.refs)
		}
		live += s.bytes
	}
	if live != c.live {
		t.Fatalf("%s: live bytes %d, the names hold %d", where, c.live, live)
	}
}

// TestCheckerReuse runs the checker over traces whose calls return new
// storages, views of their inputs and one name twice (a storage named again
// by a result, then dropped again, in one record), and checks its reuse
// after every record.
func TestCheckerReuse(t *testing.T) {
	view := Stmt{Out: "v", K: ops.StmtView, A: "x", Shape: []int{4}}
	b := NewBuilder("reuse").
		Def("f", []string{"x"}, []string{"n", "v", "n"}, S("n", "add", "x", 1.0), view).
		Def("g", []string{"x"}, []string{"v", "x"}, view).
		Tensor("x", []int{4}, InitZeros)
	for i := 0; i < 20; i++ {
		b.Call("f", []string{"x"}, "x", "y", "y").
			Call("g", []string{"y"}, "z", "x").
			Call("f", []string{"z"}, "_", "z", "x").
			Del("y").
			Tensor("w", []int{4}, InitOnes).
			Call("g", []string{"w"}, "w", "w")
	}
	tr := b.Trace()
	c := newChecker("reuse", tr.Header)
	for i := range tr.Records {
		c.record(&tr.Records[i])
		if len(c.probs) > 0 {
			t.Fatalf("record %d: %v", i, c.probs)
		}
		checkReuse(t, c, fmt.Sprintf("record %d (%s)", i, tr.Records[i].Op))
	}
	// The storages that died are reused (the test exercises reuse).
	if len(c.freeStorages) == 0 && len(c.freeBindings) == 0 {
		t.Fatal("nothing was freed")
	}
}

// TestCheckerReuseExamples checks the reuse after every record of every
// example trace.
func TestCheckerReuseExamples(t *testing.T) {
	files, err := filepath.Glob("../examples/*.cgt.jsonl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	recorded, _ := filepath.Glob("../examples/recorded/*.cgt.jsonl")
	for _, f := range append(files, recorded...) {
		tr, err := ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		c := newChecker(f, tr.Header)
		for i := range tr.Records {
			c.record(&tr.Records[i])
			checkReuse(t, c, fmt.Sprintf("%s:%d", f, tr.Records[i].Line))
		}
	}
}
