package ui

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/cgtviz/cgtviz/sessions"
	"github.com/cgtviz/cgtviz/traces"
)

// writeTrace writes a trace file of header, then head, then body repeated
// until the file has n records; it returns its path.
func writeTrace(tb testing.TB, dir, name string, head []string, body func(i int) []string, n int) string {
	tb.Helper()
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString(`{"cgtviz": 1}` + "\n")
	k := 0
	for _, l := range head {
		w.WriteString(l + "\n")
		k++
	}
	for i := 0; k < n; i++ {
		for _, l := range body(i) {
			if k == n {
				break
			}
			w.WriteString(l + "\n")
			k++
		}
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	return path
}

// replayHeavy is a trace of n records: one function warmed up, recorded,
// then replayed once a step.
func replayHeavy(tb testing.TB, dir string, n int) string {
	return writeTrace(tb, dir, fmt.Sprintf("replay-%d.cgt.jsonl", n), []string{
		`{"op": "def", "fn": "f", "params": ["x"], "body": [{"out": "y", "k": "add", "a": "x", "b": 1}], "returns": ["y"]}`,
		`{"op": "tensor", "name": "inp", "shape": [16], "init": "ones"}`,
	}, func(int) []string {
		return []string{`{"op": "step"}`, `{"op": "call", "fn": "f", "args": ["inp"], "out": ["out"]}`}
	}, n)
}

// bigTree is a trace whose tree grows to nodes root nodes (one def called
// with nodes input shapes), then replays them round robin for replays
// calls, as engine's bigTreeTrace.
func bigTree(tb testing.TB, dir string, nodes, replays int) string {
	call := func(i int) []string {
		return []string{
			fmt.Sprintf(`{"op": "tensor", "name": "x", "shape": [%d, %d], "init": "zeros"}`, 2+i%100, 2+i/100),
			`{"op": "step"}`,
			`{"op": "call", "fn": "f", "args": ["x"], "out": ["y"]}`,
		}
	}
	n := 1 + 3*(2*nodes+replays)
	return writeTrace(tb, dir, fmt.Sprintf("tree-%d.cgt.jsonl", nodes), []string{
		`{"op": "def", "fn": "f", "params": ["x"], "body": [{"out": "y", "k": "add", "a": "x", "b": 1}], "returns": ["y"]}`,
	}, func(i int) []string {
		if i < 2*nodes {
			return call(i / 2)
		}
		return call((i - 2*nodes) % nodes)
	}, n)
}

// openIndexed opens path read on demand, as `cgtviz tui` does, in a UI of
// w×h; the index closes at the end of the test.
func openIndexed(tb testing.TB, path string, follow bool, w, h int, opts sessions.Options) (*Model, *traces.Index) {
	tb.Helper()
	ix, err := traces.OpenIndex(context.Background(), path, follow)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ix.Close() })
	opts.Source = path
	s, err := sessions.NewRecords(sessions.Indexed(ix), opts)
	if err != nil {
		tb.Fatal(err)
	}
	m := New(s, Options{})
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	return m, ix
}

// TestIndexedFlow drives the root model over a trace read on demand whose
// check finds a problem past its first records: the first screen comes
// before the check ends; the problem shows in the status line and at its
// row; stepping stops before the bad record.
func TestIndexedFlow(t *testing.T) {
	dir := t.TempDir()
	good := []string{
		`{"op": "def", "fn": "f", "params": ["x"], "body": [{"out": "y", "k": "add", "a": "x", "b": 1}], "returns": ["y"]}`,
		`{"op": "tensor", "name": "inp", "shape": [16], "init": "ones"}`,
	}
	for range 3 {
		good = append(good, `{"op": "step"}`, `{"op": "call", "fn": "f", "args": ["inp"], "out": ["out"]}`)
	}
	// Line 10 reads a name never bound; line 11 is no JSON.
	lines := append(good, `{"op": "read", "name": "nope"}`, `{"op": `, `{"op": "step"}`)
	path := writeTrace(t, dir, "late-problem.cgt.jsonl", lines, func(int) []string { return nil }, len(lines))
	m, ix := openIndexed(t, path, false, 120, 30, sessions.Options{})
	ix.Wait()
	runCmd(m, m.onProgress())
	if got := m.sess.Len(); got != len(good) {
		t.Fatalf("%d records may run, want %d (those before line 10)", got, len(good))
	}
	screen := screenText(m)
	for _, want := range []string{
		"✗ 2 problem(s), first at line 10", // the status line
		"read nope  ✗",                     // the refused record, on its row
		"✗ invalid JSON",                   // the line that does not parse
		"step (mark_step_begin)",           // the record after them still shows
	} {
		if !strings.Contains(screen, want) {
			t.Errorf("screen lacks %q:\n%s", want, screen)
		}
	}
	for range 20 {
		press(t, m, "n")
	}
	if m.Pos() != len(good) {
		t.Fatalf("stepped to %d, want to stop at %d, before the bad record", m.Pos(), len(good))
	}
	if want := "stopped before line 10, which does not check"; !strings.Contains(m.Message(), want) {
		t.Errorf("message %q at the problem, want %q", m.Message(), want)
	}
	press(t, m, "c")
	if want := "stopped before line 10, which does not check: "; !strings.Contains(m.Message(), want) || !strings.Contains(m.Message(), "no breakpoint hit") {
		t.Errorf("continue says %q, want %q...", m.Message(), want)
	}
	press(t, m, "N", "N")
	if m.Pos() != len(good)-2 {
		t.Fatalf("back twice: at %d, want %d", m.Pos(), len(good)-2)
	}
}

