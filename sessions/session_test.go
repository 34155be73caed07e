package sessions

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/traces"
)

var seeds = []string{
	"../examples/seed-a-checkpoint.cgt.jsonl",
	"../examples/seed-b-all-dead-root.cgt.jsonl",
	"../examples/seed-c-live-child.cgt.jsonl",
}

func open(t testing.TB, path string, opts Options) *Session {
	t.Helper()
	tr, err := OpenTrace(path)
	if err != nil {
		t.Fatal(err)
	}
	if opts.Source == "" {
		opts.Source = path
	}
	s, err := New(tr, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// opaque hides the sim device's Snapshotter, as the GPU device has none,
// so that the session must re-run from the start to go back.
type opaque struct{ device.Device }

func opaqueDevices(calls *int) func(int) ([]device.Device, error) {
	return func(n int) ([]device.Device, error) {
		*calls++
		devs, err := SimDevices(n)
		for i := range devs {
			devs[i] = opaque{devs[i]}
		}
		return devs, err
	}
}

// TestForwardBackSameState steps every seed trace forward, keeping each
// State, then reaches every position again by Back, by Goto in a random
// order and by StepAt, and requires the very same States and Steps.
func TestForwardBackSameState(t *testing.T) {
	var calls int
	modes := []struct {
		name string
		opts Options
	}{
		{"keyframes every 16", Options{}},
		{"keyframes every 1 max 2", Options{KeyframeEvery: 1, MaxKeyframes: 2}},
		{"keyframes every 3", Options{KeyframeEvery: 3}},
		{"no clone (gpu)", Options{NewDevices: opaqueDevices(&calls)}},
	}
	for _, path := range seeds {
		for _, mode := range modes {
			t.Run(filepath.Base(path)+"/"+mode.name, func(t *testing.T) {
				s := open(t, path, mode.opts)
				want := []*engine.State{canonical(s.State())}
				var steps []*engine.Step
				for {
					st, ok := s.Step()
					if !ok {
						break
					}
					steps = append(steps, st)
					want = append(want, canonical(s.State()))
				}
				if s.Pos() != s.Len() || len(want) != s.Len()+1 {
					t.Fatalf("stepped to %d of %d", s.Pos(), s.Len())
				}
				for p := s.Len(); p > 0; p-- {
					if err := s.Back(); err != nil {
						t.Fatalf("back from %d: %v", p, err)
					}
					if got := canonical(s.State()); !reflect.DeepEqual(got, want[p-1]) {
						t.Fatalf("state at %d reached by Back differs from the one reached forward", p-1)
					}
				}
				if err := s.Back(); !errors.Is(err, ErrAtStart) {
					t.Fatalf("back at 0: %v, want ErrAtStart", err)
				}
				r := rand.New(rand.NewPCG(1, 2))
				for range 40 {
					p := r.IntN(s.Len() + 1)
					if err := s.Goto(p); err != nil {
						t.Fatal(err)
					}
					if s.Pos() != p {
						t.Fatalf("Goto(%d) left the position at %d", p, s.Pos())
					}
					if got := canonical(s.State()); !reflect.DeepEqual(got, want[p]) {
						t.Fatalf("state at %d reached by Goto differs from the one reached forward", p)
					}
				}
				for i, st := range steps {
					if got := s.StepAt(i); got == nil || got.Index != st.Index || got.Action != st.Action || got.Node != st.Node || got.Err != st.Err {
						t.Fatalf("StepAt(%d) = %+v, want %+v", i, got, st)
					}
				}
				if mode.opts.NewDevices == nil {
					if !s.Cloneable() {
						t.Fatal("a sim session should clone its engine")
					}
					for i, st := range steps {
						if got := s.StepAt(i); !reflect.DeepEqual(got.Events, st.Events) {
							t.Fatalf("StepAt(%d) events differ from the live run", i)
						}
					}
				} else if s.Cloneable() {
					t.Fatal("a session over devices without snapshots cannot clone")
				}
			})
		}
	}
	if calls < 2 {
		t.Errorf("NewDevices called %d times: going back without clones must re-run on fresh devices", calls)
	}
}

// canonical sorts the tensor names of each block. engine.State lists the
// names of storages that share an address in an unspecified order (it sorts
// them by address only), which is not a difference of state.
func canonical(st *engine.State) *engine.State {
	for d := range st.Devices {
		for _, pv := range []*engine.PoolView{&st.Devices[d].Pool, &st.Devices[d].Default} {
			for i := range pv.Segments {
				for j := range pv.Segments[i].Blocks {
					slices.Sort(pv.Segments[i].Blocks[j].Tensors)
				}
			}
		}
	}
	return st
}

// TestKeyframesBounded checks that keyframes stay within the bound however
// far the trace goes, and that they thin rather than vanish.
func TestKeyframesBounded(t *testing.T) {
	tr := replayTrace(2000)
	s, err := New(tr, Options{MaxKeyframes: 10, KeyframeEvery: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Goto(s.Len()); err != nil {
		t.Fatal(err)
	}
	n, every := s.Keyframes()
	if n > 10 || n < 5 {
		t.Errorf("%d keyframes, want between 5 and 10", n)
	}
	if every*n < s.Len()/2 {
		t.Errorf("keyframes every %d × %d do not cover %d records", every, n, s.Len())
	}
}

// replayTrace is a replay-heavy trace of about n records: one function,
// warmed up, recorded, then replayed once per generation.
func replayTrace(n int) *traces.Trace {
	b := traces.NewBuilder("replay-heavy").
		Def("f", []string{"x"}, []string{"y"}, traces.S("y", "add", "x", 1)).
		Tensor("inp", []int{16}, traces.InitOnes)
	for i := 2; i+2 <= n; i += 2 {
		b.Step().Call("f", []string{"inp"}, "out")
	}
	return b.Trace()
}

// kindsTrace raises the events seed traces lack: a stale read (error), a
// failed expectation, re-records of a static input and, past the re-record
// limit, an eager run.
func kindsTrace() *traces.Trace {
	replay := "replay"
	return traces.NewBuilder("kinds").Config(func(c *traces.Config) { c.RerecordLimit = 1 }).
		Def("f", []string{"x", "w"}, []string{"y"}, traces.S("y", "mul", "x", "w")).
		Param("w1", []int{4}, traces.InitOnes).
		Param("w2", []int{4}, traces.InitOnes).
		Param("w3", []int{4}, traces.InitOnes).
		Step().Tensor("inp", []int{4}, traces.InitOnes).Call("f", []string{"inp", "w1"}, "o1").
		Step().Call("f", []string{"inp", "w1"}, "o2").
		Step().Call("f", []string{"inp", "w1"}, "o3").
		Read("o2").
		Expect(traces.Expect{Action: &replay}).
		Step().Call("f", []string{"inp", "w2"}, "o4").
		Step().Call("f", []string{"inp", "w3"}, "o5").
		Step().Call("f", []string{"inp", "w3"}, "o6").
		Trace()
}

func TestBreakpointKinds(t *testing.T) {
	seedA := seeds[0]
	kinds := kindsTrace()
	if ps := kinds.Check(); len(ps) > 0 {
		t.Fatalf("kinds trace does not check: %v", ps)
	}
	tests := []struct {
		name string
		tr   *traces.Trace // nil: seed A
		bp   Breakpoint
		// check validates the record the breakpoint stopped on.
		check func(t *testing.T, s *Session, i int)
	}{
		{"line", nil, Breakpoint{Line: 32}, func(t *testing.T, s *Session, i int) {
			if recAt(t, s, i).Line != 32 {
				t.Errorf("stopped at line %d", recAt(t, s, i).Line)
			}
		}},
		{"fn", nil, Breakpoint{Fn: "fee"}, func(t *testing.T, s *Session, i int) {
			if r := recAt(t, s, i); r.Op != traces.OpCall || r.Fn != "fee" {
				t.Errorf("stopped at %s %s", r.Op, r.Fn)
			}
		}},
		{"record", nil, Breakpoint{Kind: engine.EvRecord}, actionIs(engine.ActionRecord, -1)},
		{"replay any", nil, Breakpoint{Kind: engine.EvReplay, Node: AnyNode}, actionIs(engine.ActionReplay, -1)},
		{"replay of #2", nil, Breakpoint{Kind: engine.EvReplay, Node: 2}, actionIs(engine.ActionReplay, 2)},
		{"checkpoint", nil, Breakpoint{Kind: engine.EvCheckpoint}, func(t *testing.T, s *Session, i int) {
			if sum, _ := s.Summary(i); !sum.Checkpoint || recAt(t, s, i).Line != 32 {
				t.Errorf("stopped at line %d, checkpoint %v", recAt(t, s, i).Line, sum.Checkpoint)
			}
		}},
		{"dealloc", nil, Breakpoint{Kind: engine.EvDealloc}, hasKind(engine.EvDealloc)},
		{"fn and kind", nil, Breakpoint{Fn: "fee", Kind: engine.EvRecord}, func(t *testing.T, s *Session, i int) {
			if r := recAt(t, s, i); r.Fn != "fee" || (r.Line != 18 && r.Line != 32) {
				t.Errorf("stopped at line %d %s", r.Line, r.Fn)
			}
		}},
		{"error", kinds, Breakpoint{Kind: engine.EvError}, func(t *testing.T, s *Session, i int) {
			if sum, _ := s.Summary(i); sum.Err == "" {
				t.Error("stopped on a record without error")
			}
		}},
		{"expect failed", kinds, Breakpoint{Kind: engine.EvExpectFailed}, func(t *testing.T, s *Session, i int) {
			if sum, _ := s.Summary(i); len(sum.ExpectFailures) == 0 {
				t.Error("stopped on a record without failed expectation")
			}
		}},
		{"rerecord", kinds, Breakpoint{Kind: KindRerecord}, func(t *testing.T, s *Session, i int) {
			if sum, _ := s.Summary(i); !sum.Rerecord || sum.Action != engine.ActionRecord {
				t.Errorf("stopped on %+v", sum)
			}
		}},
		{"eager", kinds, Breakpoint{Kind: engine.EvEager}, actionIs(engine.ActionEager, -1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s *Session
			if tc.tr == nil {
				s = open(t, seedA, Options{})
			} else {
				var err error
				if s, err = New(tc.tr, Options{}); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.AddBreakpoint(tc.bp); err != nil {
				t.Fatal(err)
			}
			h, err := s.Continue()
			if err != nil {
				t.Fatal(err)
			}
			if !h.Found {
				t.Fatalf("continue ran to %d/%d without hitting %s", s.Pos(), s.Len(), tc.bp)
			}
			if s.Pos() != h.Index+1 {
				t.Fatalf("position %d after a hit on record %d", s.Pos(), h.Index)
			}
			tc.check(t, s, h.Index)
			first := h.Index
			// Continue on to the end, then come back to the first hit with
			// ReverseContinue: it searches the history without running.
			for h.Found {
				if h, err = s.Continue(); err != nil {
					t.Fatal(err)
				}
				if h.Found {
					tc.check(t, s, h.Index)
				}
			}
			if s.Pos() != s.Len() {
				t.Fatalf("continue stopped at %d/%d with no hit", s.Pos(), s.Len())
			}
			var last Hit
			for {
				h, err := s.ReverseContinue()
				if err != nil {
					t.Fatal(err)
				}
				if !h.Found {
					break
				}
				tc.check(t, s, h.Index)
				last = h
			}
			if s.Pos() != 0 {
				t.Errorf("reverse-continue ended at %d, want 0", s.Pos())
			}
			if last.Found && last.Index != first && s.Len() > 0 {
				// The earliest hit is found in reverse unless it is record 0's
				// neighbour (ReverseContinue skips the record just run).
				if last.Index > first {
					t.Errorf("reverse-continue's earliest hit %d is after the first forward hit %d", last.Index, first)
				}
			}
		})
	}
}

func actionIs(a engine.Action, node int) func(*testing.T, *Session, int) {
	return func(t *testing.T, s *Session, i int) {
		t.Helper()
		sum, ok := s.Summary(i)
		if !ok || sum.Action != a || (node >= 0 && sum.Node != node) {
			t.Errorf("stopped on record %d: %+v, want %s of node %d", i, sum, a, node)
		}
	}
}

func hasKind(k engine.EventKind) func(*testing.T, *Session, int) {
	return func(t *testing.T, s *Session, i int) {
		t.Helper()
		if sum, _ := s.Summary(i); !sum.Kinds.Has(k) {
			t.Errorf("stopped on record %d without %s: %v", i, k, sum.Kinds.Kinds())
		}
	}
}

func TestBreakpointEdit(t *testing.T) {
	s := open(t, seeds[0], Options{})
	bad := []Breakpoint{{}, {Line: -1, Fn: "x"}, {Kind: 99}}
	for _, b := range bad {
		if err := s.AddBreakpoint(b); err == nil {
			t.Errorf("AddBreakpoint(%+v) accepted", b)
		}
	}
	a := Breakpoint{Kind: engine.EvCheckpoint, Node: 7} // Node is ignored for checkpoints
	for range 2 {
		if err := s.AddBreakpoint(a); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.Breakpoints(); len(got) != 1 || got[0].Node != AnyNode {
		t.Fatalf("breakpoints %+v, want one checkpoint breakpoint on any node", got)
	}
	if !s.HasBreakpoint(Breakpoint{Kind: engine.EvCheckpoint}) {
		t.Error("HasBreakpoint does not find it by its normal form")
	}
	if !s.RemoveBreakpoint(a) || s.RemoveBreakpoint(a) || len(s.Breakpoints()) != 0 {
		t.Error("remove: want true once, then false, and no breakpoint left")
	}
	if err := s.Goto(s.Len() + 1); err == nil {
		t.Error("Goto past the end accepted")
	}
	if err := s.Goto(-1); err == nil {
		t.Error("Goto(-1) accepted")
	}
	if err := s.Bookmark(" "); err == nil {
		t.Error("empty bookmark name accepted")
	}
	if err := s.GotoBookmark("nope"); err == nil {
		t.Error("GotoBookmark of an unknown name accepted")
	}
}

func TestSaveLoad(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile(seeds[0])
	if err != nil {
		t.Fatal(err)
	}
	tracePath := filepath.Join(dir, "a.cgt.jsonl")
	if err := os.WriteFile(tracePath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{tracePath, DemoSource} {
		t.Run(filepath.Base(src), func(t *testing.T) {
			s := open(t, src, Options{Source: src})
			for _, b := range []Breakpoint{{Line: 18}, {Fn: "fee", Kind: engine.EvRecord}, {Kind: engine.EvReplay, Node: 1}, {Kind: KindRerecord}} {
				if err := s.AddBreakpoint(b); err != nil {
					t.Fatal(err)
				}
			}
			must(t, s.Goto(14))
			must(t, s.Bookmark("first record"))
			must(t, s.Goto(31))
			must(t, s.Bookmark("checkpoint"))
			must(t, s.Goto(20))
			path := filepath.Join(dir, "s.json")
			must(t, s.Save(path))
			l, err := Load(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if l.Pos() != 20 || l.Source() != s.Source() {
				t.Errorf("loaded at %d from %q, want 20 from %q", l.Pos(), l.Source(), s.Source())
			}
			if !slices.Equal(l.Breakpoints(), s.Breakpoints()) {
				t.Errorf("breakpoints %v, want %v", l.Breakpoints(), s.Breakpoints())
			}
			if !slices.Equal(l.Bookmarks(), s.Bookmarks()) {
				t.Errorf("bookmarks %v, want %v", l.Bookmarks(), s.Bookmarks())
			}
			if !reflect.DeepEqual(canonical(l.State()), canonical(s.State())) {
				t.Error("loaded session's state differs")
			}
			must(t, l.GotoBookmark("checkpoint"))
			if l.Pos() != 31 {
				t.Errorf("bookmark at %d, want 31", l.Pos())
			}
		})
	}
	// Unsaveable and unloadable sessions.
	tr, err := OpenTrace(DemoSource)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(tr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Save(filepath.Join(dir, "x.json")); err == nil {
		t.Error("saving a session without a source succeeded")
	}
	bad := map[string]string{
		"notjson.json":  "{",
		"version.json":  `{"cgtviz_session": 9, "trace": "demo"}`,
		"notrace.json":  `{"cgtviz_session": 1}`,
		"missing.json":  `{"cgtviz_session": 1, "trace": "/nonexistent.cgt.jsonl"}`,
		"pos.json":      `{"cgtviz_session": 1, "trace": "demo", "position": 9999}`,
		"kind.json":     `{"cgtviz_session": 1, "trace": "demo", "breakpoints": [{"kind": "nope"}]}`,
		"emptybp.json":  `{"cgtviz_session": 1, "trace": "demo", "breakpoints": [{}]}`,
		"bookmark.json": `{"cgtviz_session": 1, "trace": "demo", "bookmarks": [{"name": "x", "position": -3}]}`,
	}
	for name, content := range bad {
		p := filepath.Join(dir, name)
		must(t, os.WriteFile(p, []byte(content), 0o644))
		if _, err := Load(p, Options{}); err == nil {
			t.Errorf("Load(%s) succeeded", name)
		}
	}
	if _, err := Load(filepath.Join(dir, "absent.json"), Options{}); err == nil {
		t.Error("Load of a missing file succeeded")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// recAt is record i of the session's trace.
func recAt(t *testing.T, s *Session, i int) traces.Record {
	t.Helper()
	r, err := s.Records().Record(i)
	if err != nil {
		t.Fatal(err)
	}
	return *r
}

// TestSummariesAsSummary holds the bulk reader to Summary(i), record by
// record, over traces with errors, failed expectations, re-records and
// checkpoints, from several starting points (a range may start anywhere).
func TestSummariesAsSummary(t *testing.T) {
	for _, tc := range []struct {
		name string
		tr   *traces.Trace
	}{{"kinds", kindsTrace()}, {"replay", replayTrace(40_000)}} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(tc.tr, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Goto(s.Len()); err != nil {
				t.Fatal(err)
			}
			n := s.Executed()
			for _, lo := range []int{-3, 0, 1, n / 2, n - 1, n, n + 5} {
				i := max(lo, 0)
				s.Summaries(lo, n+10, func(got Summary) {
					want, ok := s.Summary(i)
					if !ok || !reflect.DeepEqual(got, want) {
						t.Fatalf("from %d: record %d: got %+v, want %+v", lo, i, got, want)
					}
					i++
				})
				if i != max(n, max(lo, 0)) {
					t.Errorf("from %d: %d summaries, want up to %d", lo, i, n)
				}
			}
			errs := 0
			s.Summaries(0, n, func(sum Summary) {
				if sum.Err != "" || len(sum.ExpectFailures) > 0 {
					errs++
				}
			})
			if tc.name == "kinds" && errs == 0 {
				t.Error("the kinds trace gave no error or failed expectation: the test does not look at them")
			}
		})
	}
}
