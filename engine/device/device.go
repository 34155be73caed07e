package device

import (
	"errors"

	"github.com/cgtviz/cgtviz/traces/ops"
)

// Ptr is a device address.
type Ptr uint64

// Stream names a stream of the device. The engine uses two: the default
// stream (eager work) and one side stream on which every allocation of the
// graph pool happens, as PyTorch's tree manager does.
type Stream int

// The streams the engine uses.
const (
	DefaultStream Stream = 0
	SideStream    Stream = 1
)

// GraphHandle names a captured graph (cuGraph) on one device.
type GraphHandle uint64

// ExecHandle names an instantiated graph (cuGraphExec) on one device.
type ExecHandle uint64

// Launch is one kernel launch: the kernel and its operands as device
// addresses of float32 arrays. It is a value type so that the hot path
// launches without heap allocation.
type Launch struct {
	K   ops.Kernel
	Out Ptr
	A   Ptr
	B   Ptr
	// BKind says whether B, one element at B, or Scalar is the second
	// operand of a binary kernel.
	BKind ops.BKind
	// Opaque says that the engine does not model the output's values (a
	// dtype other than float32, a view of more dims than ops.MaxRank can
	// describe): K is Fill, which writes the output's bytes as the real
	// kernel would, and a device that knows which values it holds
	// (ValueKnower) marks them unknown rather than zeros.
	Opaque bool
	// Geom places the elements of strided operands (views): nil when
	// every operand is contiguous, the hot path. Otherwise Out, A and B
	// are each operand's first element and Geom says where the others
	// are, as ops.Geometry defines for each kernel (ops.ElementwiseStrided,
	// SumStrided and MatmulStrided are the reference); N is then Geom's
	// element count for elementwise kernels, copy, fill and sum. The
	// geometry belongs to the caller: a device copies what it keeps (a
	// captured launch) before Launch returns.
	Geom *ops.Geometry
	// Scalar is the number of a binary kernel with BScalar, and fill's value.
	Scalar float32
	// N is the element count of Out for elementwise kernels, copy and fill,
	// and the element count of A for sum.
	N int64
	// M, K, Cols are the sizes of matmul: A is [M, K], B is [K, Cols].
	M, Kd, Cols int64
}

// GraphNode is one node of a captured graph, as introspection shows it.
type GraphNode struct {
	// Kind is "kernel", "memcpy" or "memset".
	Kind string
	// Name is the kernel's name for kernel nodes, a direction
	// ("DtoD", "HtoD") for memcpy.
	Name string
	// Deps are indexes of the nodes this one depends on.
	Deps []int
	// Detail is a short description of the operands (addresses, sizes).
	Detail string
}

// Device is what the engine needs of a GPU, and nothing more. The simulated
// device (engine/device/sim) and the CUDA device (engine/device/cuda, build
// tag cuda) implement it; engine/device/devicetest is the suite both pass.
//
// Methods are called from one goroutine at a time, but not necessarily
// always the same one, with one exception: EndCapture must run on the
// goroutine that called BeginCapture. The CUDA driver binds a thread-local
// capture to the OS thread that began it (the cuda device pins that
// goroutine to its thread until EndCapture), and ending it from another
// thread fails (CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD) without ending it.
type Device interface {
	// Name describes the device: "sim" or "cuda:0 NVIDIA H200".
	Name() string
	// MallocSegment reserves size bytes of device memory (cudaMalloc). It
	// returns ErrOutOfMemory when the device has too little free memory.
	MallocSegment(size int64) (Ptr, error)
	// FreeSegment returns a segment from MallocSegment (cudaFree).
	FreeSegment(p Ptr) error
	// MemInfo returns the free and total bytes of the device.
	MemInfo() (free, total int64)

	// Launch enqueues a kernel on s, or records it when s is capturing.
	// It keeps no pointer to l once it returns (the engine reuses one
	// Launch for a body's statements).
	Launch(s Stream, l *Launch) error
	// CopyHtoD copies host values to dst (synchronously; never captured).
	CopyHtoD(dst Ptr, src []float32) error
	// CopyDtoH copies n = len(dst) values from src to the host
	// (synchronously; never captured).
	CopyDtoH(dst []float32, src Ptr) error
	// CopyDtoD copies n float32 values from src to dst on s, or records the
	// copy when s is capturing.
	CopyDtoD(s Stream, dst, src Ptr, n int64) error
	// WaitStream makes s wait for the work queued on other.
	WaitStream(s, other Stream) error

	// BeginCapture starts capturing s (thread-local mode).
	BeginCapture(s Stream) error
	// EndCapture ends the capture of s and returns the graph. It must run
	// on the goroutine that called BeginCapture (see Device).
	EndCapture(s Stream) (GraphHandle, error)
	// Instantiate makes an executable graph.
	Instantiate(g GraphHandle) (ExecHandle, error)
	// LaunchGraph replays an executable graph on s.
	LaunchGraph(e ExecHandle, s Stream) error
	// UpdateCopy points the memcpy node of e that writes dst at a new
	// source (cuGraphExecMemcpyNodeSetParams). The engine captures the copy
	// of each non-static input into its placeholder as a node of the graph,
	// so a replay is one launch; only when an input moves does the node
	// need a new source.
	UpdateCopy(e ExecHandle, dst, src Ptr, n int64) error
	// GraphNodes lists a captured graph's nodes in capture order.
	GraphNodes(g GraphHandle) ([]GraphNode, error)
	// GraphDOT returns the graph as Graphviz DOT text (cuGraphDebugDotPrint
	// on the GPU).
	GraphDOT(g GraphHandle) (string, error)
	// DestroyGraph frees a graph and DestroyExec an executable graph.
	DestroyGraph(g GraphHandle) error
	DestroyExec(e ExecHandle) error

	// Synchronize waits for all queued work.
	Synchronize() error
	// Close releases the device. Every later call fails; closing again is
	// a no-op.
	Close() error
}

