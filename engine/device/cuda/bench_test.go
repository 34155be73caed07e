//go:build cuda

package cuda

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/engine/device/devicetest"
	"github.com/cgtviz/cgtviz/traces/ops"
)

// The GPU benchmarks of the device, all named BenchmarkGPU... so that
// -test.bench GPU runs them (tools/gpu/gpu.sh bench). BenchmarkLockedHandoff
// (handoff_test.go) needs no GPU.

// oneKernelGraph captures one small kernel on the side stream and
// instantiates it.
func oneKernelGraph(tb testing.TB, d *Device) device.ExecHandle {
	tb.Helper()
	p := devicetest.Alloc(tb, d, 256)
	l := device.Launch{K: ops.Add, Out: p, A: p, BKind: ops.BScalar, Scalar: 1, N: 256}
	if err := d.BeginCapture(device.SideStream); err != nil {
		tb.Fatal(err)
	}
	if err := d.Launch(device.SideStream, &l); err != nil {
		tb.Fatal(err)
	}
	g, err := d.EndCapture(device.SideStream)
	if err != nil {
		tb.Fatal(err)
	}
	e, err := d.Instantiate(g)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		for _, err := range []error{d.Synchronize(), d.DestroyExec(e), d.DestroyGraph(g)} {
			if err != nil {
				tb.Error(err)
			}
		}
	})
	return e
}

