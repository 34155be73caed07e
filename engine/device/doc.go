// Package device is the seam between the engine and a GPU: the Device
// interface (segments, copies, kernel launches on two streams, stream
// capture into graphs, graph replays) and the optional interfaces a
// backend may add, Snapshotter and Releaser (the state saved and put back
// when a record fails), Cloner (an independent device in the same state,
// for engine.Clone) and SnapshotSizer (what one more snapshot costs in
// bytes), ValueKnower and Initializer. Its value types (Ptr, Stream,
// Launch, GraphNode) are what both backends speak, and LaunchOperands
// (operands.go) what a launch writes and reads, checked the same way by
// both: engine/device/sim, pure Go, and engine/device/cuda
// (build tag cuda); engine/device/devicetest is the suite both pass.
package device
