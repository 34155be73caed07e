// Package engine re-implements PyTorch 2.11's CUDAGraph Trees (what
// torch.compile(mode="reduce-overhead") runs) over a device.Device: per
// device one tree manager, one caching allocator (engine/alloc) and one
// private graph pool. It owns the tensors and storages a trace names, with
// Python's reference semantics, and reports every decision as a typed Event
// with its reason and every failure as an *Error of a Kind. Dynamo's part
// (which compiled graph and FunctionID a call runs through) is
// engine/dynamo. It knows nothing of sessions, files or the UI: State gives
// read-only views.
//
// The package is three layers. The Engine is the façade: Apply, the
// rollback of a failed record (snapshot.go), the non-call records, a call's
// Dynamo part (call.go) and the views. Under it the tree: the manager
// (manager.go: _run, generations, ends of paths; record.go, execute.go,
// checkpoint.go, dealloc.go: PyTorch's functions of the same names), its
// nodes and functions, and shared.go, what the devices share and all the
// tree sees of the Engine. Under both the data: tensors, events, errors.
// docs/architecture.md draws the layers and maps PyTorch's functions to
// ours; TestEngineLayers keeps them.
package engine
