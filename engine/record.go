package engine

import (
	"fmt"
	"slices"

	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/traces"
)

// This file runs a function that has no graph to replay: warmup
// (CUDAWarmupNode), eagerly outside the tree, or recorded into a new
// CUDAGraphNode (record_function), in PyTorch's phases.

// runWarmup is run_eager: a warmup node runs the function eagerly with
// every allocation in the graph pool.
func (m *manager) runWarmup(c *call) ([]*Tensor, Action, error) {
	m.sh.snapshot()
	already := m.sh.warmed(c.f)
	f := c.f
	// Taken before the warmup becomes current: the path it continues.
	org := m.origin(c, f.Warmups == 0)
	f.Warmups++ // undone with the node's entry below
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
	ws, wid := m.warmups, w.ID
	// One undo for both (a closure each was an allocation a warmup).
	m.sh.onUndo(func() { delete(ws, wid); f.Warmups-- })
	m.cur = w.ID
	m.ranCurrent(c)
	m.pathState = PathWarmup
	m.updateGeneration()
	if err := m.sh.raiseStaleArg(c.args); err != nil {
		// PyTorch 2.11 (HandoffRaise): the new generation freed an input
		// and the warmup run raises on it, its node already current.
		return nil, "", m.failWarmup(c, w, org, err, "an input was freed by the new generation")
	}
	a := m.ds.alloc
	var buf [128]byte
	what := text{buf[:0]}.s("call ").s(c.f.Name).s(": warmup ").i(w.ID).String()
	a.SetContext(c.rec.Line, what)
	if err := m.enterTreeStream(); err != nil {
		return nil, "", err
	}
	if err := a.BeginAllocateToPool(m.pool, device.SideStream); err != nil {
		return nil, "", m.leaveTreeStream(err)
	}
	outs, err := m.sh.runBody(m.ds, c.f, c.args, bodyRun{stream: device.SideStream, pool: poolGraph, line: c.rec.Line, what: c.f.Name + " (warmup)"})
	if endErr := a.EndAllocateToPool(m.pool); err == nil && endErr != nil {
		err = endErr
	}
	if err = m.leaveTreeStream(err); err != nil {
		if pytorchRaised(err) {
			// The model raised (out of memory in the pool) inside
			// CUDAWarmupNode.run: runBody freed what it had made.
			return nil, "", m.failWarmup(c, w, org, err, "the model raised")
		}
		return nil, "", err
	}
	if len(outs) > 0 { // nil without outputs, as the appends left them
		w.OutWeak, w.OutShapes = make([]int, 0, len(outs)), make([][]int, 0, len(outs))
	}
	for i, t := range outs {
		s := m.sh.tt.storages.get(t.Storage)
		if nonPath[s.ID] || s.Ptr == 0 {
			w.OutWeak = append(w.OutWeak, 0)
		} else {
			w.OutWeak = append(w.OutWeak, s.ID)
		}
		w.OutShapes = append(w.OutShapes, outs[i].Shape)
	}
	m.sh.counters.Warmups++
	msg := text{buf[:0]}.s("Running warmup of function ").i(c.f.ID).String()
	if already {
		msg = fmt.Sprintf("Running eager of function %d because ancestor needed to warm up", c.f.ID)
	}
	m.emit(Event{Kind: EvWarmup, Line: c.rec.Line, Device: m.ds.index, Fn: c.f.Name, FnID: c.f.ID, Node: -1, Parent: w.ParentGraph, WarmupID: w.ID, Origin: org, Msg: msg})
	return outs, ActionWarmup, nil
}

// failWarmup is a warmup whose run raised (err): run_eager has made its
// node w current and the function warm, and node.run raised before the node
// held a weak reference to any output. PyTorch reports the call as the
// warmup it was, with its error (issue 33 item 6). Under HandoffRaise the
// node stays current with no outputs (2.11: the next new generation then
// fails in dealloc_current_path_weakrefs); otherwise the record rolls back.
func (m *manager) failWarmup(c *call, w *WarmupNode, org *Origin, err error, why string) error {
	w.Failed = true
	m.emit(Event{Kind: EvWarmup, Line: c.rec.Line, Device: m.ds.index, Fn: c.f.Name, FnID: c.f.ID, Node: -1, Parent: w.ParentGraph, WarmupID: w.ID, Origin: org,
		Msg: fmt.Sprintf("warmup of function %d raised: %s (PyTorch 2.11); the failed warmup node stays current", c.f.ID, why)})
	return m.raiseIn(err, ActionWarmup, nil)
}

