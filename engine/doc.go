// Package engine re-implements PyTorch 2.11's CUDAGraph Trees (what
// torch.compile(mode="reduce-overhead") runs) over a device.Device: per
// device one tree manager (warmup, recording, replay, generations,
// check_invariants, checkpoints, deallocation of earlier generations), one
// caching allocator (engine/alloc) and one private graph pool. It owns the
// tensors and storages a trace names, with Python's reference semantics,
// and reports every decision as a typed Event with its reason. Dynamo's
// part (which compiled graph and FunctionID a call runs through) is
// modelled in engine/dynamo. It knows
// nothing of sessions, files or the UI: State gives read-only views.
package engine
