package engine

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cgtviz/cgtviz/engine/device/sim"
	"github.com/cgtviz/cgtviz/traces"
	"github.com/cgtviz/cgtviz/traces/ops"
)

// dispatchChecker makes e check every FunctionID a dispatch entry gives
// against the full lookup (Dynamo's cache and the function tables), and
// counts them in hits.
func dispatchChecker(t *testing.T, e *Engine, name string, hits *int) {
	t.Helper()
	e.checkDispatch = func(m *manager, def *defn, fid int, shapes [][]int, dtypes []ops.DType, static []bool, alias []int) {
		*hits++
		f, limited, err := m.lookupFunction(&def.Record, 0, shapes, dtypes, static, alias)
		switch {
		case err != nil:
			t.Errorf("%s: %s %v: the dispatch entry gave FunctionID %d, the lookup failed: %v", name, def.Fn, shapes, fid, err)
		case limited:
			t.Errorf("%s: %s %v: the dispatch entry gave FunctionID %d, the lookup is at the recompile limit", name, def.Fn, shapes, fid)
		case f.ID != fid:
			t.Errorf("%s: %s %v: the dispatch entry gave FunctionID %d, the lookup %d", name, def.Fn, shapes, fid, f.ID)
		}
	}
}

// peerTraces reads the traces of PyTorch's own suite (peer_test.go).
func peerTraces(t *testing.T) []*traces.Trace {
	t.Helper()
	files, err := filepath.Glob("testdata/peer/*.cgt.jsonl.gz")
	if err != nil || len(files) < 200 {
		t.Fatalf("want the traces of the peer suite in testdata/peer, got %d (%v)", len(files), err)
	}
	var trs []*traces.Trace
	for _, f := range files {
		tr, err := traces.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		trs = append(trs, tr)
	}
	return trs
}

// TestDispatchAgreesWithLookup runs the examples, the scenarios, PyTorch's
// suite and random traces (shape changes, recompiles, the recompile
// limit, several devices, failing records), each also with every def one
// code object (Options.SharedCode), and checks every call that a def's
// dispatch entry answered against the full lookup: the entry must give
// what Dynamo's cache and the function tables give.
func TestDispatchAgreesWithLookup(t *testing.T) {
	trs := append(testTraces(t, 30, "../examples/*.cgt.jsonl", "testdata/*.cgt.jsonl"), peerTraces(t)...)
	hits, calls := 0, 0
	for _, shared := range []bool{false, true} {
		for _, tr := range trs {
			e, err := New(tr.Header, Options{Devices: sim.Devices(max(1, tr.Header.Devices)), File: tr.File, SharedCode: shared})
			if err != nil {
				t.Fatal(err)
			}
			dispatchChecker(t, e, filepath.Base(tr.File), &hits)
			for i := range tr.Records {
				if tr.Records[i].Op == traces.OpCall {
					calls++
				}
				e.Apply(&tr.Records[i])
			}
			// The call path's cache of the defs gives what the map
			// holds, and nothing for a name it does not.
			for name, d := range e.defs {
				if got := e.def(name); got != refOf(d) {
					t.Errorf("%s: def %q from the cache is %+v, the map holds %+v", tr.File, name, got, refOf(d))
				}
			}
			if got := e.def("no such function"); got.d != nil {
				t.Errorf("%s: the cache gives a def for an undefined name", tr.File)
			}
		}
	}
	// About half the calls repeat the one before them of their def (the
	// rest are first calls, new shapes, calls after a compile): an entry
	// that never answers would prove nothing.
	if hits < calls/3 {
		t.Fatalf("dispatch entries answered %d of %d calls", hits, calls)
	}
	t.Logf("%d traces twice, %d of %d calls answered by a dispatch entry", len(trs), hits, calls)
}