// TestFollowFlow follows a trace being written through the root model:
// records appended after the first screen appear at the next tick and can
// be stepped into.
func TestFollowFlow(t *testing.T) {
	dir := t.TempDir()
	path := writeTrace(t, dir, "live.cgt.jsonl", []string{
		`{"op": "def", "fn": "f", "params": ["x"], "body": [{"out": "y", "k": "add", "a": "x", "b": 1}], "returns": ["y"]}`,
		`{"op": "tensor", "name": "inp", "shape": [16], "init": "ones"}`,
	}, func(int) []string { return nil }, 2)
	m, _ := openIndexed(t, path, true, 120, 30, sessions.Options{})
	if m.Init() == nil {
		t.Fatal("a followed trace must be watched")
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for k := 1; k <= 3; k++ {
		fmt.Fprintf(f, "{\"op\": \"step\"}\n{\"op\": \"call\", \"fn\": \"f\", \"args\": [\"inp\"], \"out\": [\"out%d\"]}\n", k)
		want := 2 + 2*k
		deadline := time.Now().Add(5 * time.Second)
		for m.sess.Len() < want && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		m.Update(progressMsg{})
		if !strings.Contains(screenText(m), fmt.Sprintf("out%d", k)) {
			t.Fatalf("record with out%d does not show:\n%s", k, screenText(m))
		}
		if !strings.Contains(screenText(m), fmt.Sprintf("following: %d records", want)) {
			t.Errorf("status line lacks the follow count %d:\n%s", want, screenText(m))
		}
		for m.Pos() < want {
			before := m.Pos()
			press(t, m, "n")
			if m.Pos() == before {
				t.Fatalf("cannot step to record %d of %d", before+1, want)
			}
		}
		press(t, m, "n")
		if want := "waiting for more records (following the trace)"; m.Message() != want {
			t.Errorf("at the end of a followed trace: %q, want %q", m.Message(), want)
		}
	}
}

// firstScreen opens path on demand and draws the first screen, as
// `cgtviz tui` does before its first frame.
func firstScreen(b *testing.B, path string) (*Model, *traces.Index) {
	ix, err := traces.OpenIndex(context.Background(), path, false)
	if err != nil {
		b.Fatal(err)
	}
	s, err := sessions.NewRecords(sessions.Indexed(ix), sessions.Options{Source: path})
	if err != nil {
		b.Fatal(err)
	}
	m := New(s, Options{Color: true})
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
	if v := m.View(); !strings.Contains(v.Content, "call f inp") && !strings.Contains(v.Content, "call") {
		b.Fatalf("the first screen lacks the trace:\n%s", v.Content)
	}
	return m, ix
}

func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

var benchDir = func() func(b *testing.B) string {
	var dir string
	return func(b *testing.B) string {
		if dir == "" {
			d, err := os.MkdirTemp("", "cgtviz-bench")
			if err != nil {
				b.Fatal(err)
			}
			dir = d
		}
		return dir
	}
}()

// traceFile writes (once per process) a generated trace for benchmarks.
func traceFile(b *testing.B, name string, make func(dir string) string) string {
	dir := benchDir(b)
	if p, ok := benchFiles[name]; ok {
		return p
	}
	p := make(dir)
	benchFiles[name] = p
	return p
}

var benchFiles = map[string]string{}

// BenchmarkFirstScreen1M opens a 1,000,000-record trace read on demand to
// its first screen (index opened, session at 0, model built, one View),
// while the background pass indexes and checks the rest; it reports the
// time and the live heap then, and the heap once the whole file is indexed.
func BenchmarkFirstScreen1M(b *testing.B) {
	path := traceFile(b, "replay-1M", func(dir string) string { return replayHeavy(b, dir, 1_000_000) })
	base := liveHeap()
	var ix *traces.Index
	for b.Loop() {
		if ix != nil {
			b.StopTimer()
			ix.Close()
			b.StartTimer()
		}
		_, ix = firstScreen(b, path)
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/first-screen")
	b.ReportMetric(float64(liveHeap()-base)/(1<<20), "MB-first-screen")
	start := time.Now()
	ix.Wait()
	b.ReportMetric(float64(time.Since(start).Milliseconds()), "ms-to-index-rest")
	b.ReportMetric(float64(liveHeap()-base)/(1<<20), "MB-indexed")
	ix.Close()
}

// indexedAtEnd is a model over the 1M trace (or the 10k-node tree), run
// once to its end so that every position has been executed.
func indexedAtEnd(b *testing.B, path string) (*Model, *traces.Index) {
	m, ix := firstScreen(b, path)
	ix.Wait()
	m.Update(progressMsg{})
	if err := m.sess.Goto(m.sess.Len()); err != nil {
		b.Fatal(err)
	}
	m.install(takeSnapshot(m.sess))
	return m, ix
}

// benchMoves reports a step (n, then N to stay put) and a jump (g to a
// random line) through the root model, View included, at the end of path.
func benchMoves(b *testing.B, path string) {
	base := liveHeap()
	m, ix := indexedAtEnd(b, path)
	defer ix.Close()
	held, _ := m.sess.KeyframeBytes()
	kf, every := m.sess.Keyframes()
	b.Logf("%s: %d records, %d keyframes every %d holding %d device bytes, heap %.0f MB", filepath.Base(path), m.sess.Len(), kf, every, held, float64(liveHeap()-base)/(1<<20))
	n := m.sess.Len()
	if err := m.sess.Goto(n / 2); err != nil {
		b.Fatal(err)
	}
	m.install(takeSnapshot(m.sess))
	// move presses k (and draws) until the session reaches an end, where
	// it goes back to the middle off the clock.
	move := func(name, k string, atEnd func() bool) {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if atEnd() {
					b.StopTimer()
					if err := m.sess.Goto(n / 2); err != nil {
						b.Fatal(err)
					}
					m.install(takeSnapshot(m.sess))
					b.StartTimer()
				}
				press(b, m, k)
				_ = m.View()
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/"+name)
		})
	}
	move("step", "n", func() bool { return m.Pos() >= n })
	move("back", "N", func() bool { return m.Pos() == 0 })
	b.Run("jump", func(b *testing.B) {
		r := rand.New(rand.NewPCG(7, 8))
		for b.Loop() {
			line := m.recs.line(r.IntN(n))
			press(b, m, "g")
			press(b, m, strings.Split(fmt.Sprint(line), "")...)
			press(b, m, "enter")
			_ = m.View()
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/jump")
		b.ReportMetric(float64(liveHeap()-base)/(1<<20), "MB-heap")
	})
}

// BenchmarkMoves1M steps and jumps in the 1M-record trace read on demand.
func BenchmarkMoves1M(b *testing.B) {
	benchMoves(b, traceFile(b, "replay-1M", func(dir string) string { return replayHeavy(b, dir, 1_000_000) }))
}

// BenchmarkMovesTree10k steps and jumps in a trace whose tree has 10,000
// nodes (60,001 records to grow it, then 20,000 replays).
func BenchmarkMovesTree10k(b *testing.B) {
	benchMoves(b, traceFile(b, "tree-10k", func(dir string) string { return bigTree(b, dir, 10_000, 20_000) }))
}

// TestSearchBigTrace: in a trace read on demand of more than searchSpan
// records, one search press reads at most searchSpan of them and says
// where it stopped; the next press goes on from there and finds a match
// further on.
func TestSearchBigTrace(t *testing.T) {
	const n = 2*searchSpan + 1000
	target := searchSpan + searchSpan/2
	path := writeTrace(t, t.TempDir(), "search.cgt.jsonl", nil, func(i int) []string {
		if i == target {
			return []string{`{"op": "note", "text": "needle here"}`}
		}
		return []string{`{"op": "step"}`}
	}, n)
	m, ix := openIndexed(t, path, false, 120, 30, sessions.Options{})
	ix.Wait()
	runCmd(m, m.onProgress())
	tests := []struct {
		wantMsg string
		wantRow int // the trace cursor after the press
	}{
		{fmt.Sprintf("not found in the %d records up to line %d", searchSpan, searchSpan+2), searchSpan},
		{fmt.Sprintf("/needle in Trace: line %d", target+2), target},
	}
	press(t, m, append(append([]string{"4", "/"}, typed("needle")...), "enter")...)
	for k, tc := range tests {
		if k > 0 {
			press(t, m, "ctrl+n")
		}
		if !strings.Contains(m.Message(), tc.wantMsg) || m.trace.cursor != tc.wantRow {
			t.Fatalf("press %d: message %q, cursor %d; want %q at %d", k, m.Message(), m.trace.cursor, tc.wantMsg, tc.wantRow)
		}
	}
}
