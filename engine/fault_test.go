package engine_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/engine/device/sim"
	"github.com/cgtviz/cgtviz/traces"
	"github.com/cgtviz/cgtviz/traces/gen"
)

// faultTraces returns the traces TestFaults injects faults into: every
// example, and a few generated traces (which reach paths the examples do
// not: re-records, views, in-place writes, overwritten outputs).
func faultTraces(t *testing.T) []*traces.Trace {
	t.Helper()
	files, err := filepath.Glob("../examples/*.cgt.jsonl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	var out []*traces.Trace
	for _, f := range files {
		tr, err := traces.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tr)
	}
	n := 12
	if testing.Short() {
		n = 4
	}
	for seed := int64(1); seed <= int64(n); seed++ {
		out = append(out, gen.Trace(1000+seed, gen.Options{Records: 100}))
	}
	return out
}

// faultOps are the device calls a fault can be injected into.
var faultOps = []sim.FaultOp{sim.FaultMalloc, sim.FaultLaunch, sim.FaultCapture, sim.FaultGraphLaunch, sim.FaultCopy}

// faultsPerOp is K: how many of an op's calls in a trace get a fault, one
// run each, spread over the trace (all of them when there are at most K).
func faultsPerOp() int {
	if testing.Short() {
		return 4
	}
	return 10
}

// TestFaults injects one device failure at a time (each op, at K call
// numbers spread over each trace) and checks the engine's promise: the
// record during which the fault fires either fails with a clear error (an
// out-of-memory error with the allocator's statistics for malloc, the
// injected failure for the others) and leaves the complete State exactly
// as before the record, or absorbs it (the allocator frees its cache and
// retries a failed malloc, as PyTorch does); no record raises an internal
// error or breaks an invariant (Check is on); and the run goes on: the
// fault fires once, later records apply.
func TestFaults(t *testing.T) {
	var total struct{ runs, fired, failed, absorbed, records, later int }
	for _, tr := range faultTraces(t) {
		// A fault-free run gives, per op, the calls made after each record.
		ref := newFaultRun(t, tr)
		calls := make([][]int, len(tr.Records))
		for i := range tr.Records {
			ref.e.Apply(&tr.Records[i])
			for _, op := range faultOps {
				calls[i] = append(calls[i], ref.dev.Calls(op))
			}
		}
		for oi, op := range faultOps {
			last := calls[len(calls)-1][oi]
			for _, n := range spread(last, faultsPerOp()) {
				// The record during which call n of op happens.
				at := 0
				for calls[at][oi] < n {
					at++
				}
				name := fmt.Sprintf("%s/%s@%d", filepath.Base(tr.File), op, n)
				r := newFaultRun(t, tr)
				if err := r.dev.InjectFault(op, n); err != nil {
					t.Fatal(err)
				}
				total.runs++
				for i := range tr.Records {
					var before *engine.State
					var mem map[string][]float32
					if i == at {
						before, mem = r.e.State(), memory(t, r.e)
					}
					s := r.e.Apply(&tr.Records[i])
					total.records++
					if s.Err != nil && (s.Err.Kind == engine.ErrInternal || s.Err.Kind == engine.ErrInvariant) {
						t.Fatalf("%s: line %d: %s", name, s.Line, s.Err)
					}
					switch {
					case i == at:
						total.fired++
						if tr.Records[i].Op == traces.OpExpect {
							// An expect never fails its record: a value
							// it could not read is a failed expectation.
							if !strings.Contains(strings.Join(s.ExpectMessages(), "\n"), "injected fault: "+op.String()) {
								t.Fatalf("%s: line %d: expect failures %q do not name the fault", name, s.Line, s.ExpectFailures)
							}
							total.failed++
							after := r.e.State()
							after.Step--
							if !reflect.DeepEqual(before, after) {
								t.Fatalf("%s: line %d: an expect changed the state:\n%s", name, s.Line, stateDiff(before, after))
							}
							continue
						}
						if s.Err == nil {
							total.absorbed++
							if op != sim.FaultMalloc {
								t.Fatalf("%s: line %d: the %s failure fired and the record succeeded", name, s.Line, op)
							}
							continue
						}
						total.failed++
						checkFaultError(t, name, op, s.ErrText())
						after := r.e.State()
						// A failed record counts: it is a step, and an error.
						after.Step--
						after.Counters.Errors--
						if !reflect.DeepEqual(clearHighlights(before), clearHighlights(after)) {
							t.Fatalf("%s: line %d failed (%s) but changed the state:\n%s", name, s.Line, s.Err, stateDiff(before, after))
						}
						if m := memory(t, r.e); !sameMemory(mem, m) {
							t.Fatalf("%s: line %d failed (%s) but changed the memory of named tensors:\n%v\n%v", name, s.Line, s.Err, mem, m)
						}
					case i > at:
						total.later++
						if strings.Contains(s.ErrText(), "injected fault") || (op == sim.FaultMalloc && strings.Contains(s.ErrText(), "out of memory")) {
							t.Fatalf("%s: line %d: the fault fired again after line %d: %s", name, s.Line, tr.Records[at].Line, s.Err)
						}
					}
				}
			}
		}
	}
	if total.failed == 0 || total.fired != total.runs {
		t.Errorf("faults: %d runs, %d fired, %d failed a record", total.runs, total.fired, total.failed)
	}
	t.Logf("faults: %d traces x %d ops: %d faults injected, %d fired, %d failed their record with the state unchanged, %d absorbed by the allocator's retry, %d records run (%d after a fault)",
		len(faultTraces(t)), len(faultOps), total.runs, total.fired, total.failed, total.absorbed, total.records, total.later)
}

