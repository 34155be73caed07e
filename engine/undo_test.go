package engine

import (
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/cgtviz/cgtviz/engine/device/sim"
	"github.com/cgtviz/cgtviz/traces"
	"github.com/cgtviz/cgtviz/traces/gen"
)

// managerDump is everything a manager holds that a record may change, as
// values: what a complete rollback must give back.
type managerDump struct {
	Scalars                 pathScalars
	Nodes                   []Node
	Roots                   map[int][]int
	RootOrder               []int
	Warmups                 map[int]WarmupNode
	Funcs                   []Function
	FnBySig                 map[uint64][]int
	Sizes                   map[graphKey]int
	Compiles                map[string]any
	WarnedFns, WarnedMut    map[int]bool
	MutationHint            map[int]map[int]bool
	NumRerecord             map[int]map[int]int
	CheckpointsPerNode      []int
	CachedPerNode, OutWeaks [][]int
	// Dispatch are the defs' dispatch entries (function.go).
	Dispatch []dispatchEntry
}

func dumpManager(m *manager) managerDump {
	d := managerDump{Scalars: m.pathScalars, Roots: rootsMap(m), RootOrder: m.rootOrder, FnBySig: m.fnBySig, Sizes: m.sizes,
		WarnedFns: m.warnedFns, WarnedMut: m.warnedMutation, MutationHint: mutationHints(m), NumRerecord: m.numRerecord,
		Dispatch: m.dispatch, Warmups: map[int]WarmupNode{}, Compiles: map[string]any{}}
	d.Scalars.warmups = nil // compared by value below
	for _, n := range m.nodes {
		c := n.clone()
		c.kernels = nil // a cache of what the State shows, made on demand
		c.view = nil    // so is this
		d.Nodes = append(d.Nodes, *c)
	}
	for k, w := range m.warmups {
		d.Warmups[k] = *w
	}
	for _, f := range m.funcs {
		c := *f
		c.view = nil // a cache of what the State shows
		d.Funcs = append(d.Funcs, c)
	}
	for k, c := range m.compiles {
		d.Compiles[k] = *c.Clone()
	}
	// Deep copies of the maps, so that later changes do not show through.
	return cloneDump(d)
}

// rootsMap is m's roots as PyTorch's dict of them: FunctionID to its root
// nodes, for those that have any.
func rootsMap(m *manager) map[int][]int {
	out := map[int][]int{}
	for fid, r := range m.roots {
		if len(r) > 0 {
			out[fid] = slices.Clone(r)
		}
	}
	return out
}

// mutationHints is m's mutation hints as PyTorch's dict of dicts:
// non_cudagraph_managed_mutation_hint[node][fid], for the hints known.
func mutationHints(m *manager) map[int]map[int]bool {
	out := map[int]map[int]bool{}
	for fid, h := range m.rootHints {
		if h != hintUnknown {
			if out[noNode] == nil {
				out[noNode] = map[int]bool{}
			}
			out[noNode][fid] = h == hintTrue
		}
	}
	for nid, hs := range m.nodeHints {
		if len(hs) > 0 {
			out[nid] = maps.Clone(hs)
		}
	}
	for nid, hs := range m.warmupHints {
		if len(hs) > 0 {
			out[nid] = maps.Clone(hs)
		}
	}
	return out
}

func cloneDump(d managerDump) managerDump {
	var out managerDump
	b := reflect.ValueOf(&out).Elem()
	a := reflect.ValueOf(d)
	for i := 0; i < a.NumField(); i++ {
		b.Field(i).Set(deepCopy(a.Field(i)))
	}
	return out
}

func deepCopy(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Map:
		// nil and empty hold the same: both read as no entry.
		m := reflect.MakeMapWithSize(v.Type(), v.Len())
		for _, k := range v.MapKeys() {
			m.SetMapIndex(k, deepCopy(v.MapIndex(k)))
		}
		return m
	case reflect.Slice:
		if v.IsNil() {
			return reflect.Zero(v.Type())
		}
		s := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		reflect.Copy(s, v)
		return s
	}
	return v
}

// testTraces reads the trace files the globs match, then adds the random
// traces of seeds 1 to seeds.
func testTraces(t *testing.T, seeds int64, globs ...string) []*traces.Trace {
	t.Helper()
	var trs []*traces.Trace
	for _, g := range globs {
		files, err := filepath.Glob(g)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			tr, err := traces.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			trs = append(trs, tr)
		}
	}
	for seed := int64(1); seed <= seeds; seed++ {
		trs = append(trs, gen.Trace(seed, gen.Options{}))
	}
	return trs
}

// TestRollbackIsComplete fails every record of the example traces and of
// random ones right after it succeeded, and checks that the rollback gives
// back each manager exactly (its tree, functions, Dynamo caches, hints and
// counters) and the same State, before the record is applied for real.
func TestRollbackIsComplete(t *testing.T) {
	trs := testTraces(t, 30, "../examples/*.cgt.jsonl")
	records := 0
	for _, tr := range trs {
		e, err := New(tr.Header, Options{Devices: sim.Devices(tr.Header.Devices), Check: true, File: tr.File})
		if err != nil {
			t.Fatal(err)
		}
		hits := 0
		dispatchChecker(t, e, tr.File, &hits)
		for i := range tr.Records {
			rec := &tr.Records[i]
			var before []managerDump
			for _, ds := range e.devs {
				before = append(before, dumpManager(ds.m))
			}
			stBefore := e.State()
			e.failAfter = func(r *traces.Record) bool { return r == rec }
			s := e.Apply(rec)
			e.failAfter = nil
			if s.Err == nil {
				t.Fatalf("%s:%d: the injected failure did not fail the record", tr.File, rec.Line)
			}
			for d, ds := range e.devs {
				if after := dumpManager(ds.m); !reflect.DeepEqual(before[d], after) {
					t.Fatalf("%s:%d (%s): device %d's manager differs after the rollback:\nbefore %+v\nafter  %+v", tr.File, rec.Line, rec.Op, d, before[d], after)
				}
			}
			// A failed record still counts: it is a step, and an error.
			st := e.State()
			stBefore.Step, stBefore.Counters.Errors = st.Step, st.Counters.Errors
			// So do the highlights of the last checkpoint: every record
			// turns them off.
			clearCheckpointMarks(stBefore)
			clearCheckpointMarks(st)
			if !reflect.DeepEqual(stBefore, st) {
				a, b := reflect.ValueOf(*stBefore), reflect.ValueOf(*st)
				for f := 0; f < a.NumField(); f++ {
					if !reflect.DeepEqual(a.Field(f).Interface(), b.Field(f).Interface()) {
						t.Errorf("State.%s:\nbefore %+v\nafter  %+v", a.Type().Field(f).Name, a.Field(f).Interface(), b.Field(f).Interface())
					}
				}
				t.Fatalf("%s:%d (%s): the state differs after the rollback", tr.File, rec.Line, rec.Op)
			}
			e.Apply(rec)
			records++
		}
	}
	t.Logf("%d traces, %d records failed and rolled back", len(trs), records)
}

// clearCheckpointMarks turns off, in st (a deep copy), the block marks of
// the last record's checkpoint.
func clearCheckpointMarks(st *State) {
	for i := range st.Devices {
		for _, p := range []*PoolView{&st.Devices[i].Pool, &st.Devices[i].Default} {
			for j := range p.Segments {
				for k := range p.Segments[j].Blocks {
					b := &p.Segments[j].Blocks[k]
					b.InCheckpoint, b.CheckpointNew = false, false
				}
			}
		}
	}
}