// runEagerOutside runs the model eagerly outside the pool: the tree is not
// touched (a mutation skip or the re-record limit).
func (m *manager) runEagerOutside(c *call, why string) ([]*Tensor, Action, error) {
	m.sh.snapshot()
	m.ds.alloc.SetContext(c.rec.Line, fmt.Sprintf("call %s: eager", c.f.Name))
	outs, err := m.sh.runBody(m.ds, c.f, c.args, bodyRun{stream: device.DefaultStream, pool: poolDefault, line: c.rec.Line, what: fmt.Sprintf("%s (eager)", c.f.Name)})
	if err != nil {
		return nil, "", err
	}
	m.sh.counters.Eager++
	if why == "" {
		why = "mutates an input that is neither static nor an output of the current path"
	}
	m.emit(Event{Kind: EvEager, Line: c.rec.Line, Device: m.ds.index, Fn: c.f.Name, FnID: c.f.ID, Node: -1, Parent: -1, Msg: fmt.Sprintf("Running eager of function %d: %s", c.f.ID, why)})
	return outs, ActionEager, nil
}

// savedInput reports whether output t of a recording, over the storage of
// body argument j (arg), is an input the forward saved for its backward.
// AOTAutograd rebuilds an output that aliases an input from the caller's
// tensor, so the tree never sees it; but a forward graph also returns the
// tensors the backward needs, and a saved input is returned as the graph's
// own input: during the recording that is the copy of the input in the
// pool (or, for an input that is a tree output, that output), so
// _add_first_outputs classifies it as a new pool output (or as an alias of
// the prior output), whose liveness the tree tracks like any other. A
// parameter (a static input) stays outside: its storage is persistent.
// Only the whole input counts: a view of it is a user output's alias.
func savedInput(f *Function, n *Node, j int, t, arg *Tensor) bool {
	if f.Mode != traces.ModeForward || (f.Static[j] && !n.Managed[j]) {
		return false
	}
	return t.Offset == arg.Offset && slices.Equal(t.Shape, arg.Shape) && slices.Equal(t.Strides, arg.Strides)
}

// recordFunction is record_function: a new CUDAGraphNode, made by its
// __init__ in PyTorch's phases (initNode, recordInPool, addFirstOutputs,
// then one replay for the first outputs), becomes a root or the current
// node's child (addToTree), and the current node.
func (m *manager) recordFunction(c *call, cause RecordCause, failures []InvariantFailure, rerecord bool) ([]*Tensor, Action, error) {
	m.sh.snapshot()
	parent := m.curNode()
	parentPath := m.path(parent)
	n := m.initNode(c, parent, parentPath, cause, failures)
	n.Origin = m.origin(c, c.f.recordings == 0)
	id := n.ID
	bodyArgs, outs, err := m.recordInPool(c, n)
	if err != nil {
		if pytorchRaised(err) {
			// CUDAGraphNode.__init__ raised (out of memory copying the
			// inputs into the pool or capturing): record_function never
			// adds the node, and what _run did before it stays.
			return nil, "", m.raiseIn(err, ActionRecord, nil)
		}
		return nil, "", err
	}
	if outs, err = m.addFirstOutputs(c, n, parentPath, bodyArgs, outs); err != nil {
		return nil, "", err
	}
	dev := m.ds.dev
	if kn, err := dev.GraphNodes(n.Graph); err == nil {
		n.Kernels = kn
	}
	// The capture ran nothing: one replay makes the first outputs, on the
	// default stream as every replay (streams.go), so the tree's stream,
	// which only captured, needs no wait either way.
	if err := dev.LaunchGraph(n.Exec, device.DefaultStream); err != nil {
		return nil, "", fmt.Errorf("record #%d: first replay: %w", id, err)
	}
	m.addToTree(n, parent, c.f.ID)
	f := c.f
	f.recordings++
	m.sh.onUndo(func() { f.recordings-- })
	m.cur = id
	m.ranCurrent(c)
	m.pathState = PathRecording
	m.warmups = nil
	m.updateGeneration()
	m.sh.counters.Recordings++
	if rerecord {
		m.sh.counters.Rerecords++
	}
	c.out.node, c.out.parent = id, n.Parent
	var buf [128]byte
	msg := text{buf[:0]}.s("Recording function ").i(c.f.ID).s(" of graph recording id ").i(id).String()
	if len(n.Kernels) == 0 {
		m.emit(Event{Kind: EvWarning, Line: c.rec.Line, Device: m.ds.index, Fn: c.f.Name, FnID: c.f.ID, Node: id, Parent: n.Parent,
			Msg: "The CUDA Graph is empty. This usually means that the graph was attempted to be captured on wrong device or stream."})
	}
	m.emit(Event{Kind: EvRecord, Line: c.rec.Line, Device: m.ds.index, Fn: c.f.Name, FnID: c.f.ID, Node: id, Parent: n.Parent,
		Cause: cause, Failures: failures, Rerecord: rerecord, Origin: n.Origin, Msg: msg})
	return outs, ActionRecord, nil
}