// Snapshotter is implemented by devices whose whole state (memory contents,
// graphs, fault counters) can be saved and put back. The engine uses it to
// leave the device exactly as it was when a record fails. Snapshots are
// immutable once taken.
type Snapshotter interface {
	// Snapshot saves the device's state. A device that cannot save it now
	// returns a value whose Restore fails with the reason, so that the
	// failure surfaces where the state is needed.
	Snapshot() any
	// Restore puts back the state of a value Snapshot returned on this
	// device. Given anything else, or when the device cannot restore, it
	// returns an error, and the device fails every later call with it
	// until a Restore succeeds: its state is no longer one the caller
	// knows.
	Restore(snapshot any) error
}

// Releaser is implemented by a snapshot (the value Snapshot returns) that
// holds resources the garbage collector cannot weigh, such as device
// memory: its user calls Release once it no longer needs the snapshot,
// and it then restores nothing. A snapshot without it is simply dropped.
type Releaser interface {
	Release()
}

// Cloner is implemented by devices that can make an independent device in
// the same state (segments at the same addresses with the same contents,
// graphs, executable graphs). engine.Clone uses it, and sessions keep
// clones of the engine as the keyframes of their history. On the simulated
// device a clone is a separate device sharing contents copy-on-write; on
// the GPU the clones of one device share its memory and take turns on it.
type Cloner interface {
	CloneDevice() (Device, error)
}

// SnapshotSizer is implemented by devices that can say how many bytes of
// memory one more snapshot or clone costs (its copy of the contents of the
// live segments), so that a history can bound its keyframes by bytes.
type SnapshotSizer interface {
	SnapshotBytes() int64
}

// ErrOutOfMemory is returned (wrapped) by MallocSegment when the device is
// out of memory.
var ErrOutOfMemory = errors.New("out of memory")

// ErrValuesUnknown is returned (wrapped) by CopyDtoH, and reported by
// ValueKnower, when the device does not hold the values asked for: the
// simulated device computes values only where they mean something
// (docs/real-size.md), and a read of the rest must not invent numbers.
var ErrValuesUnknown = errors.New("values not modelled at this size")

// ValueKnower is implemented by devices that do not hold every value (the
// simulated device at real size). Devices without it hold them all.
type ValueKnower interface {
	// ValuesKnown reports whether the n float32 values at p are known,
	// that is whether CopyDtoH of them would succeed. It fails as
	// CopyDtoH does on a range outside the live segments.
	ValuesKnown(p Ptr, n int64) (bool, error)
}

// Initializer is implemented by devices that can set a tensor's initial
// values on the device, as torch.full, torch.rand and torch.arange do,
// where the engine would otherwise generate them on the host and copy them
// (gigabytes for a real model's parameters). Each call is synchronous and
// never captured, as CopyHtoD; the values are those the host would have
// copied, bit for bit.
type Initializer interface {
	// InitFill sets the n float32 values at dst to v.
	InitFill(dst Ptr, n int64, v float32) error
	// InitRand sets value i of the n at dst to traces.Rand(seed, i).
	InitRand(dst Ptr, n int64, seed int64) error
	// InitArange sets value i of the n at dst to float32(i).
	InitArange(dst Ptr, n int64) error
}
