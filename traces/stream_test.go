package traces

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"testing"
)

// genTrace streams a generated trace of about size bytes: a header, two
// defs, then a loop of tensor, call, eager, del, step and expect records
// that reuse their names, as a long training run does. It holds one record
// at a time. Every mem bytes it samples the heap in use (if sample is set).
type genTrace struct {
	size, done int64
	i          int
	pending    []byte
	sample     func()
	nextSample int64
}

var genBody = []string{
	`{"op": "tensor", "name": "x", "shape": [8, 8], "init": "rand", "seed": %d}`,
	`{"op": "call", "fn": "mlp", "args": ["x", "w"], "out": ["y"]}`,
	`{"op": "eager", "out": "z", "k": "add", "a": "y", "b": %d}`,
	`{"op": "call", "fn": "red", "args": ["z"], "out": ["s", "_"]}`,
	`{"op": "del", "names": ["y"]}`,
	`{"op": "expect", "action": "replay", "values": {"name": "s", "values": [%d], "tol": 0.5}}`,
	`{"op": "step"}`,
	`{"op": "note", "text": "iteration %d"}`,
}

const genHead = `{"cgtviz": 1, "name": "generated"}
{"op": "def", "fn": "mlp", "params": ["x", "w"], "body": [{"out": "h", "k": "matmul", "a": "x", "b": "w"}, {"out": "r", "k": "relu", "a": "h"}], "returns": ["r"]}
{"op": "def", "fn": "red", "params": ["a"], "body": [{"out": "s", "k": "sum", "a": "a"}, {"out": "v", "k": "view", "a": "a", "shape": [64]}], "returns": ["s", "v"]}
{"op": "param", "name": "w", "shape": [8, 8], "init": "ones"}
`

func (g *genTrace) Read(p []byte) (int, error) {
	if g.sample != nil && g.done >= g.nextSample {
		g.sample()
		g.nextSample += 1 << 20
	}
	if len(g.pending) == 0 {
		if g.done >= g.size {
			return 0, io.EOF
		}
		if g.i == 0 && g.done == 0 {
			g.pending = []byte(genHead)
		} else {
			line := genBody[(g.i-1)%len(genBody)]
			if bytes.Contains([]byte(line), []byte("%d")) {
				line = fmt.Sprintf(line, g.i)
			}
			g.pending = append(append(g.pending[:0], line...), '\n')
		}
		g.i++
	}
	n := copy(p, g.pending)
	g.pending = g.pending[n:]
	g.done += int64(n)
	return n, nil
}

// TestCheckBoundedMemory checks a 50 MB generated trace, streamed, and
// samples the heap while it runs: the checker keeps symbol tables, not
// records, so the heap must stay small however long the trace is.
func TestCheckBoundedMemory(t *testing.T) {
	size := int64(50 << 20)
	if testing.Short() {
		size = 5 << 20
	}
	runtime.GC()
	var peak uint64
	var ms runtime.MemStats
	// What the checker keeps, sampled every megabyte: the heap's live
	// bytes after a collection. (The heap in use also counts the garbage
	// not yet collected, which the collector's pacing lets grow to about
	// the live heap again: a test on it failed by 0.9 MB on a clean CI
	// machine, 2026-12-02.)
	g := &genTrace{size: size, sample: func() {
		runtime.GC()
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapAlloc)
	}}
	ps, n := check(g, "gen")
	if len(ps) > 0 {
		t.Fatalf("generated trace has problems:\n%s", Problems(ps).Error())
	}
	if g.done < size || n < 100_000 && !testing.Short() {
		t.Fatalf("read %d bytes, %d records; want %d bytes", g.done, n, size)
	}
	const limit = 32 << 20
	if peak == 0 || peak > limit {
		t.Errorf("the live heap peaked at %d bytes reading %d bytes (limit %d)", peak, size, limit)
	}
	t.Logf("%d records, %d MB, peak live heap %.1f MB", n, size>>20, float64(peak)/(1<<20))
}

// BenchmarkReader reads a generated trace of 100k records.
func BenchmarkReader(b *testing.B) {
	var buf bytes.Buffer
	g := &genTrace{size: 1 << 62}
	buf.WriteString(genHead)
	g.i = 1
	for range 100_000 - 3 { // the head has 3 records
		line := genBody[(g.i-1)%len(genBody)]
		if bytes.Contains([]byte(line), []byte("%d")) {
			line = fmt.Sprintf(line, g.i)
		}
		buf.WriteString(line + "\n")
		g.i++
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for b.Loop() {
		rd, err := NewReader(bytes.NewReader(data), "bench")
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for {
			_, err := rd.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != 100_000 {
			b.Fatalf("%d records", n)
		}
	}
	b.ReportMetric(float64(100_000*b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkCheck checks the same 100k-record trace.
func BenchmarkCheck(b *testing.B) {
	for b.Loop() {
		if ps := Check(&genTrace{size: 10 << 20}, "bench"); len(ps) > 0 {
			b.Fatal(ps)
		}
	}
}
