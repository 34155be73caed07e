package main

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/cgtviz/cgtviz/sessions"
)

// BenchmarkPeakMemory measures each command's peak heap (HeapInuse above
// what was in use before, sampled every millisecond: peakHeap) on traces
// of 1M and 3M step records made in the benchmark's folder, the traces of
// issue 31 item 2 (where export took 1.53 GB at 1M, 4.77 GB at 3M). The
// TUI's figure is its trace opened to be read on demand (plain, and gzip
// through the spool), checked to the end, and a session stepped to its
// last record. Run it alone: go test ./cmd/cgtviz -run - -bench PeakMemory -benchtime 1x
func BenchmarkPeakMemory(b *testing.B) {
	for _, n := range []int{1_000_000, 3_000_000} {
		dir := b.TempDir()
		path := filepath.Join(dir, "steps.cgt.jsonl")
		if err := writeSteps(path, n); err != nil {
			b.Fatal(err)
		}
		gz := path + ".gz"
		if err := gzipFile(path, gz); err != nil {
			b.Fatal(err)
		}
		out := filepath.Join(dir, "out")
		cmds := []struct {
			name string
			args []string
		}{
			{"check", []string{"check", path}},
			{"run", []string{"run", path}},
			{"export", []string{"export", path, "-o", out + ".dot"}},
			{"export-gzip", []string{"export", gz, "-o", out + ".dot"}},
			{"fmt", []string{"fmt", path}},
			{"snapshot", []string{"snapshot", path, "-o", out + ".pickle"}},
		}
		for _, c := range cmds {
			b.Run(fmt.Sprintf("%s/%dM", c.name, n/1_000_000), func(b *testing.B) {
				var peak uint64
				for i := 0; i < b.N; i++ {
					code := 0
					peak = max(peak, peakHeap(func() { code = run(context.Background(), c.args, nopWriter{}, io.Discard) }))
					if code != 0 {
						b.Fatalf("%v: exit %d", c.args, code)
					}
				}
				b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
			})
		}
		for _, src := range []string{path, gz} {
			name := "tui"
			if src == gz {
				name = "tui-gzip"
			}
			b.Run(fmt.Sprintf("%s/%dM", name, n/1_000_000), func(b *testing.B) {
				var peak uint64
				for i := 0; i < b.N; i++ {
					peak = max(peak, peakHeap(func() {
						ix, err := sessions.OpenIndexed(context.Background(), src, false)
						if err != nil {
							b.Fatal(err)
						}
						ix.Wait()
						s, err := sessions.NewRecords(sessions.Indexed(ix), sessions.Options{Source: src})
						if err != nil {
							b.Fatal(err)
						}
						if err := s.Goto(s.Len()); err != nil {
							b.Fatal(err)
						}
						s.Close()
						ix.Close()
					}))
				}
				b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
			})
		}
	}
}

// gzipFile writes the gzip of the file at src to dst.
func gzipFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer out.Close()
	zw := gzip.NewWriter(out)
	if _, err := io.Copy(zw, in); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return out.Close()
}
