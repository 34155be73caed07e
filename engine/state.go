package engine

// This file holds the read-only views the engine gives to sessions, the UI,
// render and the report. A State is a copy: holding one never pins or
// changes the engine, and it can be compared (tests compare complete
// states before and after a failing record). What a node never changes
// after its recording (its failures, expected-dead and live indices, its
// kernels) is shared between States rather than copied, so a State of a
// tree of ten thousand nodes stays cheap; readers must not write to it.

import "slices"

// PathState is the state of the last node run on a device (PyTorch's
// ExecutionState).
type PathState uint8

// The path states.
const (
	PathNone PathState = iota
	PathWarmup
	PathRecording
	PathExecution
)

// String returns PyTorch's name of the state.
func (p PathState) String() string {
	switch p {
	case PathWarmup:
		return "WARMUP"
	case PathRecording:
		return "RECORDING"
	case PathExecution:
		return "EXECUTION"
	}
	return "NONE"
}

// Action is what one call did.
type Action string

// The actions of a call (the report's "action").
const (
	ActionNone   Action = ""
	ActionWarmup Action = "warmup"
	ActionRecord Action = "record"
	ActionReplay Action = "replay"
	ActionEager  Action = "eager"
)

// Counters are the run's totals (the report's "counters").
type Counters struct {
	Warmups     int `json:"warmups"`
	Recordings  int `json:"recordings"`
	Replays     int `json:"replays"`
	Eager       int `json:"eager"`
	Checkpoints int `json:"checkpoints"`
	Rerecords   int `json:"rerecords"`
	Errors      int `json:"errors"`
}

// State is a complete, immutable view of the engine at one moment.
type State struct {
	// Step is the number of records applied so far.
	Step int
	// Generation is the current generation as PyTorch counts it
	// (get_curr_generation: the mark-step counter once a step was taken).
	Generation int
	// MarkSteps counts step records so far.
	MarkSteps int
	Counters  Counters
	Devices   []DeviceState
	// Tensors are the tensors alive or known stale, ordered by id.
	Tensors []TensorView
	// Functions are the FunctionIDs created so far, by id.
	Functions []FunctionView
}

// DeviceState is one device's tree, path and pool.
type DeviceState struct {
	Index int
	Name  string // "sim" or "cuda:0 NVIDIA H200"
	// Nodes are the recorded graph nodes by graph id (0, 1, 2, ...).
	Nodes []NodeView
	// Roots are the graph ids of root nodes, in PyTorch's order (by
	// function id, then recording order).
	Roots []int
	// Warmups is the chain of warmup nodes of the current path, root
	// first (empty unless the path has warmed up).
	Warmups []WarmupView
	// Current is the graph id of the current node, -1 when the current
	// node is none or a warmup node.
	Current int
	// CurrentWarmup is the id (negative) of the current warmup node, 0 when
	// the current node is not a warmup node.
	CurrentWarmup int
	// Path lists the graph ids from the root to Current.
	Path      []int
	PathState PathState
	// CurrentGen is the manager's current_gen.
	CurrentGen int
	// PendingBackward is running_forwards_with_pending_backwards.
	PendingBackward bool
	Checkpoints     int
	// Pool is the private graph pool and Default the default pool.
	Pool    PoolView
	Default PoolView
	// Dropped are the graph pools of trees a reset record dropped that
	// still hold memory (the old tree's outputs the program kept), oldest
	// first: no manager uses them, but their segments are still reserved.
	Dropped []PoolView `json:",omitempty"`
	// Totals sum up the whole caching allocator: every pool, private ones
	// included (torch.cuda.memory_stats()).
	Totals AllocatorTotals
}

// AllocatorTotals are the caching allocator's figures over all its pools.
type AllocatorTotals struct {
	Segments       int
	ReservedBytes  int64
	AllocatedBytes int64
	PeakReserved   int64
}

// InputKind classifies a node's input as PyTorch does.
type InputKind string

// The input kinds.
const (
	InputStatic  InputKind = "static"  // a parameter: never copied, pointer burned in
	InputManaged InputKind = "managed" // an output of a node on the path
	InputCopied  InputKind = "copied"  // copied into a placeholder in the pool on each replay
)

// NodeView is one recorded graph node.
type NodeView struct {
	ID       int
	Fn       string
	FnID     int
	Parent   int // -1 for a root
	Children []int
	Depth    int
	Mode     string
	// RecordedAtLine is the trace line of the call that recorded it.
	RecordedAtLine int
	Cause          RecordCause
	Failures       []InvariantFailure
	// Origin is what the engine knew of the recording beyond its cause
	// (the compiled graph, the call it followed); shared, read-only.
	Origin  *Origin
	Replays int
	Inputs  []InputView
	// Mutated are the positions of the inputs its graph writes in place
	// (PyTorch's mutated_input_idxs): a KV cache, BatchNorm's buffers.
	Mutated []int
	Outputs []OutputView
	// ExpectedDeadBefore are path outputs that must be dead for a replay
	// (expected_dead_indices_before_graph); ExpectedDeadAfter died during
	// the recording; LiveAfter were live when it recorded.
	ExpectedDeadBefore []OutputIndex
	ExpectedDeadAfter  []OutputIndex
	LiveAfter          []OutputIndex
	// Kernels are the nodes of its CUDA graph, in capture order.
	Kernels []KernelView
	// OnPath is true when the node is on the current path, Current when it
	// is the current node.
	OnPath  bool
	Current bool
}