// origin is what the engine knows of call c's warmup or recording beyond
// its cause (Origin), taken before the call's node becomes current: the
// compiled graph Dynamo gave it, the call that ran the current node or
// warmup (the one c follows on the path), and for a backward the forward
// whose outputs it takes. first says whether this is the function's first
// warmup or recording.
func (m *manager) origin(c *call, first bool) *Origin {
	f := c.f
	o := &Origin{Compile: f.Compile, Dynamic: f.Dynamic, Size: f.Size, Graph: f.Graph, First: first, ForwardNode: -1}
	for i, s := range f.Shapes {
		if i >= len(f.Static) || !f.Static[i] {
			o.Shapes = append(o.Shapes, s)
		}
	}
	if m.cur != noNode {
		p := &PrevCall{Line: m.curLine, Node: m.cur}
		if w := m.curWarmup(); w != nil {
			p.Fn = m.funcs[w.Fn].Name
		} else if n := m.curNode(); n != nil {
			p.Fn = m.funcs[n.Fn].Name
		}
		if inv := c.rec.Invocation; inv != nil && m.curHasInv {
			p.Invocations, p.SameInvocation = true, *inv == m.curInv
		}
		o.Prev = p
	}
	if f.Mode == traces.ModeBackward {
		o.Backward = true
		o.Forward, o.ForwardNode = m.forwardOf(c)
	}
	return o
}

// forwardOf finds the forward on the current path whose outputs a
// backward call takes (the tensors autograd saved for it), nearest first:
// a warmup's outputs by the storages it keeps, a recorded node's by its
// outputs' storages. It returns the forward's function and its node (a
// graph id, or a negative warmup id), or "" and -1.
func (m *manager) forwardOf(c *call) (string, int) {
	takes := func(out []int) bool {
		for _, sid := range out {
			if sid == 0 {
				continue
			}
			for _, t := range c.args {
				if t.Storage == sid {
					return true
				}
			}
		}
		return false
	}
	n := m.curNode()
	if w := m.curWarmup(); w != nil {
		var chain []*WarmupNode
		chain, n = m.warmupChain(w)
		for _, x := range chain {
			if m.funcs[x.Fn].Mode == traces.ModeForward && takes(x.OutWeak) {
				return m.funcs[x.Fn].Name, x.ID
			}
		}
	}
	for x := n; x != nil; x = m.nodesOrNil(x.Parent) {
		if x.Mode == traces.ModeForward && takes(x.OutWeak) {
			return m.funcs[x.Fn].Name, x.ID
		}
	}
	return "", -1
}

