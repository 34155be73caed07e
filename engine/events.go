package engine

import (
	"fmt"
	"strings"
)

// EventKind says what an Event reports.
type EventKind uint8

// The kinds of decision and effect the engine reports. The report, the
// --log output, the TUI's explanations, breakpoints and the history are all
// built from these, so they cannot disagree.
const (
	// EvWarmup: a function ran eagerly inside the graph pool (CUDAWarmupNode).
	// Reason says whether it was the function's own warmup or contagion.
	EvWarmup EventKind = iota + 1
	// EvRecord: a new graph node was recorded. Reason says why (new root,
	// child of Parent, which invariants of which existing children failed).
	EvRecord
	// EvReplay: a recorded node was replayed.
	EvReplay
	// EvEager: the engine declined to use a graph and ran the function
	// eagerly outside the pool (a mutated non-static input, or the
	// re-record limit). Reason says which.
	EvEager
	// EvCheckpoint: the allocator's pool state was restored to a node's
	// checkpoint before a warmup or recording that follows a replay.
	EvCheckpoint
	// EvDealloc: outputs of the ending generation's path were freed and
	// marked stale (reading them is an error from now on).
	EvDealloc
	// EvPreserve: live outputs of the ending path that the next call takes
	// as inputs were moved out of the pool before the path was freed (the
	// fix PyTorch merged after 2.11; see README "Deviations").
	EvPreserve
	// EvGeneration: a new generation started.
	EvGeneration
	// EvPathEnd: the current path ended (current_node = None) without
	// freeing anything: a new generation or all outputs dead.
	EvPathEnd
	// EvInvariantFailed: a candidate child could not be replayed.
	EvInvariantFailed
	// EvSkip: a skip was logged (PyTorch logs each once per function).
	EvSkip
	// EvWarning: a PyTorch warning (pending backwards, empty graph).
	EvWarning
	// EvError: the record raised an error; the engine is as before it.
	EvError
	// EvExpectFailed: an expect record did not hold.
	EvExpectFailed
	// EvTensorDied: a named tensor's storage died (its last reference went).
	EvTensorDied
	// EvConfig: a config record changed the settings in force (the
	// program patched torch._dynamo or torch._inductor config).
	EvConfig
	// EvReset: a reset record dropped a device's tree (Msg says what
	// went with it).
	EvReset
	// EvEmptyCache: torch.cuda.empty_cache() gave a device's cached free
	// segments back to the driver (Msg says how many and what stays
	// reserved). Its own kind so a breakpoint can stop on it.
	EvEmptyCache
)

var eventKindNames = [...]string{
	EvWarmup:          "warmup",
	EvRecord:          "record",
	EvReplay:          "replay",
	EvEager:           "eager",
	EvCheckpoint:      "checkpoint",
	EvDealloc:         "dealloc",
	EvPreserve:        "preserve",
	EvGeneration:      "generation",
	EvPathEnd:         "path_end",
	EvInvariantFailed: "invariant_failed",
	EvSkip:            "skip",
	EvWarning:         "warning",
	EvError:           "error",
	EvExpectFailed:    "expect_failed",
	EvTensorDied:      "tensor_died",
	EvConfig:          "config",
	EvReset:           "reset",
	EvEmptyCache:      "empty_cache",
}

// String returns the kind's name as breakpoints and the JSON report spell it.
func (k EventKind) String() string {
	if int(k) < len(eventKindNames) && eventKindNames[k] != "" {
		return eventKindNames[k]
	}
	return fmt.Sprintf("event(%d)", uint8(k))
}

// ParseEventKind returns the kind named s ("record", "checkpoint", ...).
func ParseEventKind(s string) (EventKind, bool) {
	for i, n := range eventKindNames {
		if n == s && n != "" {
			return EventKind(i), true
		}
	}
	return 0, false
}

// EventKinds lists every kind, for help texts and pickers.
func EventKinds() []EventKind {
	var out []EventKind
	for i := range eventKindNames {
		if eventKindNames[i] != "" {
			out = append(out, EventKind(i))
		}
	}
	return out
}

// WarnPendingBackward is the Msg of the EvWarning PyTorch gives, once per
// function, when a call cannot replay because forwards still wait for
// their backward: a reader tells this warning from the others by it.
const WarnPendingBackward = "Unable to hit fast path of CUDAGraphs because of pending, uninvoked backwards. Consider running with torch.no_grad() or using torch.compiler.cudagraph_mark_step_begin() before each model invocation"

// InvariantStatus is the result of check_invariants (PyTorch's
// CheckInvariantStatus).
type InvariantStatus uint8

// The statuses, in PyTorch's order of checking.
const (
	StatusSuccess InvariantStatus = iota + 1
	StatusCudagraphManagedIdxMismatch
	StatusStaticInputIdxMismatch
	StatusExpectedDeadIndicesBeforeGraphMismatch
)

