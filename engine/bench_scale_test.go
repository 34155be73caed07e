package engine

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/cgtviz/cgtviz/engine/alloc"
	"github.com/cgtviz/cgtviz/engine/device/sim"
	"github.com/cgtviz/cgtviz/traces"
	"github.com/cgtviz/cgtviz/traces/gen"
)

// BenchmarkRunTreeSize is the engine's records/s over a whole run whose tree
// grows to 10 ... 10,000 nodes, then replays 200,000 calls round robin:
// the cost of a record should not grow with the tree. It reports the
// phases apart as well, as their records differ in kind at every size (a
// warmup or a recording costs several replays): grow-us/node, the time to
// grow the tree a node (a def, a warmup and a recording, with their
// inputs), and replay-records/s, the records after it. The replays are
// many a node at every size (20 at 10,000 nodes), so that the first
// replay of each node, which builds its cached outputs, does not stand
// for the replay phase of a big tree.
func BenchmarkRunTreeSize(b *testing.B) {
	for _, n := range []int{10, 100, 1000, 10000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			tr := gen.DefsTrace(n, 200000)
			// The first grown records grow the tree (n defs, then a
			// warmup and a recording per node); the rest replay.
			grown := n + 6*n
			var grow, replay time.Duration
			// The trace's making leaves garbage whose collection would
			// fall in the first records, which a small tree's growth is.
			runtime.GC()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				e, err := New(tr.Header, Options{Devices: sim.Devices(1)})
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				for j := range tr.Records {
					if j == grown {
						grow += time.Since(start)
						start = time.Now()
					}
					if s := e.Apply(&tr.Records[j]); s.Err != nil {
						b.Fatal(s.Err)
					}
				}
				replay += time.Since(start)
				if got := len(e.devs[0].m.nodes); got < n {
					b.Fatalf("%d nodes, want at least %d", got, n)
				}
			}
			b.ReportMetric(float64(len(tr.Records)*b.N)/b.Elapsed().Seconds(), "records/s")
			b.ReportMetric(float64(grow.Microseconds())/float64(n*b.N), "grow-us/node")
			b.ReportMetric(float64((len(tr.Records)-grown)*b.N)/replay.Seconds(), "replay-records/s")
		})
	}
}

// ranEngine is an engine on a simulated device that has run all of tr.
func ranEngine(tb testing.TB, tr *traces.Trace) *Engine {
	tb.Helper()
	e, err := New(tr.Header, Options{Devices: sim.Devices(1)})
	if err != nil {
		tb.Fatal(err)
	}
	for i := range tr.Records {
		if s := e.Apply(&tr.Records[i]); s.Err != nil {
			tb.Fatal(s.Err)
		}
	}
	return e
}

// BenchmarkState10k is one State of an engine whose tree holds 10,000
// nodes: what the UI reads after every step.
func BenchmarkState10k(b *testing.B) {
	e := ranEngine(b, gen.TreeTrace(10000, 100))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.State()
	}
}

