package sim

import (
	"reflect"
	"testing"

	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/traces/ops"
)

// TestMarkUndo runs the whole script to a mark, changes the device in one
// way per case, and undoes: the device is exactly as at the mark (every
// observable part, contents included), a snapshot or a clone taken while
// the mark was open keeps what it saw, and the device works on.
func TestMarkUndo(t *testing.T) {
	tests := []struct {
		name string
		// during changes the device while the mark is open; it may return
		// a check to run after Undo (of a snapshot or a clone it made).
		during func(t *testing.T, d *Device, sc *script) func(t *testing.T)
	}{
		{"nothing", func(t *testing.T, d *Device, sc *script) func(t *testing.T) { return nil }},
		{"writes in place, twice to one span", func(t *testing.T, d *Device, sc *script) func(t *testing.T) {
			write(t, d, sc.p, 9, 9)
			write(t, d, sc.p+4, 7, 7, 7)
			launch(t, d, 0, device.Launch{K: ops.Neg, Out: sc.p, A: sc.p, N: 4})
			return nil
		}},
		{"a write that grows a segment's data", func(t *testing.T, d *Device, sc *script) func(t *testing.T) {
			write(t, d, sc.p+4000, 5, 5, 5)
			write(t, d, sc.p, 8)
			return nil
		}},
		{"an untouched segment written", func(t *testing.T, d *Device, sc *script) func(t *testing.T) {
			write(t, d, sc.r, 1, 1, 1)
			return nil
		}},
		{"new segment, freed segment", func(t *testing.T, d *Device, sc *script) func(t *testing.T) {
			p := malloc(t, d, 4096)
			write(t, d, p, 3)
			if err := d.FreeSegment(sc.p); err != nil {
				t.Fatal(err)
			}
			return nil
		}},
		{"a graph captured, instantiated, replayed, destroyed", func(t *testing.T, d *Device, sc *script) func(t *testing.T) {
			_, e := captureOne(t, d, 1, device.Launch{K: ops.Add, Out: sc.r, A: sc.p, B: sc.p, N: 3})
			if err := d.LaunchGraph(e, 0); err != nil {
				t.Fatal(err)
			}
			if err := d.DestroyExec(sc.e); err != nil {
				t.Fatal(err)
			}
			return nil
		}},
		{"a snapshot between writes", func(t *testing.T, d *Device, sc *script) func(t *testing.T) {
			write(t, d, sc.p, 6, 6)
			snap := d.Snapshot().(*snapshot)
			want := dumpSnap(snap)
			write(t, d, sc.p, 4, 4, 4)
			write(t, d, sc.r, 2)
			return func(t *testing.T) {
				if got := dumpSnap(snap); !reflect.DeepEqual(got, want) {
					t.Fatalf("Undo changed a snapshot taken under the mark:\ngot  %v\nwant %v", got, want)
				}
			}
		}},
		{"a clone between writes", func(t *testing.T, d *Device, sc *script) func(t *testing.T) {
			write(t, d, sc.p, 6, 6)
			c := d.Clone()
			want := dump(c)
			write(t, d, sc.p, 4, 4, 4)
			return func(t *testing.T) {
				if got := dump(c); !reflect.DeepEqual(got, want) {
					t.Fatalf("Undo changed a clone made under the mark:\ngot  %+v\nwant %+v", got, want)
				}
				write(t, c, sc.p, 1) // the clone has no mark of its own
				if c.txn != nil {
					t.Fatal("a clone journals its original's mark")
				}
			}
		}},
		{"a fault pending", func(t *testing.T, d *Device, sc *script) func(t *testing.T) {
			if err := d.InjectFault(FaultCopy, 1); err != nil {
				t.Fatal(err)
			}
			return nil
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := New(Options{TotalBytes: 64 * 1 << 20})
			var sc script
			for i, step := range sc.steps() {
				if err := step(d); err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
			}
			before := dump(d)
			m := d.Mark()
			if !reflect.DeepEqual(before, dump(d)) {
				t.Fatal("Mark changed the state")
			}
			after := tc.during(t, d, &sc)
			if err := d.Undo(m); err != nil {
				t.Fatal(err)
			}
			if got := dump(d); !reflect.DeepEqual(got, before) {
				t.Fatalf("Undo differs:\nbefore %+v\nafter  %+v", before, got)
			}
			if after != nil {
				after(t)
			}
			if d.txn != nil {
				t.Fatal("the journal is still open after Undo")
			}
			// The device works on, and a second mark undoes as well.
			m = d.Mark()
			write(t, d, sc.r, 4, 4, 4)
			if got := read(t, d, sc.r, 3); !reflect.DeepEqual(got, []float32{4, 4, 4}) {
				t.Fatalf("read after a write under a second mark: %v", got)
			}
			if err := d.Undo(m); err != nil {
				t.Fatal(err)
			}
			if got := dump(d); !reflect.DeepEqual(got, before) {
				t.Fatalf("second Undo differs:\nbefore %+v\nafter  %+v", before, got)
			}
		})
	}
}

// TestMarkCommit: a committed mark keeps what was done under it, writes
// after it are not journaled, and its Undo fails (and breaks the device
// until a good Restore, as a bad Restore does); so does the Undo of a mark
// that a Restore or a newer Mark overtook.
func TestMarkCommit(t *testing.T) {
	d := New(Options{})
	p := malloc(t, d, 64)
	write(t, d, p, 1, 2)
	good := d.Snapshot()
	m := d.Mark()
	write(t, d, p, 3)
	d.Commit(m)
	write(t, d, p+4, 5)
	if d.txn != nil {
		t.Fatal("a mark is open after Commit")
	}
	if got := read(t, d, p, 2); !reflect.DeepEqual(got, []float32{3, 5}) {
		t.Fatalf("after Commit: %v, want [3 5]", got)
	}
	wantErr(t, d.Undo(m), "not this device's open one")
	wantErr(t, d.CopyHtoD(p, []float32{1}), "not this device's open one")
	if err := d.Restore(good); err != nil {
		t.Fatal(err)
	}
	m = d.Mark()
	if err := d.Restore(good); err != nil {
		t.Fatal(err)
	}
	wantErr(t, d.Undo(m), "not this device's open one")
	if err := d.Restore(good); err != nil {
		t.Fatal(err)
	}
	m = d.Mark()
	d.Mark()
	wantErr(t, d.Undo(m), "not this device's open one")
	wantErr(t, d.Undo(42), "is not a mark")
}

// BenchmarkMarkWriteUndo is BenchmarkSnapshotWriteRestore with a mark: the
// engine's pattern around a risky record.
func BenchmarkMarkWriteUndo(b *testing.B) {
	benchWriteBack(b, (*Device).Mark, (*Device).Undo)
}
