package devicetest

import (
	"testing"

	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/traces/ops"
)

// The tests of time travel: device.Snapshotter, device.Cloner and
// device.SnapshotSizer, on the devices that have them.

func snapshotter(t *testing.T, d device.Device) device.Snapshotter {
	t.Helper()
	s, ok := d.(device.Snapshotter)
	if !ok {
		t.Skipf("%s is not a device.Snapshotter", d.Name())
	}
	return s
}

// testSnapshotRestore snapshots a device with segments, contents, a graph
// and its exec (an input copy among its nodes), changes all of it (writes,
// a replay, a moved input copy, a freed segment, a new segment, the exec
// destroyed), and restores: contents, segments and the graph are back, the
// exec replays from the input it copied then, and a second Restore of the
// same snapshot gives the same again.
func testSnapshotRestore(t *testing.T, open Open) {
	d := open(t)
	sn := snapshotter(t, d)
	const n = 1024
	in1, in2 := put(t, d, values(11, n, -1, 1)), put(t, d, values(12, n, -1, 1))
	ph := put(t, d, make([]float32, n))
	// out is freed after the snapshot: no cleanup of its own.
	out, err := d.MallocSegment(n * 4)
	wantOK(t, "MallocSegment", err)
	upload(t, d, out, constant(n, -3))
	gr, e := capture(t, d, func() {
		wantOK(t, "CopyDtoD", d.CopyDtoD(device.SideStream, ph, in1, n))
		launch(t, d, device.SideStream, device.Launch{K: ops.Mul, Out: out, A: ph, BKind: ops.BScalar, Scalar: 2, N: n})
	})
	in1Vals, in2Vals := download(t, d, in1, n), download(t, d, in2, n)
	twice := func(xs []float32) []float32 {
		o := make([]float32, len(xs))
		for i, x := range xs {
			o[i] = 2 * x
		}
		return o
	}

	snap := sn.Snapshot()
	// Change everything.
	upload(t, d, in1, constant(n, 100))
	wantOK(t, "UpdateCopy", d.UpdateCopy(e, ph, in2, n))
	wantOK(t, "LaunchGraph", d.LaunchGraph(e, device.SideStream))
	compare(t, "replay from in2", ops.Mul, download(t, d, out, n), twice(in2Vals))
	wantOK(t, "FreeSegment(out)", d.FreeSegment(out))
	extra, err := d.MallocSegment(n * 4)
	wantOK(t, "MallocSegment after the snapshot", err)
	upload(t, d, extra, constant(n, 8))
	wantOK(t, "DestroyExec", d.DestroyExec(e))

	for round := range 2 {
		if err := sn.Restore(snap); err != nil {
			t.Fatalf("Restore %d: %v", round, err)
		}
		compare(t, "in1 restored", ops.Copy, download(t, d, in1, n), in1Vals)
		compare(t, "out restored (freed after the snapshot)", ops.Copy, download(t, d, out, n), constant(n, -3))
		// The exec is back, copying from in1 as when the snapshot was taken.
		wantOK(t, "LaunchGraph after Restore", d.LaunchGraph(e, device.SideStream))
		compare(t, "replay after Restore", ops.Mul, download(t, d, out, n), twice(in1Vals))
		if nodes, err := d.GraphNodes(gr); err != nil || len(nodes) != 2 {
			t.Errorf("GraphNodes after Restore: %d nodes, %v; want 2", len(nodes), err)
		}
		// Change again before the second round.
		upload(t, d, in1, constant(n, 7))
		upload(t, d, out, constant(n, 7))
	}
	// The segment made after the snapshot is not the restored state's.
	if err := d.FreeSegment(extra); err == nil {
		t.Error("FreeSegment of a segment made after the snapshot succeeded after Restore")
	}
	wantOK(t, "FreeSegment(out)", d.FreeSegment(out))
}

