package engine

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/cgtviz/cgtviz/engine/alloc"
	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/engine/device/sim"
	"github.com/cgtviz/cgtviz/traces"
)

// tableDump is the tensor table as values: what a rollback must give back.
type tableDump struct {
	Tensors      map[int]Tensor
	Storages     map[int]Storage
	Names        map[string]int
	NextT, NextS int
}

func dumpTable(tt *tensorTable) tableDump {
	d := tableDump{Tensors: map[int]Tensor{}, Storages: map[int]Storage{}, Names: map[string]int{}, NextT: tt.nextT, NextS: tt.nextS}
	for id, t := range tt.tensors.all() {
		v := *t
		v.kept = 0 // the journal's stamp, not state
		v.Shape = append([]int(nil), t.Shape...)
		d.Tensors[id] = v
	}
	for id, s := range tt.storages.all() {
		v := *s
		v.kept = 0
		d.Storages[id] = v
	}
	for n, id := range tt.names {
		d.Names[n] = id
	}
	return d
}

// allocDump is what the allocator shows of itself: its segments and
// blocks, stats, pools and event log.
type allocDump struct {
	Segments   []alloc.Segment
	Stats      alloc.Stats
	Default    alloc.Stats
	Pools      []alloc.PoolID
	PoolStats  []alloc.Stats
	UseCounts  []int
	Trace      []alloc.TraceEntry
	Dropped    int64
	NewPoolGap alloc.PoolID
}

func dumpAlloc(a *alloc.Allocator) allocDump {
	d := allocDump{Segments: a.Segments(), Stats: a.Stats(), Default: a.PoolStats(alloc.DefaultPool), Pools: a.Pools(), Trace: a.Trace(), Dropped: a.TraceDropped()}
	for _, id := range d.Pools {
		d.PoolStats = append(d.PoolStats, a.PoolStats(id))
		n, _ := a.PoolUseCount(id)
		d.UseCounts = append(d.UseCounts, n)
	}
	return d
}

// withoutOOMs is d less what an out-of-memory error keeps on purpose, as
// PyTorch does: its trace entry and the NumOOMs counts.
func withoutOOMs(d allocDump) allocDump {
	d.Stats.NumOOMs, d.Default.NumOOMs = 0, 0
	d.PoolStats = append([]alloc.Stats(nil), d.PoolStats...)
	for i := range d.PoolStats {
		d.PoolStats[i].NumOOMs = 0
	}
	var tr []alloc.TraceEntry
	for _, e := range d.Trace {
		if e.Action != alloc.ActionOOM {
			tr = append(tr, e)
		}
	}
	d.Trace, d.Dropped = tr, 0
	return d
}

// everyOther returns call numbers 1..n, at most k of them, spread out.
func everyOther(n, k int) []int {
	var out []int
	step := max(1, n/k)
	for i := 1; i <= n; i += step {
		out = append(out, i)
	}
	return out
}

// TestJournalRollback fails records with injected device faults, with the
// invariant checker off (so that the rollback journals begin where a
// record first changes more than the light fields, as in a plain run),
// and checks that a failed record leaves the tensor table, the allocators
// and the defs exactly as they were: the undo logs that replaced copying
// them must miss no change.
func TestJournalRollback(t *testing.T) {
	trs := testTraces(t, 8, "../examples/*.cgt.jsonl", "testdata/*.cgt.jsonl")
	ops := []sim.FaultOp{sim.FaultMalloc, sim.FaultLaunch, sim.FaultCapture, sim.FaultGraphLaunch, sim.FaultCopy}
	newRun := func(tr *traces.Trace) (*Engine, *sim.Device) {
		devs := make([]device.Device, max(1, tr.Header.Devices))
		for i := range devs {
			devs[i] = sim.New(sim.Options{})
		}
		e, err := New(tr.Header, Options{Devices: devs, File: tr.File})
		if err != nil {
			t.Fatal(err)
		}
		return e, devs[0].(*sim.Device)
	}
	failed := 0
	for _, tr := range trs {
		ref, refDev := newRun(tr)
		for i := range tr.Records {
			ref.Apply(&tr.Records[i])
		}
		for _, op := range ops {
			for _, n := range everyOther(refDev.Calls(op), 6) {
				name := fmt.Sprintf("%s/%s@%d", filepath.Base(tr.File), op, n)
				e, dev := newRun(tr)
				if err := dev.InjectFault(op, n); err != nil {
					t.Fatal(err)
				}
				// The dispatch entries a failed record wrote are undone
				// with it: every later call they answer is checked.
				hits := 0
				dispatchChecker(t, e, name, &hits)
				for i := range tr.Records {
					rec := &tr.Records[i]
					tb := dumpTable(e.tt)
					var ab []allocDump
					for _, ds := range e.devs {
						ab = append(ab, dumpAlloc(ds.alloc))
					}
					defs := len(e.defs)
					s := e.Apply(rec)
					if s.Err == nil || rec.Op == traces.OpExpect {
						continue
					}
					failed++
					if ta := dumpTable(e.tt); !reflect.DeepEqual(tb, ta) {
						t.Fatalf("%s: line %d (%s) failed (%v) and changed the tensor table:\nbefore %+v\nafter  %+v", name, rec.Line, rec.Op, s.Err, tb, ta)
					}
					var oom *alloc.OutOfMemoryError
					isOOM := errors.As(s.Err, &oom)
					for d, ds := range e.devs {
						aa := dumpAlloc(ds.alloc)
						if isOOM {
							ab[d], aa = withoutOOMs(ab[d]), withoutOOMs(aa)
						}
						if !reflect.DeepEqual(ab[d], aa) {
							x, y := reflect.ValueOf(ab[d]), reflect.ValueOf(aa)
							for f := 0; f < x.NumField(); f++ {
								if !reflect.DeepEqual(x.Field(f).Interface(), y.Field(f).Interface()) {
									t.Errorf("allocDump.%s differs", x.Type().Field(f).Name)
								}
							}
							t.Fatalf("%s: line %d (%s) failed (%v) and changed device %d's allocator:\nbefore %+v\nafter  %+v", name, rec.Line, rec.Op, s.Err, d, ab[d], aa)
						}
					}
					if len(e.defs) != defs {
						t.Fatalf("%s: line %d (%s) failed and left %d defs, not %d", name, rec.Line, rec.Op, len(e.defs), defs)
					}
				}
			}
		}
	}
	if failed == 0 {
		t.Fatal("no record failed: the faults never fired")
	}
	t.Logf("%d traces, %d failed records rolled back", len(trs), failed)
}