// initNode is CUDAGraphNode.__init__ up to the recording: the node's place
// under parent, its inputs classified (cudagraph_managed_idxs: outputs of
// the path; static_input_idxs: those and the function's static inputs,
// whose pointers it keeps), and the path's liveness before the graph
// (recorded_liveness_before_graph, expected_dead_indices_before_graph).
func (m *manager) initNode(c *call, parent *Node, parentPath []*Node, cause RecordCause, failures []InvariantFailure) *Node {
	tt := m.sh.tt
	n := &Node{ID: len(m.nodes), Fn: c.f.ID, Parent: -1, Line: c.rec.Line, Mode: c.f.Mode, Cause: cause, Failures: failures,
		InputShapes: c.f.Shapes}
	if parent != nil {
		n.Parent, n.Depth = parent.ID, parent.Depth+1
	}
	nIn := len(c.args)
	n.carveReplayData(nIn, len(c.f.plan.returns))
	n.InputNames = make([]string, nIn)
	n.RerecordIfStatic = m.sh.cfg.InlineInbuiltNNModules || m.sh.cfg.SupportInputMutation
	for i, t := range c.args {
		s := tt.storages.get(t.Storage)
		n.InputNames[i] = argName(c.rec, i)
		if parent != nil && parent.isPathOutputPtr(m, s.Ptr) {
			n.Managed[i] = true
		}
		n.Static[i] = c.f.Static[i] || n.Managed[i]
		if n.Static[i] {
			n.Ptrs[i] = tt.dataPtr(t)
		}
	}
	if parent != nil {
		n.LivenessBefore = m.liveness(parentPath)
		n.ExpectedDeadBefore = differentIndices(parent.LivenessAfter, n.LivenessBefore)
	}
	return n
}

// recordInPool is what CUDAGraphNode.__init__ does inside the graph pool
// (_use_cuda_memory_pool_manager): the inputs copied into it
// (allocateRecordingInputs), then the capture (record). It returns the
// body's arguments (the static inputs themselves, placeholders for the
// others) and its outputs.
func (m *manager) recordInPool(c *call, n *Node) (bodyArgs, outs []*Tensor, err error) {
	a := m.ds.alloc
	var buf [128]byte
	a.SetContext(c.rec.Line, text{buf[:0]}.s("call ").s(c.f.Name).s(": record #").i(n.ID).String())
	if err := a.BeginAllocateToPool(m.pool, device.SideStream); err != nil {
		return nil, nil, err
	}
	bodyArgs, copies, err := m.allocateRecordingInputs(c, n)
	if err == nil {
		m.warnClobberedInputs(c, n)
		outs, err = m.record(c, n, bodyArgs, copies)
	}
	// Ended after a failure too, its own failure then unreported.
	if endErr := a.EndAllocateToPool(m.pool); err == nil && endErr != nil {
		err = endErr
	}
	if err != nil {
		return nil, nil, err
	}
	return bodyArgs, outs, nil
}

// allocateRecordingInputs is _allocate_and_copy_recording_inputs: every
// non-static input gets a placeholder in the pool, torch.empty_strided of
// the input's size and strides (so it spans the view, not its storage),
// whose address the node keeps. The placeholders (copies) own their
// blocks only until the body returns: replays copy into the same
// addresses. The values are copied by the graph itself (record).
func (m *manager) allocateRecordingInputs(c *call, n *Node) (bodyArgs, copies []*Tensor, err error) {
	tt := m.sh.tt
	var buf [128]byte
	bodyArgs = make([]*Tensor, len(c.args))
	for i, t := range c.args {
		if n.Static[i] {
			bodyArgs[i] = t
			continue
		}
		cs, err := m.sh.allocStorage(m.ds, t.extentBytes(), device.SideStream, poolGraph, c.rec.Line, text{buf[:0]}.s(c.f.Name).s(" input ").i(i).s(" (placeholder of #").i(n.ID).s(")").String())
		if err != nil {
			// The copies made so far die with the failed __init__ (kept
			// under HandoffRaise, where nothing rolls back).
			for _, ct := range copies {
				tt.release(ct)
			}
			return nil, nil, fmt.Errorf("record #%d: copy input %d into the pool: %w", n.ID, i, err)
		}
		ct := tt.newTensor(cs, t.Shape, c.rec.Line, cs.What)
		ct.DType, ct.Strides = t.DType, t.Strides
		copies = append(copies, ct)
		bodyArgs[i] = ct
		n.Ptrs[i] = cs.Ptr
	}
	return bodyArgs, copies, nil
}

