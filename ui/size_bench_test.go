package ui

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/cgtviz/cgtviz/traces/gen"
)

// modelSizes are the models of BENCHMARKS.md's table by model size
// (issue 30 items 4 and 6): GPT-2-like training loops from toy to 1B
// (traces/gen.WriteModel, tools/modelgen).
var modelSizes = []struct {
	name          string
	layers, width int
}{
	{"toy", 2, 64},
	{"124M", 12, 768},
	{"355M", 24, 1024},
	{"1B", 24, 1792},
}

// modelTrace writes (once per process) the trace of a model size.
func modelTrace(b *testing.B, name string, layers, width int) string {
	return traceFile(b, "model-"+name, func(dir string) string {
		p := filepath.Join(dir, "model-"+name+".cgt.jsonl")
		f, err := os.Create(p)
		if err != nil {
			b.Fatal(err)
		}
		if err := gen.WriteModel(f, gen.Model{Layers: layers, Width: width}); err != nil {
			b.Fatal(err)
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
		return p
	})
}

// BenchmarkMovesModel steps (n, N) and jumps (g) in the TUI, View
// included, on training loops of each model size: what `N` and `g` cost
// at real size, on the simulated device.
func BenchmarkMovesModel(b *testing.B) {
	for _, sz := range modelSizes {
		b.Run(sz.name, func(b *testing.B) {
			benchMoves(b, modelTrace(b, sz.name, sz.layers, sz.width))
		})
	}
}

// BenchmarkMemoryTimelineModel opens the memory timeline (M) at the end of
// each model size's trace: its samples run the trace once more.
func BenchmarkMemoryTimelineModel(b *testing.B) {
	for _, sz := range modelSizes {
		b.Run(sz.name, func(b *testing.B) {
			path := modelTrace(b, sz.name, sz.layers, sz.width)
			base := liveHeap()
			m, ix := indexedAtEnd(b, path)
			defer ix.Close()
			for b.Loop() {
				press(b, m, "M")
				_ = m.View()
				press(b, m, "esc")
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/M")
			b.ReportMetric(float64(liveHeap()-base)/(1<<20), "MB-heap")
			if testing.Verbose() {
				fmt.Println(sz.name, m.sess.Len(), "records")
			}
		})
	}
}
