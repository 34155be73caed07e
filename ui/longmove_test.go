package ui

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/engine/alloc"
	"github.com/cgtviz/cgtviz/sessions"
	"github.com/cgtviz/cgtviz/traces"
)

// BenchmarkFirstLongMove compares, on one generated trace of 1M records
// (a replay a step, as a steady training or decode loop), the speed of
// `cgtviz run` (engine.RunStream over the checked reader, with run's
// options) with that of the TUI's first long move: g to the last line of
// a trace read on demand, from a fresh session, keyframes and all. It
// reports records/s of both and their ratio (issue 34, item 15).
func BenchmarkFirstLongMove(b *testing.B) {
	path := traceFile(b, "replay-1M", func(dir string) string { return replayHeavy(b, dir, 1_000_000) })
	var runRate, moveRate float64
	for b.Loop() {
		// run: as cmd/cgtviz's run does, minus the report.
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
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
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
		runRate = float64(n) / time.Since(start).Seconds()

		// The TUI's first long move, through the root model's move.
		m, ix := openIndexed(b, path, false, 120, 40, sessions.Options{})
		ix.Wait()
		m.Update(progressMsg{})
		target := m.sess.Len()
		start = time.Now()
		msg := m.move(func(s *sessions.Session) (string, error) { return "", s.Goto(target) })()
		moveRate = float64(target) / time.Since(start).Seconds()
		m.Update(msg)
		if m.Pos() != target {
			b.Fatalf("the move ended at %d, want %d (%s)", m.Pos(), target, m.Message())
		}
		ix.Close()
	}
	b.ReportMetric(runRate, "run-records/s")
	b.ReportMetric(moveRate, "move-records/s")
	b.ReportMetric(moveRate/runRate, "move/run")
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