// String returns PyTorch's wording of the status.
func (s InvariantStatus) String() string {
	switch s {
	case StatusSuccess:
		return "success"
	case StatusCudagraphManagedIdxMismatch:
		return "cudagraph managed tensor data pointer changed"
	case StatusStaticInputIdxMismatch:
		return "static input data pointer changed"
	case StatusExpectedDeadIndicesBeforeGraphMismatch:
		return "expected dead indices before graph are live"
	}
	return fmt.Sprintf("status(%d)", uint8(s))
}

// OutputIndex names an output on a path: Depth is the node's depth from the
// root (0 = root), Index the output's position. PyTorch's (depth, idx) pairs.
type OutputIndex struct {
	Depth, Index int
}

func (o OutputIndex) String() string { return fmt.Sprintf("(%d,%d)", o.Depth, o.Index) }

// InvariantFailure says why one existing child could not be replayed.
type InvariantFailure struct {
	Node   int // graph id of the candidate
	Status InvariantStatus
	// Input is the argument position whose pointer changed (managed or
	// static mismatch), -1 otherwise; InputName the trace name bound to it.
	Input     int
	InputName string
	Old, New  uint64 // the recorded and the current pointer
	// Outputs are the expected-dead outputs found live (dead-indices mismatch).
	Outputs []OutputIndex
	// OutputNames are the trace names of those outputs where known.
	OutputNames []string
}

// Describe is one line for people: "#1 fee: expected dead indices before
// graph are live: (0,0) a".
func (f InvariantFailure) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "#%d: %s", f.Node, f.Status)
	switch f.Status {
	case StatusCudagraphManagedIdxMismatch, StatusStaticInputIdxMismatch:
		fmt.Fprintf(&b, ": input %d", f.Input)
		if f.InputName != "" {
			fmt.Fprintf(&b, " (%s)", f.InputName)
		}
		fmt.Fprintf(&b, " moved from %#x to %#x", f.Old, f.New)
	case StatusExpectedDeadIndicesBeforeGraphMismatch:
		for i, o := range f.Outputs {
			if i == 0 {
				b.WriteString(": ")
			} else {
				b.WriteString(", ")
			}
			b.WriteString(o.String())
			if i < len(f.OutputNames) && f.OutputNames[i] != "" {
				b.WriteString(" " + f.OutputNames[i])
			}
		}
	}
	return b.String()
}

// RecordCause classifies why a recording happened.
type RecordCause uint8

// The causes of a recording.
const (
	// CauseNewRoot: no current node (first call, a new generation or an
	// all-dead path), so the recording became a root.
	CauseNewRoot RecordCause = iota + 1
	// CauseFirstChild: the function had no recording at this tree position.
	CauseFirstChild
	// CauseInvariants: recordings existed at this position but none passed
	// check_invariants (a sibling is recorded: a re-record).
	CauseInvariants
	// CauseRecordingPath: the path was recording, and recording is
	// contagious: nothing is matched until the recording ends.
	CauseRecordingPath
)

// String names the cause.
func (c RecordCause) String() string {
	switch c {
	case CauseNewRoot:
		return "new root"
	case CauseFirstChild:
		return "first recording at this position"
	case CauseInvariants:
		return "no existing recording passed its invariants"
	case CauseRecordingPath:
		return "path is recording"
	}
	return "unknown"
}

// Origin is what the engine knows of a warmup or a recording beyond its
// Cause, taken where it decided: which compiled graph the function is
// (Dynamo's part: a new root may be a new compiled graph, not only a new
// step), and the call before it on the device's tree when it continues a
// path (so that a graph after a graph break, run in the same invocation,
// is told from a backward and from a later invocation that found the path
// still recording). EvRecord and EvWarmup events carry it, and so does a
// recorded node's view. It is never changed once made.
type Origin struct {
	// Compile numbers the function's compiled graph among its def's, from
	// 1: 2 and up are Dynamo's recompiles of the def (a new shape, dtype or
	// aliasing of its arguments). Dynamic: the graph has symbolic shapes
	// (automatic_dynamic_shapes after a size changed, or
	// assume_static_by_default off); cudagraphify still makes one
	// FunctionID per size.
	Compile int
	Dynamic bool
	// Size numbers the FunctionID among its compiled graph's, from 1:
	// cudagraphify records a dynamic graph once per distinct input size,
	// so 2 and up is a new size of a graph compiled before, not a compile.
	Size int
	// Graph is the def whose compiled graph this is a size of, when the
	// function's def names one (a recorded trace writes each size of a
	// dynamic graph as a def of its own), else "".
	Graph string
	// Shapes are the shapes of the function's inputs that are not static,
	// those a new FunctionID is made for (a parameter's never change).
	Shapes [][]int
	// First: the function's first warmup (EvWarmup), or its first
	// recording anywhere in the tree (EvRecord).
	First bool
	// Prev is the call before this one on its path, the one that ran the
	// node or warmup it becomes the child of; nil when the call starts a
	// path (a root, or a warmup with no parent).
	Prev *PrevCall
	// Backward: the function is a backward graph, which autograd runs in
	// its forward's invocation (never a resume function). Forward is the
	// forward on the path whose outputs it takes (the tensors autograd
	// saved): the backward of Forward, whose node (graph id, or negative
	// warmup id) is ForwardNode. "" and -1 when no forward on the path
	// made its inputs.
	Backward    bool
	Forward     string
	ForwardNode int
}