// TestDispatchAfterCompile: a compile makes every dispatch entry of the
// device stale, since the graph it adds may be the one the cache's guards
// pick for a signature seen before. Under SharedCode two defs with one
// body are one code object and one guard: g's call at a new size compiles
// a graph with a dynamic dim, which f's next call at the old size runs
// through (Dynamo looks the newest graph up first), as a new FunctionID,
// where f's entry still names the FunctionID of the first graph.
func TestDispatchAfterCompile(t *testing.T) {
	body := traces.S("y", "add", "x", 1.0)
	b := traces.NewBuilder("dispatch after compile").
		Def("f", []string{"x"}, []string{"y"}, body).
		Def("g", []string{"x"}, []string{"y"}, body).
		TensorSeed("a", []int{4}, 1).
		TensorSeed("b", []int{5}, 2)
	b.Step().Call("f", []string{"a"}, "y")
	b.Step().Call("f", []string{"a"}, "y")
	b.Step().Call("g", []string{"b"}, "y")
	b.Step().Call("f", []string{"a"}, "y")
	tr := b.Trace()
	e, err := New(tr.Header, Options{Devices: sim.Devices(1), SharedCode: true})
	if err != nil {
		t.Fatal(err)
	}
	hits := 0
	dispatchChecker(t, e, t.Name(), &hits)
	var fnIDs []int
	for i := range tr.Records {
		s := e.Apply(&tr.Records[i])
		if s.Err != nil {
			t.Fatalf("line %d: %v", tr.Records[i].Line, s.Err)
		}
		if tr.Records[i].Op != traces.OpCall {
			continue
		}
		id := -1
		for _, ev := range s.Events {
			if ev.FnID >= 0 && ev.Fn != "" {
				id = ev.FnID
			}
		}
		fnIDs = append(fnIDs, id)
	}
	if want := []int{0, 0, 1, 2}; !slices.Equal(fnIDs, want) {
		t.Fatalf("FunctionIDs of the calls %v, want %v", fnIDs, want)
	}
	if hits != 1 {
		t.Fatalf("%d calls answered by a dispatch entry, want 1 (the second)", hits)
	}
}

// TestDefCache fills the call path's cache of the defs (defcache.go)
// with 3,000 defs, growing it as they come, and checks every name through
// it: the map's own string and a copy at another address (a hit must
// compare by address, a miss fall back to the map, and both give the
// def's numbers as the map's def has them), a name sharing its bytes with
// a longer one, and names no def has; then again after every third def
// leaves the map and the cache (a def's undo), and after the cache's
// generations wrap.
func TestDefCache(t *testing.T) {
	e := &Engine{defs: map[string]*defn{}}
	name := func(i int) string { return fmt.Sprintf("f%d", i) }
	names := make([]string, 3000) // one string a name: its address is the line's
	check := func(when string, i int, want *defn) {
		t.Helper()
		for _, n := range []string{names[i], strings.Clone(names[i])} {
			got := e.def(n)
			if want == nil {
				if got.d != nil {
					t.Fatalf("%s: def(%q) = %+v, want none", when, n, got)
				}
				continue
			}
			if got != refOf(want) {
				t.Fatalf("%s: def(%q) = %+v, want %+v", when, n, got, refOf(want))
			}
		}
	}
	for i := range names {
		names[i] = name(i)
		e.defs[names[i]] = &defn{Record: traces.Record{Fn: names[i]}, idx: i, nParams: i % 3, nReturns: i % 5, static: make([]int, i%2)[: i%2 : i%2]}
		if i%2 == 0 {
			e.defs[names[i]].static = nil
		}
		for _, j := range []int{0, i / 2, i} {
			check(fmt.Sprintf("after %d defs", i+1), j, e.defs[names[j]])
		}
	}
	// "f1" shares its bytes' address with "f10" (a prefix): told apart by
	// the length.
	if got := e.def(names[10][:2]); got.d != e.defs["f1"] {
		t.Fatalf("def of f10's prefix = %+v, want f1's", got)
	}
	if got := e.def(""); got.d != nil {
		t.Fatalf("def(\"\") = %+v", got)
	}
	for i := 0; i < len(names); i += 3 {
		delete(e.defs, names[i])
		e.defCache.forget()
	}
	for i := range names {
		check("after the undo of every third def", i, map[bool]*defn{false: e.defs[names[i]]}[i%3 == 0])
	}
	if n := len(e.defCache.slots); n < 2*len(e.defs) || n&(n-1) != 0 {
		t.Fatalf("%d slots for %d defs, want a power of two of at least twice", n, len(e.defs))
	}
	// The generations wrap: no slot filled before may answer after.
	for i := 0; i < 1<<16; i++ {
		e.defCache.forget()
	}
	delete(e.defs, names[1])
	check("after the generations wrapped", 1, nil)
	check("after the generations wrapped", 2, e.defs[names[2]])
}
