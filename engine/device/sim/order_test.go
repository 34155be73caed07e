package sim

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/traces/ops"
)

// TestStreamOrder: work on one stream that touches memory the other
// stream touched, with no wait between them and one of them writing, is a
// *StreamOrderError; a wait in the right direction, a host copy, a
// synchronize or a restore orders them.
func TestStreamOrder(t *testing.T) {
	const n = 4
	add := func(out, a device.Ptr) device.Launch {
		return device.Launch{K: ops.Add, Out: out, A: a, BKind: ops.BScalar, Scalar: 1, N: n}
	}
	type env struct {
		d       *Device
		x, y, z device.Ptr // three buffers of n floats in one segment
	}
	for _, tc := range []struct {
		name string
		run  func(e env) error
		race bool
	}{
		{"read after write, no wait", func(e env) error {
			launch(t, e.d, 0, add(e.x, e.y))
			l := add(e.z, e.x)
			return e.d.Launch(1, &l)
		}, true},
		{"read after write, the reader waited", func(e env) error {
			launch(t, e.d, 0, add(e.x, e.y))
			if err := e.d.WaitStream(1, 0); err != nil {
				return err
			}
			l := add(e.z, e.x)
			return e.d.Launch(1, &l)
		}, false},
		{"read after write, the writer waited (the wrong way)", func(e env) error {
			launch(t, e.d, 0, add(e.x, e.y))
			if err := e.d.WaitStream(0, 1); err != nil {
				return err
			}
			l := add(e.z, e.x)
			return e.d.Launch(1, &l)
		}, true},
		{"write after read", func(e env) error {
			launch(t, e.d, 0, add(e.z, e.x))
			l := add(e.x, e.y)
			return e.d.Launch(1, &l)
		}, true},
		{"write after write, by a copy", func(e env) error {
			launch(t, e.d, 1, add(e.x, e.y))
			return e.d.CopyDtoD(0, e.x, e.z, n)
		}, true},
		{"reads on both streams", func(e env) error {
			launch(t, e.d, 0, add(e.z, e.x))
			l := add(e.y, e.x)
			return e.d.Launch(1, &l)
		}, false},
		{"disjoint buffers", func(e env) error {
			launch(t, e.d, 0, add(e.x, e.x))
			l := add(e.z, e.y)
			return e.d.Launch(1, &l)
		}, false},
		{"a host copy between", func(e env) error {
			launch(t, e.d, 0, add(e.x, e.y))
			read(t, e.d, e.z, n)
			l := add(e.z, e.x)
			return e.d.Launch(1, &l)
		}, false},
		{"synchronize between", func(e env) error {
			launch(t, e.d, 0, add(e.x, e.y))
			if err := e.d.Synchronize(); err != nil {
				return err
			}
			l := add(e.z, e.x)
			return e.d.Launch(1, &l)
		}, false},
		{"a restore between", func(e env) error {
			snap := e.d.Snapshot()
			launch(t, e.d, 0, add(e.x, e.y))
			if err := e.d.Restore(snap); err != nil {
				return err
			}
			l := add(e.z, e.x)
			return e.d.Launch(1, &l)
		}, false},
		{"a captured launch touches nothing", func(e env) error {
			if err := e.d.BeginCapture(0); err != nil {
				return err
			}
			launch(t, e.d, 0, add(e.x, e.y))
			if _, err := e.d.EndCapture(0); err != nil {
				return err
			}
			l := add(e.z, e.x)
			return e.d.Launch(1, &l)
		}, false},
		{"a graph's node reads what the other stream wrote", func(e env) error {
			if err := e.d.BeginCapture(1); err != nil {
				return err
			}
			launch(t, e.d, 1, add(e.z, e.x))
			g, err := e.d.EndCapture(1)
			if err != nil {
				return err
			}
			x, err := e.d.Instantiate(g)
			if err != nil {
				return err
			}
			launch(t, e.d, 0, add(e.x, e.y))
			return e.d.LaunchGraph(x, 1)
		}, true},
		{"a long run on one stream, then a read of its first write", func(e env) error {
			return longRun(e.d, e.x, e.y, 1, func() error {
				l := add(e.z, e.x) // x: written first, kept through the merges
				return e.d.Launch(1, &l)
			})
		}, true},
		{"a long run of ranges that do not merge, then a read of its first write", func(e env) error {
			return longRun(e.d, e.x, e.y, 2, func() error {
				l := add(e.z, e.x)
				return e.d.Launch(1, &l)
			})
		}, true},
		{"a long run on one stream, then a read of what it only read", func(e env) error {
			return longRun(e.d, e.x, e.y, 2, func() error {
				l := add(e.z, e.y) // y: only read, z: untouched
				return e.d.Launch(1, &l)
			})
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := New(Options{})
			p := malloc(t, d, 3*n*4)
			e := env{d: d, x: p, y: p + 4*n, z: p + 8*n}
			write(t, d, p, make([]float32, 3*n)...)
			before := read(t, d, p, 3*n)
			err := tc.run(e)
			var oe *StreamOrderError
			switch {
			case !tc.race && err != nil:
				t.Fatalf("want no error, got %v", err)
			case tc.race && !errors.As(err, &oe):
				t.Fatalf("want a *StreamOrderError, got %v", err)
			case tc.race && !errors.Is(err, ErrStreamOrder):
				t.Fatalf("%v does not match ErrStreamOrder", err)
			}
			if tc.race && tc.name == "read after write, no wait" {
				// The refused launch wrote nothing: z is as the host left it.
				if got := read(t, d, e.z, n); got[0] != before[2*n] {
					t.Errorf("a refused launch wrote z: %v", got)
				}
			}
		})
	}
}

// longRun writes x from y on stream 0, then launches fills of one element
// each, stride elements apart, at more places than a stream keeps before
// it merges them (compactAt), then runs then. Adjacent fills (stride 1)
// merge into one range.
func longRun(d *Device, x, y device.Ptr, stride int, then func() error) error {
	l := device.Launch{K: ops.Add, Out: x, A: y, BKind: ops.BScalar, Scalar: 1, N: 4}
	if err := d.Launch(0, &l); err != nil {
		return err
	}
	const many = 3 * compactAt
	w, err := d.MallocSegment(int64(4 * stride * many))
	if err != nil {
		return err
	}
	for i := range many {
		f := device.Launch{K: ops.Fill, Out: w + device.Ptr(4*stride*i), Scalar: 1, N: 1}
		if err := d.Launch(0, &f); err != nil {
			return err
		}
	}
	if got := len(d.order.pending[0]); stride == 1 && got >= compactAt {
		return fmt.Errorf("stream 0 keeps %d pending accesses, want them merged below %d", got, compactAt)
	}
	return then()
}
