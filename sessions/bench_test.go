package sessions

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/cgtviz/cgtviz/traces"
)

// million is the size of the benchmark trace: a million records.
const million = 1_000_000

var bigTrace = sync.OnceValue(func() *traces.Trace { return replayTrace(million) })

func heap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkHistoryBytes runs a million-record replay-heavy trace to its end
// and reports what the session's history (summaries, keyframes, caches)
// costs per step: the heap after the run, less the heap with the trace and
// a fresh session. It runs with the default keyframe bound and a tighter
// one: on the simulated device a keyframe pins a private copy of each
// segment written since the one before (copy-on-write is per segment), which
// dominates the figure.
func BenchmarkHistoryBytes(b *testing.B) {
	for _, max := range []int{DefaultMaxKeyframes, 128} {
		b.Run(fmt.Sprintf("keyframes=%d", max), func(b *testing.B) {
			tr := bigTrace()
			for b.Loop() {
				s, err := New(tr, Options{MaxKeyframes: max})
				if err != nil {
					b.Fatal(err)
				}
				before := heap()
				if err := s.Goto(s.Len()); err != nil {
					b.Fatal(err)
				}
				after := heap()
				n, every := s.Keyframes()
				b.ReportMetric(float64(after-before)/float64(s.Len()), "bytes/step")
				b.ReportMetric(float64(n), "keyframes")
				b.ReportMetric(float64(every), "keyframe-spacing")
				r := rand.New(rand.NewPCG(5, 6))
				start := time.Now()
				for range 20 {
					if err := s.Goto(r.IntN(s.Len() + 1)); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(time.Since(start).Microseconds())/20, "µs/goto")
				runtime.KeepAlive(s)
			}
		})
	}
}

// BenchmarkGoto moves to random positions of the million-record trace once
// it has been run: each Goto restores a keyframe and re-applies at most one
// keyframe spacing of records.
func BenchmarkGoto(b *testing.B) {
	s := ranToEnd(b)
	r := rand.New(rand.NewPCG(3, 4))
	b.ResetTimer()
	for b.Loop() {
		if err := s.Goto(r.IntN(s.Len() + 1)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBack steps back one record at a time from the end of the
// million-record trace, the N key held down.
func BenchmarkBack(b *testing.B) {
	s := ranToEnd(b)
	b.ResetTimer()
	for b.Loop() {
		if s.Pos() == 0 {
			b.StopTimer()
			if err := s.Goto(s.Len()); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		if err := s.Back(); err != nil {
			b.Fatal(err)
		}
	}
}

// ranToEnd is a session on the million-record trace, run to its end.
func ranToEnd(b *testing.B) *Session {
	b.Helper()
	s, err := New(bigTrace(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Goto(s.Len()); err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkSummaries reads the summaries of the million-record trace once
// run, one record at a time (Summary) and in bulk (Summaries), as the
// timeline does after a long move: ns/op is a million records' worth.
func BenchmarkSummaries(b *testing.B) {
	s := ranToEnd(b)
	var sink int
	b.Run("one-by-one", func(b *testing.B) {
		for b.Loop() {
			for i := range s.Executed() {
				sum, _ := s.Summary(i)
				sink += sum.Node
			}
		}
	})
	b.Run("bulk", func(b *testing.B) {
		for b.Loop() {
			s.Summaries(0, s.Executed(), func(sum Summary) { sink += sum.Node })
		}
	})
	runtime.KeepAlive(sink)
}
