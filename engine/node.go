package engine

import (
	"unsafe"
	"weak"

	"github.com/cgtviz/cgtviz/engine/alloc"
	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/traces"
	"github.com/cgtviz/cgtviz/traces/ops"
)

// aliasKind is PyTorch's output storage alias class.
type aliasKind uint8

const (
	aliasUnaliased aliasKind = iota // UnaliasedStorage
	aliasStatic                     // an empty storage: not managed
	aliasPrior                      // AliasesPriorGraphOutput((depth, idx))
	aliasNew                        // AliasesNewOutput(idx)
	// aliasInput: the output is (a view of) input Input. torch.compile's
	// AOTAutograd regenerates such outputs from the caller's own tensor
	// outside the graph, so the tree never sees them: no weak reference,
	// no liveness, and every call returns a view of its current input.
	aliasInput
)

// outputInfo is one output's recorded metadata (outputs_metadata plus the
// alias class).
type outputInfo struct {
	Ptr   device.Ptr
	Shape []int
	DType ops.DType
	Bytes int64
	Alias aliasKind
	// Prior is the aliased path output (aliasPrior); New the aliased
	// output index of this node (aliasNew).
	Prior OutputIndex
	New   int
	// Input is the aliased input (aliasInput).
	Input int
	// Unaliased is unaliased_in_all_paths: the output gets a cached tensor.
	Unaliased bool
	// StaticTensor is the tensor returned for a static output.
	StaticTensor int
}

// Node is a CUDAGraphNode: one recording of one function at one position.
// What a replay reads comes first (ids, the inputs, the graph, the
// outputs), so that a replay of a node out of the caches reads few lines
// of it; what only views and recordings read comes after.
type Node struct {
	ID      int
	Fn      int // FunctionID
	Parent  int // graph id, -1 for a root
	Depth   int
	Replays int
	// Children are the node's children: FunctionID -> graph ids, in
	// recording order. nil until the first: a replay reads it to find its
	// candidates under the current node, and a leaf's nil map answers
	// without reading a map's header out of the caches (one miss a call
	// when every call replays another of 10,000 root functions).
	Children map[int][]int
	// RerecordIfStatic is rerecord_if_static_inputs_change, fixed when the
	// node is recorded: inline_inbuilt_nn_modules or
	// cudagraph_support_input_mutation. With it a moved static input fails
	// check_invariants (a re-record); without it the replay raises
	// (check_static_inputs_are_stable).
	RerecordIfStatic bool
	Exec             device.ExecHandle

	// What a replay reads next, in the node's next three lines (with its
	// first, two pairs of lines that the processor fetches together): the
	// inputs' flags and copy sources, the cached outputs, the outputs'
	// count, the outputs that must be dead, and who shares the node. The
	// rest of the node is read by views, recordings and checkpoints.
	//
	// Inputs. Static covers static_input_idxs (parameters and managed
	// inputs); Managed is cudagraph_managed_idxs.
	Static  []bool
	Managed []bool
	// CopySrc is, per copied input, the source its copy node in the graph
	// reads from now (0 when unknown): a replay updates the node only when
	// the input moved.
	CopySrc []device.Ptr
	// Cached are the cached output tensors (tensor ids, 0 for none); nil
	// until the first replay after recording or after a checkpoint.
	Cached             []int
	Outputs            []outputInfo
	ExpectedDeadBefore []OutputIndex
	// owners are the managers whose nodes hold this object, when more
	// than the one that made it (an engine and its clones share nodes
	// until one changes them: snapshot.go, unshare).
	owners []weak.Pointer[manager]
	// replayInline holds the replay data of a node of few inputs and
	// outputs (carveReplayData), in the node's own fourth and fifth lines.
	replayInline [8]device.Ptr

	// Ptrs are the recorded pointers of static inputs and the
	// placeholders of copied ones (read on a replay when an input moved).
	Ptrs []device.Ptr
	// OutWeak are outputs_weakrefs: storage ids, 0 for None.
	OutWeak   []int
	LiveAfter []OutputIndex

	childOrder  []int // FunctionIDs in the order they first got a child
	Line        int
	Mode        traces.Mode
	Cause       RecordCause
	Failures    []InvariantFailure
	Origin      *Origin // never changed once made: a clone shares it
	InputShapes [][]int
	InputNames  []string

	LivenessBefore    [][]bool
	LivenessAfter     [][]bool
	ExpectedDeadAfter []OutputIndex

	CheckpointState *alloc.PoolState
	Graph           device.GraphHandle
	Kernels         []device.GraphNode
	// kernels is Kernels as the State shows them, made once: they never
	// change after the recording.
	kernels []KernelView
	// view is the node's view as the last State built it (view.go).
	view *nodeView
	// cachedStore is where Cached is carved when it is made (the replay
	// data's block, carveReplayData): the node's own, nil in a copy.
	cachedStore []int
}

