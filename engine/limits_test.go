package engine_test

import (
	"context"
	"fmt"
	"io"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/engine/device/sim"
	"github.com/cgtviz/cgtviz/traces"
)

// TestHostileTraces feeds traces built to exhaust a reader and checks that
// each is refused quickly, with bounded memory, by a problem that names
// the limit it broke (so that a user knows what to change).
func TestHostileTraces(t *testing.T) {
	const hdr = `{"cgtviz": 1}` + "\n"
	deep := strings.Repeat("[", 40) + strings.Repeat("]", 40)
	tests := []struct {
		name string
		body string
		want []string
	}{
		{"line over 4 MiB", `{"op": "note", "text": "` + strings.Repeat("x", 5<<20) + `"}`, []string{"line is longer than 4 MiB", "MaxLineBytes"}},
		{"nesting", `{"op": "expect", "values": ` + deep + `}`, []string{"nested deeper than 16 levels", "MaxNesting"}},
		{"nesting in a body", `{"op": "def", "fn": "f", "params": [], "returns": [], "body": [` + deep + `]}`, []string{"MaxNesting"}},
		{"name over 256 bytes", `{"op": "tensor", "name": "` + strings.Repeat("n", 300) + `", "shape": [1], "init": "zeros"}`, []string{"300 bytes long, over 256", "MaxNameLen"}},
		{"function name over 256 bytes", `{"op": "def", "fn": "` + strings.Repeat("f", 257) + `", "params": [], "body": [], "returns": []}`, []string{"over 256", "MaxNameLen"}},
		{"shape [1<<40, 1<<40]", `{"op": "tensor", "name": "x", "shape": [1099511627776, 1099511627776], "init": "zeros"}`, []string{"over max_tensor_bytes (4 GiB)"}},
		{"shape overflowing int64", `{"op": "param", "name": "x", "shape": [4294967296, 4294967296, 4294967296, 4294967296], "init": "ones"}`, []string{"over max_tensor_bytes"}},
		{"statement shape [1<<40, 1<<40]", `{"op": "eager", "out": "x", "k": "fill", "shape": [1099511627776, 1099511627776], "value": 1}`, []string{"over max_tensor_bytes"}},
		// 17 live tensors of 4 GiB each (each within max_tensor_bytes).
		{"total over max_total_bytes", manyTensors(17, 1<<30), []string{"named tensors would hold 68 GiB, over max_total_bytes (64 GiB)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := hdr + tt.body + "\n"
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			start := time.Now()
			tr, err := traces.Read(strings.NewReader(in), "hostile.cgt.jsonl")
			d := time.Since(start)
			runtime.ReadMemStats(&ms1)
			if err == nil {
				t.Fatalf("accepted (%d records)", len(tr.Records))
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if !strings.Contains(err.Error(), "hostile.cgt.jsonl:") {
				t.Errorf("error %q does not name the file and line", err)
			}
			// Read keeps its input (it checks, then reads it again) and
			// grows line buffers up to MaxLineBytes: some times the input
			// plus some buffers is the bound, never the sizes it names
			// (GiB to TiB). -race allocates more.
			if alloc := ms1.TotalAlloc - ms0.TotalAlloc; alloc > uint64(10*len(in))+(32<<20) {
				t.Errorf("reading %d bytes allocated %d bytes", len(in), alloc)
			}
			if d > 2*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

// manyTensors returns n tensor records of elems elements, named t0, t1, ...
func manyTensors(n, elems int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"op": "tensor", "name": "t%d", "shape": [%d], "init": "zeros"}`+"\n", i, elems)
	}
	return b.String()
}

// TestLongLineStreams checks that a line far over MaxLineBytes is
// discarded as it streams: checking 256 MiB of one line holds memory to
// a few times the limit, and the problem names it.
func TestLongLineStreams(t *testing.T) {
	size := 256 << 20
	if testing.Short() {
		size = 32 << 20
	}
	r := io.MultiReader(strings.NewReader(`{"cgtviz": 1}`+"\n"+`{"op": "note", "text": "`), &repeatReader{b: 'x', n: size}, strings.NewReader(`"}`+"\n"+`{"op": "step"}`+"\n"))
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	ps := traces.Check(r, "long.cgt.jsonl")
	runtime.ReadMemStats(&ms1)
	if len(ps) != 1 || !strings.Contains(ps[0].Msg, "MaxLineBytes") || ps[0].Line != 2 {
		t.Fatalf("problems %v, want one at line 2 naming MaxLineBytes", ps)
	}
	// A few buffers of the limit's size, whatever the line's length.
	if alloc := ms1.TotalAlloc - ms0.TotalAlloc; alloc > 8*traces.MaxLineBytes {
		t.Errorf("checking a %d-byte line allocated %d bytes", size, alloc)
	}
}

// repeatReader gives n copies of b.
type repeatReader struct {
	b byte
	n int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	k := min(len(p), r.n)
	for i := range k {
		p[i] = r.b
	}
	r.n -= k
	return k, nil
}

// TestTensorBiggerThanDevice checks the engine side of the limits: a
// tensor within the trace's limits but bigger than the device fails its
// record with PyTorch's out-of-memory error, carrying the allocator's
// statistics, and leaves the engine as it was; the next records run.
func TestTensorBiggerThanDevice(t *testing.T) {
	b := traces.NewBuilder("oom").
		Def("f", []string{"x"}, []string{"y"}, traces.S("y", "mul", "x", 2)).
		Tensor("small", []int{4}, traces.InitOnes).
		Call("f", []string{"small"}, "out").
		Tensor("big", []int{4 << 20}, traces.InitZeros). // 16 MiB on an 8 MiB device
		Eager(traces.SFill("wide", []int{1 << 22}, 1)).  // the same, from a statement
		Call("f", []string{"small"}, "out2").
		Read("out2")
	tr := b.Trace()
	if ps := tr.Check(); len(ps) > 0 {
		t.Fatal(ps)
	}
	e, err := engine.New(tr.Header, engine.Options{Devices: []device.Device{sim.New(sim.Options{TotalBytes: 8 << 20})}, Check: true, File: "oom"})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i := range tr.Records {
		rec := &tr.Records[i]
		before := e.State()
		s := e.Apply(rec)
		huge := (rec.Op == traces.OpTensor && rec.Name == "big") || rec.Op == traces.OpEager
		if !huge {
			if s.Err != nil {
				t.Fatalf("line %d: %s", s.Line, s.Err)
			}
			continue
		}
		for _, w := range []string{"CUDA out of memory", "Tried to allocate 16.00 MiB", "total capacity of 8.00 MiB", "reserved by PyTorch"} {
			if !strings.Contains(s.ErrText(), w) {
				t.Errorf("line %d: error %q does not say %q", s.Line, s.Err, w)
			}
		}
		after := e.State()
		after.Step--
		after.Counters.Errors--
		if !reflect.DeepEqual(before, after) {
			t.Errorf("line %d failed but changed the state:\n%s", s.Line, stateDiff(before, after))
		}
	}
	if v, err := e.Values("out2"); err != nil || !reflect.DeepEqual(v, []float32{2, 2, 2, 2}) {
		t.Errorf("out2 = %v, %v after the failed records; want [2 2 2 2]", v, err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v", d)
	}
}

// TestEagerRebindIsNotInPlace is a regression test: "x = f(x)" as an eager
// record binds a new tensor to x, as Python does. The engine used to run
// it as a body whose out names a parameter, which writes into the input in
// place, so every alias of the old x (a view, another name) changed too.
func TestEagerRebindIsNotInPlace(t *testing.T) {
	tr := traces.NewBuilder("rebind").
		TensorValues("x", []int{3}, []float64{1, 2, 3}).
		Eager(traces.Stmt{Out: "v", K: "view", A: "x"}).
		Eager(traces.S("x", "neg", "x", nil)).
		Eager(traces.S("x", "sum", "x", nil)). // a new shape: in place it could not run at all
		Trace()
	if ps := tr.Check(); len(ps) > 0 {
		t.Fatal(ps)
	}
	var errs []string
	e, err := engine.RunTrace(context.Background(), tr, engine.Options{Devices: simDevices(1), Check: true}, func(s *engine.Step) bool {
		if s.Err != nil {
			errs = append(errs, s.ErrText())
		}
		return true
	})
	if err != nil || len(errs) > 0 {
		t.Fatal(err, errs)
	}
	for name, want := range map[string][]float32{"v": {1, 2, 3}, "x": {-6}} {
		if got, err := e.Values(name); err != nil || !sameValues(got, want) {
			t.Errorf("%s = %v, %v; want %v", name, got, err, want)
		}
	}
}