// BenchmarkClone10k is one Clone of an engine whose tree holds 10,000
// nodes, each replayed once (so that each holds a cached output): what a
// session's keyframe costs to take, and to restore.
func BenchmarkClone10k(b *testing.B) {
	e := ranEngine(b, gen.TreeTrace(10000, 10000))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Clone(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReplayWorkingSet is one replay record (a step and a call, as
// tools/scalegen writes them) in a tree of `tree` root nodes whose calls
// go round robin over the first `cycle` of them. With the tree's size
// apart from the calls' working set, it tells an engine cost that grows
// with the tree (tree=10000/cycle=10 slower than tree=10/cycle=10) from
// the memory hierarchy's (tree=10000/cycle=10000 slower: each call's node,
// function, compiled graph and tensors are out of the caches).
func BenchmarkReplayWorkingSet(b *testing.B) {
	for _, c := range []struct{ tree, cycle int }{{10, 10}, {10000, 10}, {10000, 10000}} {
		b.Run(fmt.Sprintf("tree=%d/cycle=%d", c.tree, c.cycle), func(b *testing.B) {
			bl := traces.NewBuilder("working set")
			name := func(i int) string { return fmt.Sprintf("f%d", i) }
			for i := 0; i < c.tree; i++ {
				bl.Def(name(i), []string{"x"}, []string{"y"}, traces.S("y", "add", "x", float64(i%7+1)))
			}
			bl.TensorSeed("x", []int{256}, 1)
			for i := 0; i < c.tree; i++ {
				bl.Step().Call(name(i), []string{"x"}, "y") // warmup
				bl.Step().Call(name(i), []string{"x"}, "y") // recording
			}
			// Two rounds replay each node once before the timer (its
			// first replay builds its cached outputs); then rounds of the
			// cycle, repeated.
			for r := 0; r < 2*c.tree; r++ {
				bl.Step().Call(name(r%c.tree), []string{"x"}, "y")
			}
			warm := bl.Len()
			rounds := max(1, 20000/c.cycle)
			for r := 0; r < rounds*c.cycle; r++ {
				bl.Step().Call(name(r%c.cycle), []string{"x"}, "y")
			}
			tr := bl.Trace()
			e := ranEngine(b, &traces.Trace{Header: tr.Header, Records: tr.Records[:warm]})
			loop := tr.Records[warm:]
			runtime.GC()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if s := e.Apply(&loop[i%len(loop)]); s.Err != nil {
					b.Fatal(s.Err)
				}
			}
		})
	}
}

// scaleSetup is the first part of tools/scalegen's trace for n nodes: n
// defs, one input of 256 floats, then for each def a step and a call twice
// (its warmup, then its recording), in the builder's records.
func scaleSetup(n int) *traces.Trace {
	bl := traces.NewBuilder("scale setup")
	name := func(i int) string { return fmt.Sprintf("f%d", i) }
	for i := 0; i < n; i++ {
		bl.Def(name(i), []string{"x"}, []string{"y"}, traces.S("y", "add", "x", float64(i%7+1)))
	}
	bl.TensorSeed("x", []int{256}, 1)
	for i := 0; i < n; i++ {
		bl.Step().Call(name(i), []string{"x"}, "y") // warmup
		bl.Step().Call(name(i), []string{"x"}, "y") // recording
	}
	return bl.Trace()
}

// BenchmarkGrowScale is the growth of the scale trace's tree alone (what
// `cgtviz run` does in the scale trace's first 50,001 records at 10,000
// nodes): the defs, then a warmup and a recording for each, on a fresh
// engine. us/node is the cost of a def, its warmup and its recording with
// their steps; at 10 and 10,000 nodes it should be the same. live-B/node
// is the heap the grown engine holds, after a collection, a node.
func BenchmarkGrowScale(b *testing.B) {
	benchGrow(b, Options{Devices: sim.Devices(1)})
}

// BenchmarkGrowScaleRun is BenchmarkGrowScale with `cgtviz run`'s options:
// no allocator event log (cmd/cgtviz/run.go), whose entries are a part of
// what a node costs in the TUI and in snapshots but not in a run.
func BenchmarkGrowScaleRun(b *testing.B) {
	benchGrow(b, Options{Devices: sim.Devices(1), AllocOptions: alloc.Options{TraceMax: -1}})
}

func benchGrow(b *testing.B, opts Options) {
	for _, n := range []int{10, 10000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			tr := scaleSetup(n)
			runtime.GC()
			b.ReportAllocs()
			b.ResetTimer()
			var live uint64
			for i := 0; i < b.N; i++ {
				opts := opts
				opts.Devices = sim.Devices(1)
				e, err := New(tr.Header, opts)
				if err != nil {
					b.Fatal(err)
				}
				e.transient = &transientSteps{} // as RunStream, which cgtviz run uses
				for j := range tr.Records {
					if s := e.Apply(&tr.Records[j]); s.Err != nil {
						b.Fatal(s.Err)
					}
				}
				if i == b.N-1 {
					// Outside the timer: the heap with the engine, and
					// without it (the trace and the runtime's own).
					b.StopTimer()
					var with, without runtime.MemStats
					runtime.GC()
					runtime.ReadMemStats(&with)
					runtime.KeepAlive(e)
					e = nil
					runtime.GC()
					runtime.ReadMemStats(&without)
					live = with.HeapAlloc - min(with.HeapAlloc, without.HeapAlloc)
					b.StartTimer()
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(n*b.N), "us/node")
			b.ReportMetric(float64(live)/float64(n), "live-B/node")
		})
	}
}

// scaleTrace is tools/scalegen's trace for n nodes and records records,
// with each function's name one string (as the reader's memo hands out a
// repeated line's records: the def cache finds a name by its address).
func scaleTrace(n, records int) *traces.Trace {
	tr := scaleSetup(n)
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("f%d", i)
	}
	for i := range tr.Records {
		if r := &tr.Records[i]; r.Op == traces.OpCall {
			var k int
			fmt.Sscanf(r.Fn, "f%d", &k)
			r.Fn = names[k]
		}
	}
	bl := traces.NewBuilder("round")
	for i := 0; len(tr.Records)+bl.Len() < records; i = (i + 1) % n {
		bl.Step().Call(names[i], []string{"x"}, "y")
	}
	loop := bl.Trace().Records
	for i := range loop {
		if loop[i].Op == traces.OpCall {
			var k int
			fmt.Sscanf(loop[i].Fn, "f%d", &k)
			loop[i].Fn = names[k]
		}
	}
	tr.Records = append(tr.Records, loop...)
	return tr
}

// BenchmarkRunStreamScale is `cgtviz run`'s engine side on the scale
// trace (500,000 records) held in memory: RunStream, with the records
// handed over by its reading goroutine as from a file, at 10 and 10,000
// nodes. Its records/s at 10,000 nodes against 10 is issue 14's ratio
// without the reader and the checker.
func BenchmarkRunStreamScale(b *testing.B) {
	for _, n := range []int{10, 10000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			tr := scaleTrace(n, 500000)
			runtime.GC()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := RunStream(context.Background(), tr.Header, NewSliceRecords(tr.Records), Options{Devices: sim.Devices(1)}, func(s *Step) bool {
					if s.Err != nil {
						b.Fatal(s.Err)
					}
					return true
				}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(tr.Records)*b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
