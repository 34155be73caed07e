package engine

import (
	"errors"

	"github.com/cgtviz/cgtviz/engine/device"
)

// This file orders the device's two streams as CUDAGraph Trees does. The
// tree warms up and captures on its own stream (the manager's self.stream,
// device.SideStream here) and everything else (eager calls, copies out of
// the pool, replays, a recording's first one too: CUDAGraph.replay() runs
// on the current stream) runs on the default stream. A capture runs
// nothing, so only a warmup needs waits: _use_cuda_memory_pool_manager
// makes the tree's stream wait for the current one before it and the
// current one wait for the tree's after it (and the warmup synchronizes
// after that). Without them a GPU runs the two streams' work in either
// order: the simulated device checks it (device/sim/order.go).

// enterTreeStream makes the tree's stream wait for the default stream's
// work (stream.wait_stream(torch.cuda.current_stream())).
func (m *manager) enterTreeStream() error {
	return m.ds.dev.WaitStream(device.SideStream, device.DefaultStream)
}

// leaveTreeStream makes the default stream wait for the tree's stream
// (torch.cuda.current_stream().wait_stream(stream)). It runs after a
// failure too, joined to it: what the tree's stream did before it failed
// comes before what runs next.
func (m *manager) leaveTreeStream(err error) error {
	return errors.Join(err, m.ds.dev.WaitStream(device.DefaultStream, device.SideStream))
}