// record is CUDAGraphNode._record: torch.cuda.graph empties the cache and
// captures on the tree's stream the input copies (the graph's first nodes:
// every replay copies the inputs' current values into the placeholders)
// and one run of the body; the graph is instantiated. The placeholders die
// with the body (the model clears its inputs).
func (m *manager) record(c *call, n *Node, bodyArgs, copies []*Tensor) ([]*Tensor, error) {
	tt, dev, id := m.sh.tt, m.ds.dev, n.ID
	// torch.cuda.graph's __enter__ empties the cache on every recording.
	if err := m.ds.alloc.EmptyCache(); err != nil {
		return nil, err
	}
	if err := dev.BeginCapture(device.SideStream); err != nil {
		return nil, fmt.Errorf("record #%d: begin capture: %w", id, err)
	}
	capturing := true
	defer func() {
		if capturing {
			if g, err := dev.EndCapture(device.SideStream); err == nil {
				dev.DestroyGraph(g)
			}
		}
	}()
	for i, t := range c.args {
		if n.Static[i] {
			continue
		}
		src := tt.dataPtr(t)
		if cnt := words(t.extentBytes()); cnt > 0 {
			if err := dev.CopyDtoD(device.SideStream, n.Ptrs[i], src, cnt); err != nil {
				return nil, fmt.Errorf("record #%d: copy input %d: %w", id, i, err)
			}
			n.CopySrc[i] = src
		}
	}
	var buf [128]byte
	outs, err := m.sh.runBody(m.ds, c.f, bodyArgs, bodyRun{stream: device.SideStream, pool: poolGraph, line: c.rec.Line, what: text{buf[:0]}.s(c.f.Name).s(" (record #").i(id).s(")").String()})
	for _, ct := range copies {
		if rerr := tt.release(ct); rerr != nil && err == nil {
			err = rerr
		}
	}
	if err != nil {
		return nil, fmt.Errorf("record #%d: %w", id, err)
	}
	capturing = false
	g, err := dev.EndCapture(device.SideStream)
	if err != nil {
		return nil, fmt.Errorf("record #%d: end capture: %w", id, err)
	}
	exec, err := dev.Instantiate(g)
	if err != nil {
		dev.DestroyGraph(g)
		return nil, fmt.Errorf("record #%d: instantiate: %w", id, err)
	}
	n.Graph, n.Exec = g, exec
	return outs, nil
}

// addFirstOutputs is CUDAGraphNode._add_first_outputs, in its order: the
// path outputs that died during the recording
// (expected_dead_indices_after_graph), each output's alias class and weak
// reference (classifyOutputs), the liveness after the graph, the pool's
// checkpoint state, and the live indices after the graph. It returns the
// outputs the caller gets (rebuildInputAliases).
func (m *manager) addFirstOutputs(c *call, n *Node, parentPath []*Node, bodyArgs, outs []*Tensor) ([]*Tensor, error) {
	if n.Parent >= 0 {
		n.ExpectedDeadAfter = differentIndices(n.LivenessBefore, m.liveness(parentPath))
	}
	saved, err := m.rebuildInputAliases(c, n, bodyArgs, outs)
	if err != nil {
		return nil, err
	}
	m.classifyOutputs(c, n, parentPath, outs, saved)
	path := append(append([]*Node(nil), parentPath...), n)
	n.LivenessAfter = m.liveness(path)
	st, err := m.ds.alloc.GetCheckpointState(m.pool)
	if err != nil {
		return nil, fmt.Errorf("record #%d: checkpoint state: %w", n.ID, err)
	}
	n.CheckpointState = st
	for d, lv := range n.LivenessAfter {
		for i, live := range lv {
			if live {
				n.LiveAfter = append(n.LiveAfter, OutputIndex{d, i})
			}
		}
	}
	return outs, nil
}

// rebuildInputAliases handles the outputs that are (views of) inputs:
// AOTAutograd rebuilds them from the caller's tensors outside the graph,
// so each is pointed at the caller's input (not at a placeholder) and
// kept out of the tree; but an input the forward saved for its backward
// is the graph's own output (savedInput), marked in saved.
func (m *manager) rebuildInputAliases(c *call, n *Node, bodyArgs, outs []*Tensor) (saved []bool, err error) {
	tt := m.sh.tt
	inputOf := map[int]int{}
	for i, t := range bodyArgs {
		inputOf[t.Storage] = i
	}
	saved = make([]bool, len(outs))
	for i, t := range outs {
		j, ok := inputOf[t.Storage]
		if !ok {
			continue
		}
		if savedInput(c.f, n, j, t, bodyArgs[j]) {
			saved[i] = true
			continue
		}
		nt := tt.newTensor(tt.storages.get(c.args[j].Storage), t.Shape, t.Line, t.What)
		nt.DType = t.DType
		if err := tt.release(t); err != nil {
			return nil, fmt.Errorf("record #%d: %w", n.ID, err)
		}
		outs[i] = nt
	}
	return saved, nil
}