func (n *Node) clone() *Node {
	c := *n
	if n.Children != nil {
		c.Children = make(map[int][]int, len(n.Children))
		for k, v := range n.Children {
			c.Children[k] = append([]int(nil), v...)
		}
	}
	c.childOrder = append([]int(nil), n.childOrder...)
	c.OutWeak = append([]int(nil), n.OutWeak...)
	c.CopySrc = append([]device.Ptr(nil), n.CopySrc...)
	if n.Cached != nil {
		c.Cached = append([]int(nil), n.Cached...)
	}
	// A child's recording clears its parents' Outputs[i].Unaliased.
	c.Outputs = append([]outputInfo(nil), n.Outputs...)
	c.owners = nil // the copy's own: no manager holds it yet
	// The store is in the block whose OutWeak and CopySrc n goes on
	// writing: the copy makes its Cached anew.
	c.cachedStore = nil
	// The rest is immutable after recording.
	return &c
}

// nodeView is a node's view as a State last built it (OnPath and Current
// left unset), and what that depended on that can change after the
// recording: the replay count, the children, and per output its storage,
// its Cached flag, and whether and by what name it is alive. A State
// reuses it while all of these are the same, so the cost of a State
// follows what changed since the last one, not the size of the tree. It is
// never written once made: States share its slices.
type nodeView struct {
	v         NodeView
	children  int
	lastChild int
	weak      []int
}

// keepNode saves n as it is, once per record, before the record changes
// it. Without a snapshot (the replay fast path) it saves nothing: what
// execute_node changes there comes after the last point where the record
// can fail.
func (m *manager) keepNode(n *Node) {
	m.unshare(n)
	sh := m.sh
	if !sh.snapshotted || sh.kept[n] {
		return
	}
	if sh.kept == nil {
		sh.kept = map[*Node]bool{}
	}
	sh.kept[n] = true
	old := n.clone()
	sh.onUndo(func() {
		owners := n.owners // who shares n now, not then
		*n = *old
		n.owners = owners
	})
}

// unshare gives every other manager that shares n (clones: a session's
// keyframes) a copy of n as it is now, before m changes it: a Clone shares
// the nodes rather than copying them (nodes are most of a big tree), and
// every change to a node is preceded by keepNode. A node that only m holds
// costs one length check.
func (m *manager) unshare(n *Node) {
	if len(n.owners) < 2 {
		return
	}
	me := weak.Make(m)
	var cp *Node
	for _, w := range n.owners {
		if w == me {
			continue
		}
		o := w.Value()
		if o == nil || n.ID >= len(o.nodes) || o.nodes[n.ID] != n {
			continue
		}
		if cp == nil {
			cp = n.clone()
			cp.owners = nil
		}
		o.nodes[n.ID] = cp
		cp.owners = append(cp.owners, w)
	}
	n.owners = append(n.owners[:0], me)
}

// share registers c, a clone of m, as an owner of m's nodes, which it
// shares, and drops owners that the collector has buried.
func (m *manager) share(c *manager) {
	me, cw := weak.Make(m), weak.Make(c)
	for _, n := range m.nodes {
		if len(n.owners) == 0 {
			n.owners = append(n.owners, me)
		} else if len(n.owners) >= 8 {
			live := n.owners[:0]
			for _, w := range n.owners {
				if w.Value() != nil {
					live = append(live, w)
				}
			}
			clear(n.owners[len(live):])
			n.owners = live
		}
		n.owners = append(n.owners, cw)
	}
}

