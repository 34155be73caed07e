// Package alloc is PyTorch's CUDA caching allocator (c10's
// DeviceCachingAllocator) re-implemented over a device.Device: blocks and
// segments, the small and large pools, best-fit search, splitting and
// merging, max_split_size, private (graph) pools with use counts, the
// checkpoint / restore of a private pool that CUDAGraph Trees relies on, the
// bounded event log and the memory_viz snapshot export. Its journal (Mark,
// Undo, Commit) puts it back as it was at a mark at the cost of what
// changed since: the engine's rollback of a failed record.
//
// Read-only views (Segments, BlockAt, Allocated) and Stats are what the
// report and the UI show; Clone copies it for the engine's keyframes. The
// snapshot's pickle is written by engine/alloc/pickle, in the opcodes
// memory_viz reads (internal/unpickle reads them back in tests).
//
// It owns the placement decisions only: the device provides the segment
// addresses, so the same calls on the same device give the same addresses.
// An Allocator is not safe for concurrent use; the engine drives one per
// device from one goroutine, as PyTorch does under its allocator mutex.
package alloc