// memory returns what the memory of every named tensor holds, stale ones
// included (RawValues): a failed record must not have written any of it.
// It reads a clone, so that its copies are not counted by the device (they
// would move the injected fault).
func memory(t *testing.T, e *engine.Engine) map[string][]float32 {
	t.Helper()
	c, err := e.Clone()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]float32{}
	for _, n := range c.Names() {
		v, err := c.RawValues(n)
		if errors.Is(err, sim.ErrInjected) {
			// The clone has the pending fault too: it fired here, once.
			v, err = c.RawValues(n)
		}
		if err == nil {
			out[n] = v
		}
	}
	return out
}

// sameMemory compares two memory maps, NaN equal to NaN.
func sameMemory(a, b map[string][]float32) bool {
	if len(a) != len(b) {
		return false
	}
	for n, v := range a {
		if w, ok := b[n]; !ok || !sameValues(v, w) {
			return false
		}
	}
	return true
}

// clearHighlights clears, in a copy of st, the block flags InCheckpoint
// and CheckpointNew: they mark what a checkpoint in the last record
// changed (a highlight for the UI, which keeps older checkpoints from the
// events), so every record, a failed one included, turns them off. All
// else in a State is compared.
func clearHighlights(st *engine.State) *engine.State {
	c := *st
	c.Devices = append([]engine.DeviceState(nil), st.Devices...)
	for i := range c.Devices {
		d := &c.Devices[i]
		for _, p := range []*engine.PoolView{&d.Pool, &d.Default} {
			segs := append([]engine.SegmentView(nil), p.Segments...)
			for j := range segs {
				blocks := append([]engine.BlockView(nil), segs[j].Blocks...)
				for k := range blocks {
					blocks[k].InCheckpoint, blocks[k].CheckpointNew = false, false
				}
				segs[j].Blocks = blocks
			}
			p.Segments = segs
		}
	}
	return &c
}

// checkFaultError checks that a failed record's error says what failed:
// an out-of-memory error carries the allocator's statistics, as PyTorch's
// does, so that a user can see why.
func checkFaultError(t *testing.T, name string, op sim.FaultOp, msg string) {
	t.Helper()
	want := []string{"injected fault: " + op.String()}
	if op == sim.FaultMalloc {
		want = []string{"CUDA out of memory", "Tried to allocate", "total capacity", "allocated by PyTorch", "reserved by PyTorch"}
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Fatalf("%s: error %q does not say %q", name, msg, w)
		}
	}
}

// spread returns up to k call numbers from 1 to n, evenly spread and
// always including 1 and n.
func spread(n, k int) []int {
	if n <= k {
		out := make([]int, n)
		for i := range out {
			out[i] = i + 1
		}
		return out
	}
	out := make([]int, 0, k)
	for i := range k {
		out = append(out, 1+i*(n-1)/(k-1))
	}
	return out
}

// faultRun is an engine on one simulated device that a test can inject
// faults into.
type faultRun struct {
	dev *sim.Device
	e   *engine.Engine
}

// On a trace of several devices, faults go to device 0.
func newFaultRun(t *testing.T, tr *traces.Trace) *faultRun {
	t.Helper()
	devs := make([]device.Device, max(1, tr.Header.Devices))
	for i := range devs {
		devs[i] = sim.New(sim.Options{})
	}
	d := devs[0].(*sim.Device)
	e, err := engine.New(tr.Header, engine.Options{Devices: devs, Check: true, File: tr.File})
	if err != nil {
		t.Fatal(err)
	}
	return &faultRun{dev: d, e: e}
}