// InputView is one input of a node.
type InputView struct {
	Index int
	Name  string // the trace name bound at recording time
	Kind  InputKind
	Ptr   uint64 // the recorded pointer (the placeholder for copied inputs)
	Shape []int
}

// OutputView is one output of a node.
type OutputView struct {
	Index int
	Ptr   uint64
	Shape []int
	Bytes int64
	// Alias is "" for an unaliased output, or "input i", "output j",
	// "prior (d,i)" for aliases, or "static" for a parameter alias.
	Alias string
	// Cached is true when replays return one cached tensor object.
	Cached bool
	// Live says whether the output's storage is alive now.
	Live bool
	// Tensor is the name bound to it now, if any.
	Tensor string
}

// KernelView is one node of a node's CUDA graph.
type KernelView struct {
	Kind   string // "kernel" or "memcpy"
	Name   string
	Detail string
}

// WarmupView is one warmup node of the current path.
type WarmupView struct {
	ID     int // negative, PyTorch's warmup GraphID
	Fn     string
	FnID   int
	Line   int
	Parent int // warmup id (negative) or graph id (>= 0) of the parent, or NoParent
	// Outputs of the warmup run.
	Outputs []OutputView
	// Failed is true for a warmup whose run raised (Options.Handoff =
	// HandoffRaise: an input freed by the new generation); PyTorch 2.11
	// keeps it on the path.
	Failed bool
}

// NoParent marks a warmup node without parent in WarmupView.Parent.
const NoParent = int(^uint(0) >> 1)

// PoolView is one pool of one device's allocator with each block annotated
// with what the engine knows of it.
type PoolView struct {
	ID             [2]int64
	Segments       []SegmentView
	ReservedBytes  int64
	AllocatedBytes int64
	PeakReserved   int64
}

// SegmentView is one segment (cudaMalloc) and its blocks in address order.
type SegmentView struct {
	Addr   uint64
	Size   int64
	Small  bool
	Stream int
	Blocks []BlockView
}

// BlockState is what a block really is, from the engine's point of view.
type BlockState uint8

// The block states the pool view distinguishes.
const (
	// BlockFree: free in the allocator and holding nothing live.
	BlockFree BlockState = iota
	// BlockAllocated: allocated and owned by a live tensor (Tensors).
	BlockAllocated
	// BlockLiveInvisible: free in the allocator's eyes but holding a live
	// tensor: a replay output, which the allocator does not account for.
	// A recording now could overwrite it; that is why checkpoints exist.
	BlockLiveInvisible
	// BlockStale: holds an output that was deallocated (reading it is an
	// error) or silently overwritten.
	BlockStale
	// BlockUnowned: allocated but no live tensor owns it (a leak, or a
	// checkpoint block waiting for its raw_delete).
	BlockUnowned
)

// String names the state.
func (s BlockState) String() string {
	switch s {
	case BlockAllocated:
		return "allocated"
	case BlockLiveInvisible:
		return "live-invisible"
	case BlockStale:
		return "stale"
	case BlockUnowned:
		return "unowned"
	}
	return "free"
}

// BlockView is one block.
type BlockView struct {
	Addr          uint64
	Size          int64
	Requested     int64
	Allocated     bool // as the allocator believes
	State         BlockState
	Tensors       []string // names of live tensors whose storage lies in it
	InCheckpoint  bool     // changed by the last checkpoint restore
	ProducedAt    int      // trace line of the allocation, 0 if unknown
	ProducedBy    string   // "call foo: record #2", "tensor inp", ...
	CheckpointNew bool     // re-allocated for a live tensor by the last checkpoint
}

// TensorState is a tensor's state.
type TensorState string

// The tensor states.
const (
	TensorLive  TensorState = "live"
	TensorStale TensorState = "stale" // deallocated: reading raises the overwritten error
)

// TensorView is one tensor the trace can reach (bound to names).
type TensorView struct {
	ID      int
	Names   []string
	Shape   []int
	Device  int
	Ptr     uint64
	Bytes   int64
	Pool    string // "default" or "graph"
	State   TensorState
	Owner   string // "allocator", "none (replay output)", "param"
	Storage int    // storage id; views share it
	// Producer says where it came from: "tensor (line 5)", "call foo out 0 (line 6)".
	Producer string
	Line     int
}

// FunctionView is one FunctionID.
type FunctionView struct {
	ID     int
	Device int
	Fn     string
	Shapes [][]int
	Mode   string
	Warmed bool
	// Graph: the def whose compiled graph of dynamic shapes this
	// FunctionID is a size of (Function.Graph; "" for a graph's first).
	Graph string
}

// KeepsShapesOf reports whether f is a size of g's compiled graph of
// dynamic shapes whose inputs all have g's shapes: no tensor changed
// shape, so the size that did is an int the graph takes as a symbolic
// size (an int argument Dynamo made dynamic, such as a sampler's
// timestep), each value a FunctionID of its own.
func (f FunctionView) KeepsShapesOf(g FunctionView) bool {
	return f.Graph != "" && f.Graph == g.Fn && f.Device == g.Device && len(g.Shapes) > 0 &&
		slices.EqualFunc(f.Shapes, g.Shapes, slices.Equal[[]int])
}
