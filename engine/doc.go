// Package engine re-implements PyTorch 2.11's CUDAGraph Trees (what
// torch.compile(mode="reduce-overhead") runs) over a device.Device: per
// device one tree manager (manager.go: _run, generations, ends of paths;
// record.go, execute.go, checkpoint.go, dealloc.go: PyTorch's functions of
// the same names), one caching allocator (engine/alloc) and one private
// graph pool. It owns the tensors and storages a trace names, with Python's
// reference semantics, and reports every decision as a typed Event with its
// reason and every failure as an *Error of a Kind. Dynamo's part (which
// compiled graph and FunctionID a call runs through) is engine/dynamo. It
// knows nothing of sessions, files or the UI: State gives read-only views.
// docs/architecture.md maps PyTorch's functions to ours.
package engine
