// Package sim owns the simulated device: a pure-Go, deterministic
// implementation of device.Device and device.Snapshotter. It gives segments
// fake 64-bit addresses from a bump allocator that never reuses a range,
// keeps their contents as extents of symbolic content (content.go: fills,
// rand and arange inits, computed values, unknown values), so that a model
// of real size costs host memory by its records, not by its bytes, and
// computes values only where they mean something (docs/real-size.md: which
// values, and why; reading the others is device.ErrValuesUnknown). It
// bounds-checks every access, runs kernels with the CPU reference code of
// traces/ops within value limits (strided.go: over views' strides too), initialises tensors (init.go), records
// captured streams as chains of graph nodes that replay on the same
// addresses, injects faults on request for reliability tests, saves and
// restores its whole state cheaply (copy-on-write of extent lists), refuses
// work on one stream that races with the other's (order.go: the GPU would
// run them in either order, where the simulation runs each at once), and
// for the engine's rollback of one record keeps a mark (journal.go: a
// record pays for what it writes, not for what the segments hold). Its
// files read side by side with the CUDA device's: device.go, memory.go,
// launch.go, graph.go, snapshot.go and clone.go, plus content.go, init.go,
// fault.go, journal.go and order.go, table.go (the graph and
// executable-graph handles, in chunks shared copy-on-write by snapshots and
// clones, their writes logged under a mark) and devices.go (Devices: the
// devices of a trace with "devices": n).
package sim