// testRestoreErrors: Restore of anything but a snapshot fails, and so does
// every later call, until a good Restore.
func testRestoreErrors(t *testing.T, open Open) {
	d := open(t)
	sn := snapshotter(t, d)
	p := put(t, d, constant(16, 2))
	good := sn.Snapshot()
	other := open(t)
	if os, ok := other.(device.Snapshotter); ok {
		if err := sn.Restore(os.Snapshot()); err == nil {
			t.Error("Restore of another device's snapshot succeeded")
		}
	}
	if err := sn.Restore(42); err == nil {
		t.Fatal("Restore(42) succeeded")
	}
	l := device.Launch{K: ops.Fill, Out: p, Scalar: 1, N: 16}
	if err := d.Launch(device.DefaultStream, &l); err == nil {
		t.Error("Launch after a failed Restore succeeded")
	}
	wantOK(t, "Restore of a good snapshot", sn.Restore(good))
	launch(t, d, device.DefaultStream, l)
	compare(t, "after the good Restore", ops.Fill, download(t, d, p, 16), constant(16, 1))
}

func cloner(t *testing.T, d device.Device) device.Cloner {
	t.Helper()
	c, ok := d.(device.Cloner)
	if !ok {
		t.Skipf("%s is not a device.Cloner", d.Name())
	}
	return c
}

func clone(t *testing.T, c device.Cloner) device.Device {
	t.Helper()
	d, err := c.CloneDevice()
	wantOK(t, "CloneDevice", err)
	t.Cleanup(func() { wantOK(t, "Close of a clone", d.Close()) })
	return d
}

// testClone: a clone starts in its original's state (same addresses, same
// contents, graphs that replay) and is independent from then on, while the
// two are used in turns, and clones of clones too.
func testClone(t *testing.T, open Open) {
	d := open(t)
	cl := cloner(t, d)
	const n = 2048
	k := newThreeKernels(t, d, n)
	_, e := k.record(t, d)
	xs := download(t, d, k.x, n)

	c := clone(t, cl)
	// The original changes its input and replays; the clone has not.
	upload(t, d, k.x, constant(n, 0.5))
	wantOK(t, "LaunchGraph on the original", d.LaunchGraph(e, device.SideStream))
	compare(t, "the clone's x", ops.Copy, download(t, c, k.x, n), xs)
	compare(t, "the clone's v (never replayed)", ops.Copy, download(t, c, k.v, n), constant(n, -7))
	// The clone replays its graph on its own x.
	wantOK(t, "LaunchGraph on the clone", c.LaunchGraph(e, device.SideStream))
	compare(t, "the clone's v", ops.Tanh, download(t, c, k.v, n), k.want(xs))
	compare(t, "the original's v", ops.Tanh, download(t, d, k.v, n), k.want(constant(n, 0.5)))
	// Each may allocate and free on its own.
	p, err := c.MallocSegment(64)
	wantOK(t, "MallocSegment on the clone", err)
	upload(t, c, p, constant(16, 4))
	if err := d.FreeSegment(p); err == nil {
		t.Error("the original freed a segment of its clone")
	}
	compare(t, "the clone's new segment", ops.Copy, download(t, c, p, 16), constant(16, 4))
	wantOK(t, "FreeSegment on the clone", c.FreeSegment(p))
	// A clone of the clone, taken while the original holds the GPU.
	compare(t, "the original's x", ops.Copy, download(t, d, k.x, n), constant(n, 0.5))
	cc := clone(t, c.(device.Cloner))
	compare(t, "the clone's clone's v", ops.Tanh, download(t, cc, k.v, n), k.want(xs))
	compare(t, "the clone's x again", ops.Copy, download(t, c, k.x, n), xs)
	compare(t, "the original's x again", ops.Copy, download(t, d, k.x, n), constant(n, 0.5))
}

// testSnapshotBytes: what one more snapshot costs grows with the contents
// and stays within the segments' bytes.
func testSnapshotBytes(t *testing.T, open Open) {
	d := open(t)
	sz, ok := d.(device.SnapshotSizer)
	if !ok {
		t.Skipf("%s is not a device.SnapshotSizer", d.Name())
	}
	const n = 1 << 16
	var segBytes int64
	for i := range 3 {
		put(t, d, values(uint64(i), n, 0, 1))
		segBytes += n * 4
	}
	got := sz.SnapshotBytes()
	// Each segment may be rounded up by an alignment below 4 KiB.
	if got < segBytes || got > segBytes+3*4096 {
		t.Errorf("SnapshotBytes = %d for 3 written segments of %d bytes, want %d..%d", got, n*4, segBytes, segBytes+3*4096)
	}
	t.Logf("SnapshotBytes = %d for %d bytes of segments", got, segBytes)
}