// PrevCall is the call a warmup or a recording follows on its path.
type PrevCall struct {
	// Line is the trace line of the call, Fn its function; Node the graph
	// it recorded or replayed, or the (negative) id of its warmup.
	Line int
	Fn   string
	Node int
	// Invocations says both calls name their invocation (the trace's
	// `invocation`, Dynamo's GenerationTracker.generation when each ran);
	// SameInvocation that the values are equal: one top-level call of the
	// compiled callable ran both. A call in the same invocation is a graph
	// after a graph break in the one before (Dynamo's resume function),
	// unless it is a backward, which runs in its forward's invocation.
	Invocations    bool
	SameInvocation bool
}

// Event is one decision or effect of the engine, with its reason. Which
// fields are set depends on Kind; the rest are zero (Node and Parent are -1
// when not meaningful).
type Event struct {
	Kind   EventKind
	Line   int // trace line of the record that caused it
	Device int
	// Fn is the trace function name and FnID PyTorch's FunctionID of the
	// call (function per input shapes).
	Fn   string
	FnID int
	// Node is the graph id recorded or replayed (or the node checkpointed);
	// Parent its parent's graph id; both -1 when none. WarmupID is the
	// (negative) id of a warmup node.
	Node     int
	Parent   int
	WarmupID int

	// Record: why.
	Cause    RecordCause
	Failures []InvariantFailure
	// Rerecord is true for a recording caused by a pointer change of a
	// static or managed input (PyTorch counts these in num_rerecord).
	Rerecord bool
	// Origin (Record, Warmup): the compiled graph and the call before
	// it on the path (nil for the other kinds).
	Origin *Origin

	// Checkpoint: the allocator's delta.
	Delta *CheckpointView

	// Dealloc / Preserve / TensorDied: the tensors concerned, by name (or
	// "<fn output i>" when unnamed) and their addresses.
	Tensors []string
	Ptrs    []uint64

	// Generation: the new generation number.
	Generation int

	// Msg is the human explanation (warnings, skips, errors, path ends);
	// for TORCH_LOGS-style output see LogLine.
	Msg string
}

// Text returns the event's message for people. Frequent kinds (replays,
// steps, tensor deaths) carry no Msg: their text is built from the fields
// only when asked, which keeps the replay fast path free of formatting.
func (ev Event) Text() string {
	if ev.Msg != "" {
		return ev.Msg
	}
	switch ev.Kind {
	case EvReplay:
		return fmt.Sprintf("Executing graph %d of function %d", ev.Node, ev.FnID)
	case EvGeneration:
		return fmt.Sprintf("cudagraph_mark_step_begin: mark_step_counter is now %d", ev.Generation)
	case EvTensorDied:
		if len(ev.Tensors) > 0 && len(ev.Ptrs) > 0 {
			return fmt.Sprintf("%s at %#x died", ev.Tensors[0], ev.Ptrs[0])
		}
	}
	return ev.Kind.String()
}

// CheckpointView is the allocator's checkpoint delta in the engine's words:
// blocks re-allocated for live tensors, and blocks freed for dead ones.
type CheckpointView struct {
	// Node is the graph id whose checkpointed state was restored.
	Node int
	// Reallocated are blocks allocated again and given to a live tensor.
	Reallocated []DeltaBlock
	// Freed are blocks that were allocated at the checkpoint but whose
	// tensors died since (raw_delete), plus blocks freed by the restore
	// itself.
	Freed []DeltaBlock
}

// DeltaBlock is one block a checkpoint changed.
type DeltaBlock struct {
	Ptr  uint64
	Size int64
	// Tensor names the tensor that owns it now (Reallocated) or owned it
	// (Freed), "" when none is known.
	Tensor string
}

// eventArena hands out the one-element Ptrs and Tensors slices of frequent
// events (a tensor's death) from append-only chunks: one allocation per
// chunk instead of two per event. A handed-out slice is never written
// again (its capacity ends at its length), so a Step kept for good (a
// session's history) keeps what it saw.
type eventArena struct {
	ptrs []uint64
	strs []string
}

const arenaChunk = 512

func (a *eventArena) ptr(p uint64) []uint64 { return arenaOne(&a.ptrs, p) }

func (a *eventArena) str(s string) []string { return arenaOne(&a.strs, s) }

// arenaOne appends v to the chunk *buf (a new chunk when it is full) and
// returns the one-element slice holding it, capped so an append to it
// cannot write into the chunk.
func arenaOne[T any](buf *[]T, v T) []T {
	if len(*buf) == cap(*buf) {
		*buf = make([]T, 0, arenaChunk)
	}
	*buf = append(*buf, v)
	n := len(*buf)
	return (*buf)[n-1 : n : n]
}