// lockedLoop runs op b.N times on a goroutine locked to its thread with the
// context current, then waits for the device.
func lockedLoop(b *testing.B, d *Device, op func() error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := d.bindThread(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := op(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if err := d.Synchronize(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkGPUGraphLaunch replays a one-kernel graph: "bare" is
// cuGraphLaunch alone on a locked thread, "device" is LaunchGraph (the
// context check and the handle check on top); "-sync" waits for the
// replay after every launch.
func BenchmarkGPUGraphLaunch(b *testing.B) {
	d := open(b)
	e := oneKernelGraph(b, d)
	cases := []struct {
		name string
		op   func() error
	}{
		{"bare", func() error { return d.rawGraphLaunch(e, device.SideStream) }},
		{"bare-sync", func() error {
			if err := d.rawGraphLaunch(e, device.SideStream); err != nil {
				return err
			}
			return d.rawStreamSync(device.SideStream)
		}},
		{"device", func() error { return d.LaunchGraph(e, device.SideStream) }},
		{"device-sync", func() error {
			if err := d.LaunchGraph(e, device.SideStream); err != nil {
				return err
			}
			return d.rawStreamSync(device.SideStream)
		}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) { lockedLoop(b, d, c.op) })
	}
}

// BenchmarkGPULaunchPaths looks for the gap between a bare cuGraphLaunch
// from Go (2.7 us on the H200, issue 16) and PyTorch's CUDAGraph.replay()
// (2.4 us): the same one-kernel graph launched raw (no context check, no
// Go work) on each kind of stream (the device's non-blocking one, a
// created blocking one, the legacy and the per-thread default streams),
// with and without cuGraphUpload beforehand, each without and with a
// stream synchronize per launch. PyTorch replays on its current stream
// (the legacy default stream unless a side stream is set) through
// cudaGraphLaunch, which is cuGraphLaunch behind the runtime's own checks.
// The device's launch is already one direct cgo call (gorgonia.org/cu has
// no graph API), so "gorgonia vs cgo" is not a path here; BenchmarkGPUCgo
// measures what a cgo call itself costs.
func BenchmarkGPULaunchPaths(b *testing.B) {
	d := open(b)
	e := oneKernelGraph(b, d)
	for _, kind := range []string{benchDeviceStream, benchBlocking, benchLegacy, benchPerThread} {
		for _, upload := range []bool{false, true} {
			for _, sync := range []bool{false, true} {
				name := kind
				if upload {
					name += "/uploaded"
				}
				if sync {
					name += "/sync"
				}
				b.Run(name, func(b *testing.B) {
					s, err := d.newBenchStream(kind)
					if err != nil {
						b.Fatal(err)
					}
					defer func() {
						if err := d.freeBenchStream(s); err != nil {
							b.Error(err)
						}
					}()
					if upload {
						if err := d.uploadGraph(e, s); err != nil {
							b.Fatal(err)
						}
					}
					lockedLoop(b, d, func() error {
						if err := d.rawLaunchOn(e, s); err != nil {
							return err
						}
						if sync {
							return d.rawSyncOn(s)
						}
						return nil
					})
				})
			}
		}
	}
}

// BenchmarkGPUCgo is the floor of any call from Go into the driver: one
// cgo call that makes the (already current) context current.
func BenchmarkGPUCgo(b *testing.B) {
	d := open(b)
	lockedLoop(b, d, d.bindThread)
}

// BenchmarkGPUKernelLaunch launches one elementwise kernel per iteration,
// with and without a wait for it.
func BenchmarkGPUKernelLaunch(b *testing.B) {
	d := open(b)
	p := devicetest.Alloc(b, d, 1024)
	l := device.Launch{K: ops.Add, Out: p, A: p, BKind: ops.BScalar, Scalar: 1, N: 1024}
	b.Run("nosync", func(b *testing.B) {
		lockedLoop(b, d, func() error { return d.Launch(device.DefaultStream, &l) })
	})
	b.Run("sync", func(b *testing.B) {
		lockedLoop(b, d, func() error {
			if err := d.Launch(device.DefaultStream, &l); err != nil {
				return err
			}
			return d.rawStreamSync(device.DefaultStream)
		})
	})
}

// BenchmarkGPUCopyDtoD is the copy of a replay's input into its static buffer.
func BenchmarkGPUCopyDtoD(b *testing.B) {
	d := open(b)
	p, q := devicetest.Alloc(b, d, 1024), devicetest.Alloc(b, d, 1024)
	lockedLoop(b, d, func() error { return d.CopyDtoD(device.SideStream, p, q, 1024) })
}

// BenchmarkGPUHostCopies are an upload (through the pinned staging buffer,
// between the streams' fences) and a download, as a tensor record and a
// read record make them.
func BenchmarkGPUHostCopies(b *testing.B) {
	d := open(b)
	for _, n := range []int{1024, 1 << 20} {
		p := devicetest.Alloc(b, d, n)
		vals := make([]float32, n)
		b.Run(fmt.Sprintf("upload/%d", n), func(b *testing.B) {
			lockedLoop(b, d, func() error { return d.CopyHtoD(p, vals) })
		})
		b.Run(fmt.Sprintf("download/%d", n), func(b *testing.B) {
			lockedLoop(b, d, func() error { return d.CopyDtoH(vals, p) })
		})
	}
}

// BenchmarkGPUSnapshot is the cost of time travel: a snapshot of a pool of
// segments (a device-to-device copy of each), a snapshot and its restore,
// and a turn of two clones on the GPU (the contents saved and put back).
func BenchmarkGPUSnapshot(b *testing.B) {
	for _, mib := range []int{2, 64} {
		d := open(b)
		for range 4 {
			p := devicetest.Alloc(b, d, mib<<20/4/4)
			if err := d.CopyHtoD(p, make([]float32, mib<<20/4/4)); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(fmt.Sprintf("snapshot/%dMiB", mib), func(b *testing.B) {
			b.SetBytes(d.SnapshotBytes())
			lockedLoop(b, d, func() error {
				d.Snapshot()
				return nil
			})
		})
		b.Run(fmt.Sprintf("snapshot-restore/%dMiB", mib), func(b *testing.B) {
			b.SetBytes(d.SnapshotBytes())
			lockedLoop(b, d, func() error { return d.Restore(d.Snapshot()) })
		})
		c, err := d.CloneDevice()
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("clone-turn/%dMiB", mib), func(b *testing.B) {
			b.SetBytes(d.SnapshotBytes())
			lockedLoop(b, d, func() error {
				if err := c.Synchronize(); err != nil {
					return err
				}
				// An empty copy on each in turn makes each take the GPU
				// (use activates before the count is looked at).
				if err := c.CopyDtoD(device.DefaultStream, 0, 0, 0); err != nil {
					return err
				}
				return d.CopyDtoD(device.DefaultStream, 0, 0, 0)
			})
		})
		if err := c.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
