package ui

import (
	"context"
	"fmt"
	"os"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/engine/alloc"
	"github.com/cgtviz/cgtviz/sessions"
	"github.com/cgtviz/cgtviz/traces"
)

// BenchmarkFirstLongMove compares, on generated traces read on demand,
// the speed of `cgtviz run` (engine.RunStream over the checked reader,
// with run's options) with that of the TUI's first long move: g to the
// last line from a fresh session, keyframes and all, through the root
// model's move and the Update that shows its end (issue 34, item 15). The
// traces: a replay a step (a steady training or decode loop), and
// tools/scalegen's shape at 10 nodes (each its own function, replayed
// round robin), the trace of the 50M-record measurement. It reports the
// records/s of both, their ratio, and what the move holds: the peak heap
// in use while it runs (sampled), the live heap it added and the
// keyframes it took (at most DefaultMaxKeyframes).
func BenchmarkFirstLongMove(b *testing.B) {
	for _, c := range []struct {
		name string
		make func(dir string) string
	}{
		{"replay-1M", func(dir string) string { return replayHeavy(b, dir, 1_000_000) }},
		{"scale10-2M", func(dir string) string { return scaleShape(b, dir, 10, 2_000_000) }},
		// 2.5 times as long: what the move holds must not grow with it.
		{"scale10-5M", func(dir string) string { return scaleShape(b, dir, 10, 5_000_000) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			path := traceFile(b, c.name, c.make)
			var runRate, moveRate, peak, added, keyframes float64
			for b.Loop() {
				runRate = runLikeRun(b, path)
				// The TUI's first long move, through the root model's move.
				m, ix := openIndexed(b, path, false, 120, 40, sessions.Options{})
				ix.Wait()
				m.Update(progressMsg{})
				target := m.sess.Len()
				before := liveHeap()
				stop := sampleHeap()
				start := time.Now()
				msg := m.move(func(s *sessions.Session) (string, error) { return "", s.Goto(target) })()
				m.Update(msg)
				moveRate = float64(target) / time.Since(start).Seconds()
				peak = float64(stop())
				added = float64(liveHeap()) - float64(before)
				if m.Pos() != target {
					b.Fatalf("the move ended at %d, want %d (%s)", m.Pos(), target, m.Message())
				}
				n, _ := m.sess.Keyframes()
				keyframes = float64(n)
				ix.Close()
			}
			b.ReportMetric(runRate, "run-records/s")
			b.ReportMetric(moveRate, "move-records/s")
			b.ReportMetric(moveRate/runRate, "move/run")
			b.ReportMetric(peak/(1<<20), "move-peak-heap-MB")
			b.ReportMetric(added/(1<<20), "held-MB")
			b.ReportMetric(keyframes, "keyframes")
		})
	}
}

// runLikeRun runs the trace at path as cmd/cgtviz's run does, minus the
// report, and returns its records/s.
func runLikeRun(b *testing.B, path string) float64 {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	cr, err := traces.NewCheckedReader(f, path)
	if err != nil {
		b.Fatal(err)
	}
	devs, err := sessions.SimDevices(cr.Header().Devices)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	n := 0
	_, err = engine.RunStream(context.Background(), cr.Header(), cr, engine.Options{Devices: devs, File: path, AllocOptions: alloc.Options{TraceMax: -1}}, func(*engine.Step) bool { n++; return true })
	if err != nil {
		b.Fatal(err)
	}
	return float64(n) / time.Since(start).Seconds()
}

// sampleHeap samples the heap in use (runtime/metrics, no stop of the
// world) every few milliseconds until the returned func, which returns
// the highest sample.
func sampleHeap() func() uint64 {
	ms := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}}
	read := func() uint64 {
		metrics.Read(ms)
		return ms[0].Value.Uint64() + ms[1].Value.Uint64()
	}
	done, out := make(chan struct{}), make(chan uint64)
	go func() {
		peak := read()
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				out <- max(peak, read())
				return
			case <-t.C:
				peak = max(peak, read())
			}
		}
	}()
	return func() uint64 { close(done); return <-out }
}

// scaleShape is tools/scalegen's trace: nodes functions, each its own
// root node (a warmup, then a recording), all on one input, then calls
// round robin, a step and a replay each, to n records.
func scaleShape(tb testing.TB, dir string, nodes, n int) string {
	head := []string{}
	for i := range nodes {
		head = append(head, fmt.Sprintf(`{"op": "def", "fn": "f%d", "params": ["x"], "body": [{"out": "y", "k": "add", "a": "x", "b": %d}], "returns": ["y"]}`, i, i%7+1))
	}
	head = append(head, `{"op": "tensor", "name": "x", "shape": [256], "init": "ones"}`)
	return writeTrace(tb, dir, fmt.Sprintf("scale%d-%d.cgt.jsonl", nodes, n), head, func(i int) []string {
		return []string{`{"op": "step"}`, fmt.Sprintf(`{"op": "call", "fn": "f%d", "args": ["x"], "out": ["y"]}`, (i/2)%nodes)}
	}, n)
}

// TestMoveProgress (item 15): a long move tells its progress to the
// status line and stops on Esc where it has got to, a consistent
// position.
func TestMoveProgress(t *testing.T) {
	path := replayHeavy(t, t.TempDir(), 60_000)
	m, ix := openIndexed(t, path, false, 120, 40, sessions.Options{})
	ix.Wait()
	m.Update(progressMsg{})
	target := m.sess.Len()
	cmd := m.move(func(s *sessions.Session) (string, error) { return "", s.Goto(target) })
	// Cancel as soon as the watcher has seen a first batch.
	m.prog.cancel.Store(true)
	if got := m.prog.text(); got != "running…" {
		t.Errorf("before a first batch: %q", got)
	}
	m.Update(cmd())
	if p := m.Pos(); p <= 0 || p >= target || p != m.sess.Pos() {
		t.Fatalf("a canceled move ended at %d (session %d), want between 0 and %d", p, m.sess.Pos(), target)
	}
	if m.msgErr || !strings.Contains(m.Message(), "canceled (esc) after 4096 records") {
		t.Errorf("message %q", m.Message())
	}
	p := newMoveProgress()
	p.start = time.Now().Add(-2 * time.Second)
	p.watch(1_000_000, 25_000_000)
	if got, want := p.text(), "running: 1.00M of 25.00M records · 500k/s · 48 s left · esc stops"; got != want {
		t.Errorf("progress %q, want %q", got, want)
	}
	// The session steps on from where it stopped.
	press(t, m, "n")
	if m.sess.Pos() != m.Pos() {
		t.Error("the session and the UI disagree after a canceled move")
	}
}