// classifyOutputs gives each output its alias class, in PyTorch's order
// (an input's alias; a static or empty storage; AliasesPriorGraphOutput;
// AliasesNewOutput; else unaliased, to be cached), and a weak reference
// to the outputs the tree tracks (outputs_weakrefs).
func (m *manager) classifyOutputs(c *call, n *Node, parentPath []*Node, outs []*Tensor, saved []bool) {
	tt := m.sh.tt
	newIndex := map[device.Ptr]int{}
	n.Outputs = make([]outputInfo, len(outs))
	if len(n.OutWeak) != len(outs) {
		// The body returned another count than its plan says (carved
		// for): the outputs get slices of their own.
		n.OutWeak, n.cachedStore = make([]int, len(outs)), nil
	}
	for i, t := range outs {
		s := tt.storages.get(t.Storage)
		o := outputInfo{Ptr: s.Ptr, Shape: t.Shape, DType: t.DType, Bytes: s.Bytes}
		j, isInput := 0, false
		for k, a := range c.args {
			if a.Storage == t.Storage && !saved[i] {
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
			tt.keepT(t)
			tt.keepS(s)
			t.Cached = true
			s.Pins++
		case m.priorOutput(parentPath, s) != nil:
			oi := *m.priorOutput(parentPath, s)
			o.Alias, o.Prior = aliasPrior, oi
			m.keepNode(parentPath[oi.Depth])
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
}

// addToTree is record_function's insertion of the new node n: appended to
// roots[fid] when there is no current node (parent nil), else to the
// current node's children[fid] (add_child), under the record's undo.
func (m *manager) addToTree(n, parent *Node, fid int) {
	id := n.ID
	m.nodes = append(m.nodes, n)
	if parent == nil {
		// One undo for both (a closure each was an allocation a node).
		order := m.rootOrder
		m.sh.onUndo(func() { m.nodes, m.rootOrder = m.nodes[:id], order })
		// Room for every FunctionID at once, as for the dispatch table.
		if nf := len(m.funcs); cap(m.roots) < nf {
			old := m.roots
			m.roots = slices.Grow(m.roots, nf-len(m.roots))
			m.sh.onUndo(func() { m.roots = old })
		}
		if roots := m.rootsOf(fid); len(roots) == 0 {
			m.rootOrder = append(m.rootOrder, fid)
			setAt(m.sh, &m.roots, fid, m.firstRoot(id))
		} else {
			setAt(m.sh, &m.roots, fid, append(roots, id))
		}
		return
	}
	m.sh.onUndo(func() { m.nodes = m.nodes[:id] })
	m.keepNode(parent)
	if len(parent.Children[fid]) == 0 {
		parent.childOrder = append(parent.childOrder, fid)
	}
	if parent.Children == nil {
		parent.Children = map[int][]int{}
	}
	parent.Children[fid] = append(parent.Children[fid], id)
}

// priorOutput is _is_alias_of_live_recorded_tensor: the live path output
// whose storage s is, if any.
func (m *manager) priorOutput(path []*Node, s *Storage) *OutputIndex {
	tt := m.sh.tt
	for d, x := range path {
		for i, sid := range x.OutWeak {
			if sid != 0 && tt.storageLive(sid) && tt.storages.get(sid).Ptr == s.Ptr && s.Ptr != 0 {
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
		s := m.sh.tt.storages.get(t.Storage)
		if s == nil || s.Pool != poolGraph || s.Owned || s.Ptr == 0 {
			continue
		}
		for j := range c.args {
			if n.Static[j] || (!n.Static[i] && j >= i) {
				continue
			}
			p := n.Ptrs[j]
			pb := m.sh.tt.storages.get(c.args[j].Storage).Bytes
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
