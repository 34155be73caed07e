package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/engine/device/sim"
	"github.com/cgtviz/cgtviz/engine/report"
	"github.com/cgtviz/cgtviz/traces"
)

// benchRecords is the size of the trace of issue 14: a long replay-heavy
// run, as a recorded training loop is.
const benchRecords = 1_000_000

// replayHeavyFile writes a 1,000,000-record replay-heavy trace (the seed
// loop: step, foo, del a, fee, a new input every 8 iterations) into the
// benchmark's temporary folder, which the testing package removes after
// it: no huge file is committed, and none is left behind. It writes 8
// iterations' lines over and over rather than building the trace in
// memory: a heap of a million records would make the benchmark measure the
// garbage collector scanning it.
func replayHeavyFile(b *testing.B) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "replay-heavy.cgt.jsonl")
	if err := writeReplayHeavy(path, benchRecords); err != nil {
		b.Fatal(err)
	}
	return path
}

// writeReplayHeavy writes a replay-heavy trace of about n records to path.
func writeReplayHeavy(path string, n int) error {
	bld := traces.NewBuilder("replay-heavy").
		Def("foo", []string{"x"}, []string{"a", "b"}, traces.S("a", "add", "x", 1.0), traces.S("b", "add", "x", 2.0)).
		Def("fee", []string{"y"}, []string{"c"}, traces.S("c", "mul", "y", 4.0)).
		TensorSeed("inp", []int{256}, 1)
	for i := 0; i < 8; i++ {
		if i%8 == 7 {
			bld.TensorSeed("inp", []int{256}, int64(i))
		}
		bld.Step().Call("foo", []string{"inp"}, "a", "b").Del("a").Call("fee", []string{"b"}, "out")
	}
	var text bytes.Buffer
	if err := bld.Trace().Write(&text); err != nil {
		return err
	}
	lines := bytes.SplitAfter(text.Bytes(), []byte("\n"))
	head, loop := bytes.Join(lines[:4], nil), bytes.Join(lines[4:], nil) // header, 2 defs, a tensor
	perLoop := bytes.Count(loop, []byte("\n"))
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	w.Write(head)
	for i := 3; i < n; i += perLoop {
		w.Write(loop)
	}
	return errors.Join(w.Flush(), f.Close())
}

// benchRun runs `cgtviz run ARGS... TRACE` on the 1M trace and reports
// records/s and the peak heap in use (sampled after the run: the engine and
// reader keep nothing that grows with the trace, so the end is the peak).
func benchRun(b *testing.B, args ...string) {
	path := replayHeavyFile(b)
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	b.ReportAllocs()
	b.ResetTimer()
	var peak uint64
	var out writeCounter
	for i := 0; i < b.N; i++ {
		argv := append(append([]string{"run"}, args...), path)
		if code := run(context.Background(), argv, &out, io.Discard); code != 0 {
			b.Fatalf("cgtviz %v: exit %d", argv, code)
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapSys)
	}
	b.ReportMetric(float64(benchRecords)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(peak)/(1<<20), "MB-heapsys")
	b.ReportMetric(float64(out.calls)/float64(b.N), "writes/op")
}

// writeCounter counts the write calls made to it (each one a write(2) on a
// real stdout).
type writeCounter struct{ calls int }

func (w *writeCounter) Write(p []byte) (int, error) { w.calls++; return len(p), nil }

// BenchmarkRunTwoPass is the run as it was before issue 14, in the same
// benchmark run for the ratio: a whole check pass over the file, then the
// file opened and parsed again for the engine, and every step written
// straight to stdout.
func BenchmarkRunTwoPass(b *testing.B) {
	path := replayHeavyFile(b)
	b.ReportAllocs()
	b.ResetTimer()
	var out writeCounter
	for i := 0; i < b.N; i++ {
		if ps := traces.CheckFile(path); len(ps) > 0 {
			b.Fatal(traces.Problems(ps))
		}
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		r, err := traces.NewReader(f, path)
		if err != nil {
			b.Fatal(err)
		}
		rep := report.New("bench", "sim")
		_, err = engine.RunReader(context.Background(), r, engine.Options{Devices: sim.Devices(1), File: path}, func(s *engine.Step) bool {
			rs := rep.Count(s)
			rs.WriteText(&out)
			return true
		})
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(benchRecords)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(out.calls)/float64(b.N), "writes/op")
}

// BenchmarkRunEndToEnd is `cgtviz run` on the 1M-record trace, text report
// (issue 14: at least 1,000,000 records/s, under 100 MB).
func BenchmarkRunEndToEnd(b *testing.B) { benchRun(b) }

// BenchmarkRunEndToEndJSON is the same with --json.
func BenchmarkRunEndToEndJSON(b *testing.B) { benchRun(b, "--json") }