// WarmupNode is a CUDAWarmupNode: one eager run inside the pool.
type WarmupNode struct {
	ID          int // negative
	Fn          int
	ParentGraph int // graph id of the parent, -1 when the parent is not a graph node
	ParentWarm  int // id of a warmup parent, 0 when none
	Line        int
	AlreadyWarm bool
	OutWeak     []int
	OutShapes   [][]int
	// Failed marks a warmup whose run raised after the node became current
	// (HandoffRaise: an input freed by the new generation). It has no
	// outputs, and PyTorch 2.11 cannot end a path holding it by a new
	// generation.
	Failed bool
}

// path returns the nodes from the root to n.
func (m *manager) path(n *Node) []*Node {
	if n == nil {
		return nil
	}
	p := make([]*Node, n.Depth+1)
	for x := n; x != nil; x = m.nodesOrNil(x.Parent) {
		p[x.Depth] = x
	}
	return p
}

// isPathOutputPtr reports whether ptr was recorded as an output of a node
// on n's path (alive or not: the pool's memory is never given back).
func (n *Node) isPathOutputPtr(m *manager, ptr device.Ptr) bool {
	for _, x := range m.path(n) {
		for i, o := range x.Outputs {
			if x.OutWeak[i] != 0 && o.Ptr == ptr {
				return true
			}
		}
	}
	return false
}

// kernelViews returns the node's kernels as a State shows them (shared
// between States: read-only).
func (n *Node) kernelViews() []KernelView {
	if n.kernels == nil && len(n.Kernels) > 0 {
		n.kernels = make([]KernelView, len(n.Kernels))
		for i, k := range n.Kernels {
			n.kernels[i] = KernelView{Kind: k.Kind, Name: k.Name, Detail: k.Detail}
		}
	}
	return n.kernels
}

// carveReplayData makes the node's per-input and per-output slices that a
// replay reads (Static, Managed, CopySrc, and the store of Cached; Ptrs and
// OutWeak besides) out of one block of words: the node's own inline words
// when they fit (a node of one or two inputs and outputs), else one
// allocation. A replay of a node out of the caches then reads them with the
// node's lines, where six allocations of 8 to 24 bytes were a miss each
// per call when every call replays another of 10,000 functions. What a
// replay reads comes first in the block. The block holds no pointers; the
// bools and ints are views of its words (a word is as big as an int on
// every 64-bit platform, and bigger than one elsewhere). Each slice's
// capacity is its length, so no append runs into the next. nOut is the
// outputs the recording will have (the plan's results).
func (n *Node) carveReplayData(nIn, nOut int) {
	boolWords := (2*nIn + 7) / 8
	size := boolWords + 2*nIn + 2*nOut
	var blk []device.Ptr
	if size <= len(n.replayInline) {
		blk = n.replayInline[:size:size]
	} else {
		blk = make([]device.Ptr, size)
	}
	if nIn > 0 {
		bools := unsafe.Slice((*bool)(unsafe.Pointer(&blk[0])), 2*nIn)
		n.Static, n.Managed = bools[:nIn:nIn], bools[nIn:2*nIn:2*nIn]
	} else {
		n.Static, n.Managed = []bool{}, []bool{}
	}
	at := boolWords
	n.CopySrc = blk[at : at+nIn : at+nIn]
	at += nIn
	if nOut > 0 {
		n.cachedStore = unsafe.Slice((*int)(unsafe.Pointer(&blk[at])), nOut)
	}
	at += nOut
	n.Ptrs = blk[at : at+nIn : at+nIn]
	at += nIn
	if nOut > 0 {
		n.OutWeak = unsafe.Slice((*int)(unsafe.Pointer(&blk[at])), nOut)
	} else {
		n.OutWeak = []int{}
	}
}

// newCached returns an empty Cached for the node's outputs: its store when
// it has one of the right size, else a new slice.
func (n *Node) newCached() []int {
	if len(n.cachedStore) == len(n.Outputs) && n.cachedStore != nil {
		clear(n.cachedStore)
		return n.cachedStore
	}
	return make([]int, len(n.Outputs))
}
