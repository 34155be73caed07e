package engine

import (
	"fmt"

	"github.com/cgtviz/cgtviz/engine/alloc"
	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/traces"
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
type Node struct {
	ID         int
	Fn         int // FunctionID
	Parent     int // graph id, -1 for a root
	Depth      int
	Children   map[int][]int // FunctionID -> graph ids, in recording order
	childOrder []int         // FunctionIDs in the order they first got a child
	Line       int
	Mode       traces.Mode
	Cause      RecordCause
	Failures   []InvariantFailure
	Replays    int

	// Inputs. Static covers static_input_idxs (parameters and managed
	// inputs); Managed is cudagraph_managed_idxs; Ptrs are the recorded
	// pointers of static inputs and the placeholders of copied ones.
	Static  []bool
	Managed []bool
	Ptrs    []device.Ptr
	// CopySrc is, per copied input, the source its copy node in the graph
	// reads from now (0 when unknown): a replay updates the node only when
	// the input moved.
	CopySrc     []device.Ptr
	InputShapes [][]int
	InputNames  []string

	LivenessBefore     [][]bool
	LivenessAfter      [][]bool
	ExpectedDeadBefore []OutputIndex
	ExpectedDeadAfter  []OutputIndex
	LiveAfter          []OutputIndex

	Outputs []outputInfo
	// OutWeak are outputs_weakrefs: storage ids, 0 for None.
	OutWeak []int
	// Cached are the cached output tensors (tensor ids, 0 for none); nil
	// until the first replay after recording or after a checkpoint.
	Cached []int

	CheckpointState *alloc.PoolState
	Graph           device.GraphHandle
	Exec            device.ExecHandle
	Kernels         []device.GraphNode
}

func (n *Node) clone() *Node {
	c := *n
	c.Children = make(map[int][]int, len(n.Children))
	for k, v := range n.Children {
		c.Children[k] = append([]int(nil), v...)
	}
	c.childOrder = append([]int(nil), n.childOrder...)
	c.OutWeak = append([]int(nil), n.OutWeak...)
	c.CopySrc = append([]device.Ptr(nil), n.CopySrc...)
	if n.Cached != nil {
		c.Cached = append([]int(nil), n.Cached...)
	}
	// A child's recording clears its parents' Outputs[i].Unaliased.
	c.Outputs = append([]outputInfo(nil), n.Outputs...)
	// The rest is immutable after recording.
	return &c
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

// liveness returns the liveness of every output on path.
func (e *Engine) liveness(path []*Node) [][]bool {
	out := make([][]bool, len(path))
	for d, x := range path {
		out[d] = make([]bool, len(x.OutWeak))
		for i, sid := range x.OutWeak {
			out[d][i] = sid != 0 && e.tt.storageLive(sid)
		}
	}
	return out
}

// differentIndices is _get_different_indices: outputs live in prev and
// dead in curr.
func differentIndices(prev, curr [][]bool) []OutputIndex {
	var out []OutputIndex
	for d := range prev {
		for i := range prev[d] {
			if d < len(curr) && i < len(curr[d]) && prev[d][i] != curr[d][i] {
				out = append(out, OutputIndex{d, i})
			}
		}
	}
	return out
}

// checkInvariants is CUDAGraphNode.check_invariants.
func (m *manager) checkInvariants(n *Node, c *call) InvariantFailure {
	fail := InvariantFailure{Node: n.ID, Input: -1}
	if m.eng.inputMoved(&fail, n, c.args, n.Managed, c.rec) {
		fail.Status = StatusCudagraphManagedIdxMismatch
		return fail
	}
	path := m.path(n)
	for _, oi := range n.ExpectedDeadBefore {
		sid := path[oi.Depth].OutWeak[oi.Index]
		if sid != 0 && m.eng.tt.storageLive(sid) {
			fail.Outputs = append(fail.Outputs, oi)
			fail.OutputNames = append(fail.OutputNames, m.eng.tt.nameOfStorage(sid))
		}
	}
	if len(fail.Outputs) > 0 {
		fail.Status = StatusExpectedDeadIndicesBeforeGraphMismatch
		return fail
	}
	if m.eng.inputMoved(&fail, n, c.args, n.Static, c.rec) {
		fail.Status = StatusStaticInputIdxMismatch
		return fail
	}
	fail.Status = StatusSuccess
	return fail
}

// inputMoved reports whether an input marked in which has another address
// than when n was recorded, and puts the first such input into fail.
func (e *Engine) inputMoved(fail *InvariantFailure, n *Node, args []*Tensor, which []bool, rec *traces.Record) bool {
	for i, t := range args {
		if !which[i] {
			continue
		}
		if p := e.tt.storages[t.Storage].Ptr; p != n.Ptrs[i] {
			fail.Input, fail.Old, fail.New = i, uint64(n.Ptrs[i]), uint64(p)
			fail.InputName = argName(rec, i)
			return true
		}
	}
	return false
}

func argName(rec *traces.Record, i int) string {
	if i < len(rec.Args) {
		return rec.Args[i]
	}
	return ""
}

// executeNode replays n (execute_node + CUDAGraphNode.run).
func (m *manager) executeNode(n *Node, c *call) ([]*Tensor, Action, error) {
	dev := m.ds.dev
	// The graph's first nodes copy the non-static inputs into their
	// placeholders (PyTorch's _foreach_copy_ before replay, in the graph);
	// point them at the inputs' current addresses where they moved.
	for i, t := range c.args {
		if n.Static[i] {
			continue
		}
		src := m.eng.tt.storages[t.Storage].Ptr
		if cnt := numElems(t.Shape); cnt > 0 && src != n.CopySrc[i] {
			if err := dev.UpdateCopy(n.Exec, n.Ptrs[i], src, cnt); err != nil {
				n.CopySrc[i] = 0
				return nil, "", fmt.Errorf("replay #%d: copy input %d: %w", n.ID, i, err)
			}
			n.CopySrc[i] = src
		}
	}
	if err := dev.LaunchGraph(n.Exec, device.SideStream); err != nil {
		return nil, "", fmt.Errorf("replay #%d: %w", n.ID, err)
	}
	// From here on nothing can fail: the replay happened.
	m.cur = n.ID
	m.pathState = PathExecution
	m.warmups = nil
	m.updateGeneration()
	outs := m.reconstructOutputs(n, c)
	n.Replays++
	m.eng.counters.Replays++
	c.step.
		Node, c.step.Parent = n.ID, n.Parent
	c.step.
		nodeFn = m.funcs[n.Fn].Name
	c.step.
		hasParentFn = true
	if n.Parent >= 0 {
		c.step.
			parentFn = m.funcs[m.nodes[n.Parent].Fn].Name
	}
	m.emit(Event{Kind: EvReplay, Line: c.rec.Line, Device: m.ds.index, Fn: m.funcs[n.Fn].Name, FnID: n.Fn, Node: n.ID, Parent: n.Parent})
	return outs, ActionReplay, nil
}

// reconstructOutputs is reconstruct_outputs: cached outputs are the same
// tensor objects every replay; the others are rebuilt on non-owning storages
// at the recorded pointers.
func (m *manager) reconstructOutputs(n *Node, c *call) []*Tensor {
	tt := m.eng.tt
	fname := m.funcs[n.Fn].Name
	if n.Cached == nil {
		n.Cached = make([]int, len(n.Outputs))
		for i, o := range n.Outputs {
			if !o.Unaliased {
				continue
			}
			st := tt.newStorage(Storage{Dev: m.ds.index, Ptr: o.Ptr, Bytes: o.Bytes, Pool: poolGraph, Pins: 1,
				Line: c.rec.Line, What: fmt.Sprintf("%s output %d (replay of #%d)", fname, i, n.ID)})
			t := tt.newTensor(st, o.Shape, c.rec.Line, st.What)
			t.holds = 0
			t.Cached = true
			st.Refs = 0
			n.Cached[i] = t.ID
			n.OutWeak[i] = st.ID
		}
	}
	outs := make([]*Tensor, len(n.Outputs))
	path := m.path(n)
	for i, o := range n.Outputs {
		if tid := n.Cached[i]; tid != 0 {
			t := tt.tensors[tid]
			tt.hold(t)
			outs[i] = t
			continue
		}
		if o.Alias == aliasInput {
			outs[i] = tt.newTensor(tt.storages[c.args[o.Input].Storage], o.Shape, c.rec.Line, fmt.Sprintf("%s output %d", fname, i))
			continue
		}
		if o.Alias == aliasStatic {
			t := tt.tensors[o.StaticTensor]
			if t == nil {
				// The static tensor object died; rebuild a view of its storage.
				st := tt.newStorage(Storage{Dev: m.ds.index, Ptr: o.Ptr, Bytes: o.Bytes, Pool: poolDefault, Param: true, Line: c.rec.Line, What: fmt.Sprintf("%s output %d", fname, i)})
				outs[i] = tt.newTensor(st, o.Shape, c.rec.Line, st.What)
				continue
			}
			tt.hold(t)
			outs[i] = t
			continue
		}
		var st *Storage
		switch o.Alias {
		case aliasPrior:
			if sid := path[o.Prior.Depth].OutWeak[o.Prior.Index]; sid != 0 && tt.storageLive(sid) {
				st = tt.storages[sid]
			}
		case aliasNew:
			st = tt.storages[outs[o.New].Storage]
		}
		if st == nil {
			st = tt.newStorage(Storage{Dev: m.ds.index, Ptr: o.Ptr, Bytes: o.Bytes, Pool: poolGraph,
				Line: c.rec.Line, What: fmt.Sprintf("%s output %d (replay of #%d)", fname, i, n.ID)})
		}
		outs[i] = tt.newTensor(st, o.Shape, c.rec.Line, st.What)
		n.OutWeak[i] = st.ID
	}
	return outs
}

// runWarmup is run_eager: a warmup node runs the function eagerly with
// every allocation in the graph pool.
func (m *manager) runWarmup(c *call) ([]*Tensor, Action, error) {
	m.eng.markHeavy()
	already := m.eng.warmed(c.f)
	c.f.
		Warmups++
	m.warmupCounter--
	w := &WarmupNode{ID: m.warmupCounter, Fn: c.f.ID, ParentGraph: -1, Line: c.rec.Line, AlreadyWarm: already}
	if cw := m.curWarmup(); cw != nil {
		w.ParentWarm = cw.ID
	} else if cn := m.curNode(); cn != nil {
		w.ParentGraph = cn.ID
	}
	// Outputs that are (views of) inputs are rebuilt by AOTAutograd outside
	// the compiled model, so the warmup node never sees them.
	nonPath := map[int]bool{}
	for _, t := range c.args {
		nonPath[t.Storage] = true
	}
	if m.warmups == nil {
		m.warmups = map[int]*WarmupNode{}
	}
	m.warmups[w.ID] = w
	m.cur = w.ID
	m.pathState = PathWarmup
	m.updateGeneration()
	if err := m.eng.raiseStaleArg(c.args); err != nil {
		// PyTorch 2.11 (HandoffRaise): the new generation freed an input
		// and the warmup run raises on it, its node already current.
		w.Failed = true
		m.emit(Event{Kind: EvWarmup, Line: c.rec.Line, Device: m.ds.index, Fn: c.f.Name, FnID: c.f.ID, Node: -1, Parent: w.ParentGraph, WarmupID: w.ID,
			Msg: fmt.Sprintf("warmup of function %d raised: an input was freed by the new generation (PyTorch 2.11); the failed warmup node stays current", c.f.ID)})
		return nil, "", &keptError{err}
	}
	a := m.ds.alloc
	what := fmt.Sprintf("call %s: warmup %d", c.f.Name, w.ID)
	a.SetContext(c.rec.Line, what)
	if err := a.BeginAllocateToPool(m.pool, device.SideStream); err != nil {
		return nil, "", err
	}
	outs, err := m.eng.runBody(m.ds, c.f, c.args, bodyRun{stream: device.SideStream, pool: poolGraph, line: c.rec.Line, what: fmt.Sprintf("%s (warmup)", c.f.Name)})
	if endErr := a.EndAllocateToPool(m.pool); err == nil && endErr != nil {
		err = endErr
	}
	if err != nil {
		return nil, "", err
	}
	for i, t := range outs {
		s := m.eng.tt.storages[t.Storage]
		if nonPath[s.ID] || s.Ptr == 0 {
			w.OutWeak = append(w.OutWeak, 0)
		} else {
			w.OutWeak = append(w.OutWeak, s.ID)
		}
		w.OutShapes = append(w.OutShapes, outs[i].Shape)
	}
	m.eng.counters.Warmups++
	msg := fmt.Sprintf("Running warmup of function %d", c.f.ID)
	if already {
		msg = fmt.Sprintf("Running eager of function %d because ancestor needed to warm up", c.f.ID)
	}
	m.emit(Event{Kind: EvWarmup, Line: c.rec.Line, Device: m.ds.index, Fn: c.f.Name, FnID: c.f.ID, Node: -1, Parent: w.ParentGraph, WarmupID: w.ID, Msg: msg})
	return outs, ActionWarmup, nil
}

// runEagerOutside runs the model eagerly outside the pool: the tree is not
// touched (a mutation skip or the re-record limit).
func (m *manager) runEagerOutside(c *call, why string) ([]*Tensor, Action, error) {
	m.eng.markHeavy()
	m.ds.alloc.SetContext(c.rec.Line, fmt.Sprintf("call %s: eager", c.f.Name))
	outs, err := m.eng.runBody(m.ds, c.f, c.args, bodyRun{stream: device.DefaultStream, pool: poolDefault, line: c.rec.Line, what: fmt.Sprintf("%s (eager)", c.f.Name)})
	if err != nil {
		return nil, "", err
	}
	m.eng.counters.Eager++
	if why == "" {
		why = "mutates an input that is neither static nor an output of the current path"
	}
	m.emit(Event{Kind: EvEager, Line: c.rec.Line, Device: m.ds.index, Fn: c.f.Name, FnID: c.f.ID, Node: -1, Parent: -1, Msg: fmt.Sprintf("Running eager of function %d: %s", c.f.ID, why)})
	return outs, ActionEager, nil
}

// recordFunction is record_function + CUDAGraphNode.__init__: the inputs
// are classified and copied into the pool, the body is captured, outputs
// are classified, the pool's state is checkpointed, and the graph replays
// once to produce the first outputs.
func (m *manager) recordFunction(c *call, cause RecordCause, failures []InvariantFailure, rerecord bool) ([]*Tensor, Action, error) {
	m.eng.markHeavy()
	tt := m.eng.tt
	dev := m.ds.dev
	a := m.ds.alloc
	parent := m.curNode()
	id := len(m.nodes)
	n := &Node{ID: id, Fn: c.f.ID, Parent: -1, Line: c.rec.Line, Mode: c.f.Mode, Cause: cause, Failures: failures,
		Children: map[int][]int{}, InputShapes: c.f.Shapes}
	if parent != nil {
		n.Parent, n.Depth = parent.ID, parent.Depth+1
	}
	parentPath := m.path(parent)
	nIn := len(c.args)
	n.Static, n.Managed, n.Ptrs, n.InputNames = make([]bool, nIn), make([]bool, nIn), make([]device.Ptr, nIn), make([]string, nIn)
	n.CopySrc = make([]device.Ptr, nIn)
	for i, t := range c.args {
		s := tt.storages[t.Storage]
		n.InputNames[i] = argName(c.rec, i)
		if parent != nil && parent.isPathOutputPtr(m, s.Ptr) {
			n.Managed[i] = true
		}
		n.Static[i] = c.f.Static[i] || n.Managed[i]
		if n.Static[i] {
			n.Ptrs[i] = s.Ptr
		}
	}
	if parent != nil {
		n.LivenessBefore = m.eng.liveness(parentPath)
		n.ExpectedDeadBefore = differentIndices(parent.LivenessAfter, n.LivenessBefore)
	}
	what := fmt.Sprintf("call %s: record #%d", c.f.Name, id)
	a.SetContext(c.rec.Line, what)
	if err := a.BeginAllocateToPool(m.pool, device.SideStream); err != nil {
		return nil, "", err
	}
	ended := false
	endPool := func() error {
		if ended {
			return nil
		}
		ended = true
		return a.EndAllocateToPool(m.pool)
	}
	defer endPool()
	// Copy the non-static inputs into the pool. The copies own their
	// blocks only until the body returns: replays copy into the same
	// placeholders.
	bodyArgs := make([]*Tensor, nIn)
	var copies []*Tensor
	for i, t := range c.args {
		if n.Static[i] {
			bodyArgs[i] = t
			continue
		}
		s := tt.storages[t.Storage]
		cs, err := m.eng.allocStorage(m.ds, s.Bytes, device.SideStream, poolGraph, c.rec.Line, fmt.Sprintf("%s input %d (placeholder of #%d)", c.f.Name, i, id))
		if err != nil {
			return nil, "", fmt.Errorf("record #%d: copy input %d into the pool: %w", id, i, err)
		}
		ct := tt.newTensor(cs, t.Shape, c.rec.Line, cs.What)
		copies = append(copies, ct)
		bodyArgs[i] = ct
		n.Ptrs[i] = cs.Ptr
	}
	m.warnClobberedInputs(c, n)
	// torch.cuda.graph's __enter__ empties the cache on every recording.
	if err := a.EmptyCache(); err != nil {
		return nil, "", err
	}
	if err := dev.BeginCapture(device.SideStream); err != nil {
		return nil, "", fmt.Errorf("record #%d: begin capture: %w", id, err)
	}
	capturing := true
	defer func() {
		if capturing {
			if g, err := dev.EndCapture(device.SideStream); err == nil {
				dev.DestroyGraph(g)
			}
		}
	}()
	// The input copies are the graph's first nodes: every replay copies
	// the inputs' current values into the placeholders.
	for i, t := range c.args {
		if n.Static[i] {
			continue
		}
		src := tt.storages[t.Storage].Ptr
		if cnt := numElems(t.Shape); cnt > 0 {
			if err := dev.CopyDtoD(device.SideStream, n.Ptrs[i], src, cnt); err != nil {
				return nil, "", fmt.Errorf("record #%d: copy input %d: %w", id, i, err)
			}
			n.CopySrc[i] = src
		}
	}
	outs, err := m.eng.runBody(m.ds, c.f, bodyArgs, bodyRun{stream: device.SideStream, pool: poolGraph, line: c.rec.Line, what: fmt.Sprintf("%s (record #%d)", c.f.Name, id)})
	// The owning input copies die with the body (the model clears its inputs).
	for _, ct := range copies {
		if rerr := tt.release(ct); rerr != nil && err == nil {
			err = rerr
		}
	}
	if err != nil {
		return nil, "", fmt.Errorf("record #%d: %w", id, err)
	}
	capturing = false
	g, err := dev.EndCapture(device.SideStream)
	if err != nil {
		return nil, "", fmt.Errorf("record #%d: end capture: %w", id, err)
	}
	exec, err := dev.Instantiate(g)
	if err != nil {
		dev.DestroyGraph(g)
		return nil, "", fmt.Errorf("record #%d: instantiate: %w", id, err)
	}
	n.Graph, n.Exec = g, exec
	if err := endPool(); err != nil {
		return nil, "", err
	}
	// _add_first_outputs
	if parent != nil {
		n.ExpectedDeadAfter = differentIndices(n.LivenessBefore, m.eng.liveness(parentPath))
	}
	// Outputs that are (views of) inputs: AOTAutograd rebuilds them from
	// the caller's tensors outside the graph. Point them at the caller's
	// input (not at a placeholder), and keep them out of the tree.
	inputOf := map[int]int{}
	for i, t := range bodyArgs {
		inputOf[t.Storage] = i
	}
	for i, t := range outs {
		j, ok := inputOf[t.Storage]
		if !ok {
			continue
		}
		nt := tt.newTensor(tt.storages[c.args[j].Storage], t.Shape, t.Line, t.What)
		if err := tt.release(t); err != nil {
			return nil, "", fmt.Errorf("record #%d: %w", id, err)
		}
		outs[i] = nt
	}
	newIndex := map[device.Ptr]int{}
	n.Outputs = make([]outputInfo, len(outs))
	n.OutWeak = make([]int, len(outs))
	for i, t := range outs {
		s := tt.storages[t.Storage]
		o := outputInfo{Ptr: s.Ptr, Shape: t.Shape, Bytes: s.Bytes}
		j, isInput := 0, false
		for k, a := range c.args {
			if a.Storage == t.Storage {
				j, isInput = k, true
				break
			}
		}
		switch {
		case isInput:
			o.Alias, o.Input = aliasInput, j
		case s.Ptr == 0:
			o.Alias = aliasStatic
			o.StaticTensor = t.ID
			t.Cached = true
			s.Pins++
		case m.eng.priorOutput(parentPath, s) != nil:
			oi := *m.eng.priorOutput(parentPath, s)
			o.Alias, o.Prior = aliasPrior, oi
			parentPath[oi.Depth].Outputs[oi.Index].Unaliased = false
		default:
			if j, ok := newIndex[s.Ptr]; ok {
				o.Alias, o.New = aliasNew, j
				n.Outputs[j].Unaliased = false
			} else {
				newIndex[s.Ptr] = i
				o.Unaliased = true
			}
		}
		if o.Alias != aliasStatic && o.Alias != aliasInput {
			n.OutWeak[i] = s.ID
		}
		n.Outputs[i] = o
	}
	path := append(append([]*Node(nil), parentPath...), n)
	n.LivenessAfter = m.eng.liveness(path)
	st, err := a.GetCheckpointState(m.pool)
	if err != nil {
		return nil, "", fmt.Errorf("record #%d: checkpoint state: %w", id, err)
	}
	n.CheckpointState = st
	for d, lv := range n.LivenessAfter {
		for i, live := range lv {
			if live {
				n.LiveAfter = append(n.LiveAfter, OutputIndex{d, i})
			}
		}
	}
	if kn, err := dev.GraphNodes(g); err == nil {
		n.Kernels = kn
	}
	// The capture ran nothing: one replay makes the first outputs.
	if err := dev.LaunchGraph(exec, device.SideStream); err != nil {
		return nil, "", fmt.Errorf("record #%d: first replay: %w", id, err)
	}
	m.nodes = append(m.nodes, n)
	if parent == nil {
		if len(m.roots[c.f.ID]) == 0 {
			m.rootOrder = append(m.rootOrder, c.f.ID)
		}
		m.roots[c.f.ID] = append(m.roots[c.f.ID], id)
	} else {
		if len(parent.Children[c.f.ID]) == 0 {
			parent.childOrder = append(parent.childOrder, c.f.ID)
		}
		parent.Children[c.f.ID] = append(parent.Children[c.f.ID], id)
	}
	m.cur = id
	m.pathState = PathRecording
	m.warmups = nil
	m.updateGeneration()
	m.eng.counters.Recordings++
	if rerecord {
		m.eng.counters.Rerecords++
	}
	c.step.
		Node, c.step.Parent = id, n.Parent
	c.step.
		nodeFn = c.f.Name
	c.step.
		hasParentFn = true
	if parent != nil {
		c.step.
			parentFn = m.funcs[parent.Fn].Name
	}
	msg := fmt.Sprintf("Recording function %d of graph recording id %d", c.f.ID, id)
	if len(n.Kernels) == 0 {
		m.emit(Event{Kind: EvWarning, Line: c.rec.Line, Device: m.ds.index, Fn: c.f.Name, FnID: c.f.ID, Node: id, Parent: n.Parent,
			Msg: "The CUDA Graph is empty. This usually means that the graph was attempted to be captured on wrong device or stream."})
	}
	m.emit(Event{Kind: EvRecord, Line: c.rec.Line, Device: m.ds.index, Fn: c.f.Name, FnID: c.f.ID, Node: id, Parent: n.Parent,
		Cause: cause, Failures: failures, Rerecord: rerecord, Msg: msg})
	return outs, ActionRecord, nil
}

// priorOutput is _is_alias_of_live_recorded_tensor: the live path output
// whose storage s is, if any.
func (e *Engine) priorOutput(path []*Node, s *Storage) *OutputIndex {
	for d, x := range path {
		for i, sid := range x.OutWeak {
			if sid != 0 && e.tt.storageLive(sid) && e.tt.storages[sid].Ptr == s.Ptr && s.Ptr != 0 {
				return &OutputIndex{d, i}
			}
		}
	}
	return nil
}

// warnClobberedInputs flags an input that is a live replay output in the
// graph pool which the allocator believes free, when a placeholder of this
// very recording lands on it and an input copy writes there before the
// input is read (an earlier input's copy, or any copy for an input read in
// place). PyTorch 2.11 does the same silently; a debugger says so.
func (m *manager) warnClobberedInputs(c *call, n *Node) {
	for i, t := range c.args {
		s := m.eng.tt.storages[t.Storage]
		if s == nil || s.Pool != poolGraph || s.Owned || s.Ptr == 0 {
			continue
		}
		for j := range c.args {
			if n.Static[j] || (!n.Static[i] && j >= i) {
				continue
			}
			p := n.Ptrs[j]
			pb := m.eng.tt.storages[c.args[j].Storage].Bytes
			if p >= s.Ptr+device.Ptr(s.Bytes) || s.Ptr >= p+device.Ptr(pb) {
				continue
			}
			m.emit(Event{Kind: EvWarning, Line: c.rec.Line, Device: m.ds.index, Fn: c.f.Name, FnID: c.f.ID, Node: -1, Parent: -1,
				Tensors: []string{argName(c.rec, i)}, Ptrs: []uint64{uint64(s.Ptr)},
				Msg: fmt.Sprintf("input %d (%s) is a replay output the allocator believes free: the placeholder of input %d lands on it at %#x, so its value is overwritten before it is read (PyTorch does the same)", i, argName(c.rec, i), j, p)})
			break
		}
	}
}
