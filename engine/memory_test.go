package engine_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/engine/device/sim"
	"github.com/cgtviz/cgtviz/examples"
	"github.com/cgtviz/cgtviz/traces"
)

// memoryFromState is what a State says of a device's memory: the
// allocator's totals, the graph pool's, and the live but invisible bytes
// as the TUI's memory timeline counts them (live tensors of the graph pool
// owned by nobody, each storage once).
func memoryFromState(st *engine.State, dev int) engine.MemoryView {
	d := &st.Devices[dev]
	mv := engine.MemoryView{ReservedBytes: d.Totals.ReservedBytes, AllocatedBytes: d.Totals.AllocatedBytes,
		PoolReservedBytes: d.Pool.ReservedBytes, PoolAllocatedBytes: d.Pool.AllocatedBytes}
	seen := map[int]bool{}
	for _, t := range st.Tensors {
		if t.Device != dev || t.State != engine.TensorLive || t.Pool != "graph" || t.Owner != "none (replay output)" || seen[t.Storage] {
			continue
		}
		seen[t.Storage] = true
		mv.InvisibleBytes += t.Bytes
	}
	return mv
}

// TestMemoryMatchesState checks Memory against the State after every
// record of every example, and that Stream runs an engine as RunStream
// does.
func TestMemoryMatchesState(t *testing.T) {
	type src struct{ name, path string }
	var srcs []src
	for _, n := range examples.Names() {
		srcs = append(srcs, src{n, filepath.Join("..", "examples", n)})
	}
	rec, _ := filepath.Glob(filepath.Join("..", "examples", "recorded", "*.cgt.jsonl"))
	for _, p := range rec {
		srcs = append(srcs, src{"recorded/" + filepath.Base(p), p})
	}
	invisible := 0
	for _, s := range srcs {
		t.Run(s.name, func(t *testing.T) {
			f, err := os.Open(s.path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			r, err := traces.NewReader(f, s.path)
			if err != nil {
				t.Fatal(err)
			}
			hdr := r.Header()
			e, err := engine.New(hdr, engine.Options{Devices: sim.Devices(max(hdr.Devices, 1)), File: s.path})
			if err != nil {
				t.Fatal(err)
			}
			steps := 0
			_, err = e.Stream(t.Context(), r, func(step *engine.Step) bool {
				steps++
				st := e.State()
				for d := range st.Devices {
					got, want := e.Memory(d), memoryFromState(st, d)
					if got != want {
						t.Fatalf("line %d, device %d: Memory %+v, the State says %+v", step.Line, d, got, want)
					}
					if got.InvisibleBytes > 0 {
						invisible++
					}
				}
				return true
			})
			if err != nil {
				t.Fatal(err)
			}
			if steps == 0 || e.Steps() != steps {
				t.Fatalf("Stream ran %d steps, the engine counts %d", steps, e.Steps())
			}
			if (e.Memory(-1) != engine.MemoryView{}) || (e.Memory(e.NumDevices()) != engine.MemoryView{}) {
				t.Error("Memory of a device the engine does not have is not the zero view")
			}
		})
	}
	if invisible == 0 {
		t.Error("no example ever had live but invisible bytes: the comparison proves nothing")
	}
}
