package engine

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/traces"
)

// This file replays a recorded node: check_invariants over its inputs and
// liveness, then execute_node (copy the inputs, launch the graph, hand out
// its cached outputs).

// liveness is _get_liveness: the liveness of every output on path.
func (m *manager) liveness(path []*Node) [][]bool {
	tt := m.sh.tt
	out := make([][]bool, len(path))
	// One array for every depth's flags (each row capped, so that an
	// append to one copies): taken at each recording, of a whole path.
	total := 0
	for _, x := range path {
		total += len(x.OutWeak)
	}
	flags := make([]bool, total)
	for d, x := range path {
		out[d], flags = flags[:len(x.OutWeak):len(x.OutWeak)], flags[len(x.OutWeak):]
		for i, sid := range x.OutWeak {
			out[d][i] = sid != 0 && tt.storageLive(sid)
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
	if m.inputMoved(&fail, n, c.args, n.Managed, c.rec) {
		fail.Status = StatusCudagraphManagedIdxMismatch
		return fail
	}
	var path []*Node
	if len(n.ExpectedDeadBefore) > 0 {
		path = m.pathOf(n)
	}
	for _, oi := range n.ExpectedDeadBefore {
		sid := path[oi.Depth].OutWeak[oi.Index]
		if sid != 0 && m.sh.tt.storageLive(sid) {
			fail.Outputs = append(fail.Outputs, oi)
			fail.OutputNames = append(fail.OutputNames, m.sh.tt.nameOfStorage(sid))
		}
	}
	if len(fail.Outputs) > 0 {
		fail.Status = StatusExpectedDeadIndicesBeforeGraphMismatch
		return fail
	}
	if n.RerecordIfStatic && m.inputMoved(&fail, n, c.args, n.Static, c.rec) {
		fail.Status = StatusStaticInputIdxMismatch
		return fail
	}
	fail.Status = StatusSuccess
	return fail
}

// inputMoved reports whether an input marked in which has another address
// than when n was recorded, and puts the first such input into fail.
func (m *manager) inputMoved(fail *InvariantFailure, n *Node, args []*Tensor, which []bool, rec *traces.Record) bool {
	for i, t := range args {
		if !which[i] {
			continue
		}
		if p := m.sh.tt.dataPtr(t); p != n.Ptrs[i] {
			fail.Input, fail.Old, fail.New = i, uint64(n.Ptrs[i]), uint64(p)
			fail.InputName = argName(rec, i)
			return true
		}
	}
	return false
}

// pathOf is m.path(n) in the call's buffer: valid until the next call,
// for the replay path, which looks at the path of each candidate once.
func (m *manager) pathOf(n *Node) []*Node {
	p := slices.Grow(m.sh.scratch.path[:0], n.Depth+1)[:n.Depth+1]
	for x := n; x != nil; x = m.nodesOrNil(x.Parent) {
		p[x.Depth] = x
	}
	m.sh.scratch.path = p
	return p
}

// argName is the call's name for its argument i ("" when it has none).
func argName(rec *traces.Record, i int) string {
	if i < len(rec.Args) {
		return rec.Args[i]
	}
	return ""
}

// staticMoved is executeNode's error for static input i of c, found at p
// rather than where n recorded it. It is out of line, as the replay's
// other errors are (replayErr): formatting inline was most of
// executeNode's code, between the instructions every replay runs.
func (m *manager) staticMoved(n *Node, c *call, i int, t *Tensor, p device.Ptr) error {
	// execute_node made the node current before node.run raised (kept
	// under HandoffRaise).
	m.cur = n.ID
	m.pathState = PathExecution
	m.warmups = nil
	m.updateGeneration()
	err := fmt.Errorf("static input data pointer changed.\ninput name: %s. data pointer changed from %#x to %#x. input stack trace: line %d (%s)",
		argName(c.rec, i), uint64(n.Ptrs[i]), uint64(p), t.Line, t.What)
	return m.raiseIn(err, ActionReplay, n)
}

// replayErr is executeNode's error when the device refuses a step of
// node id's replay (what, "" for the launch).
func replayErr(id int, what string, i int, err error) error {
	if what == "" {
		return fmt.Errorf("replay #%d: %w", id, err)
	}
	return fmt.Errorf("replay #%d: %s %d: %w", id, what, i, err)
}

// executeNode replays n (execute_node + CUDAGraphNode.run).
func (m *manager) executeNode(n *Node, c *call) ([]*Tensor, Action, error) {
	dev := m.ds.dev
	if !n.RerecordIfStatic {
		// check_static_inputs_are_stable, over the static inputs the tree
		// does not manage (check_invariants saw to the managed ones).
		for i, t := range c.args {
			if !n.Static[i] || n.Managed[i] {
				continue
			}
			if p := m.sh.tt.dataPtr(t); p != n.Ptrs[i] {
				return nil, ActionReplay, m.staticMoved(n, c, i, t, p)
			}
		}
	}
	// On the replay fast path no snapshot exists and this saves nothing.
	m.keepNode(n)
	// The graph's first nodes copy the non-static inputs into their
	// placeholders (PyTorch's _foreach_copy_ before replay, in the graph);
	// point them at the inputs' current addresses where they moved.
	for i, t := range c.args {
		if n.Static[i] {
			continue
		}
		src := m.sh.tt.dataPtr(t)
		if cnt := words(t.extentBytes()); cnt > 0 && src != n.CopySrc[i] {
			if err := dev.UpdateCopy(n.Exec, n.Ptrs[i], src, cnt); err != nil {
				n.CopySrc[i] = 0
				return nil, "", replayErr(n.ID, "copy input", i, err)
			}
			n.CopySrc[i] = src
		}
	}
	// On the default stream, as CUDAGraph.replay() runs on the current
	// one: after the inputs' writers and before their readers (streams.go).
	if err := dev.LaunchGraph(n.Exec, device.DefaultStream); err != nil {
		return nil, "", replayErr(n.ID, "", 0, err)
	}
	// From here on nothing can fail: the replay happened.
	m.cur = n.ID
	m.ranCurrent(c)
	m.pathState = PathExecution
	m.warmups = nil
	m.updateGeneration()
	outs := m.reconstructOutputs(n, c)
	n.Replays++
	m.sh.counters.Replays++
	c.out.node, c.out.parent = n.ID, n.Parent
	m.emit(Event{Kind: EvReplay, Line: c.rec.Line, Device: m.ds.index, Fn: m.funcs[n.Fn].Name, FnID: n.Fn, Node: n.ID, Parent: n.Parent})
	return outs, ActionReplay, nil
}

// reconstructOutputs is reconstruct_outputs: cached outputs are the same
// tensor objects every replay; the others are rebuilt on non-owning storages
// at the recorded pointers. The first replay's caching and the rebuilding
// are functions of their own: the replay path runs neither most of the
// time, and inline they sat between the instructions it does run.
func (m *manager) reconstructOutputs(n *Node, c *call) []*Tensor {
	tt := m.sh.tt
	if n.Cached == nil {
		m.cacheOutputs(n, c)
	}
	// The outputs' slice is the engine's (runInTree binds them and keeps
	// nothing), so a replay allocates none; the path only where an output
	// aliases an earlier node's.
	outs := slices.Grow(m.sh.scratch.outs[:0], len(n.Outputs))[:len(n.Outputs)]
	clear(outs)
	m.sh.scratch.outs = outs
	var path []*Node
	for i := range n.Outputs {
		// A cached output needs nothing of the output's metadata: its
		// 100 bytes are not read (nor copied) on the replay path.
		if tid := n.Cached[i]; tid != 0 {
			t := tt.tensors.get(tid)
			tt.hold(t)
			outs[i] = t
			continue
		}
		outs[i] = m.rebuildOutput(n, c, i, outs, &path)
	}
	return outs
}

// cacheOutputs makes, at n's first replay, the tensors of its unaliased
// outputs that every later replay hands back (n.Cached).
func (m *manager) cacheOutputs(n *Node, c *call) {
	tt := m.sh.tt
	fname := m.funcs[n.Fn].Name
	n.Cached = n.newCached()
	for i, o := range n.Outputs {
		if !o.Unaliased {
			continue
		}
		st := tt.newStorage(Storage{Dev: m.ds.index, Ptr: o.Ptr, Bytes: o.Bytes, Pool: poolGraph, Pins: 1,
			Line: c.rec.Line, What: fname + " output " + strconv.Itoa(i) + " (replay of #" + strconv.Itoa(n.ID) + ")"})
		t := tt.newTensor(st, o.Shape, c.rec.Line, st.What)
		t.DType = o.DType
		t.holds = 0
		t.Cached = true
		st.Refs = 0
		n.Cached[i] = t.ID
		n.OutWeak[i] = st.ID
	}
}

// rebuildOutput is reconstructOutputs' output i of n that is not cached:
// a view of an input, a static tensor, or a tensor on the storage of an
// earlier output (of the path, *path made on first need, or of this
// replay, outs) or on a new one at the recorded pointer.
func (m *manager) rebuildOutput(n *Node, c *call, i int, outs []*Tensor, path *[]*Node) *Tensor {
	tt := m.sh.tt
	fname := m.funcs[n.Fn].Name
	o := &n.Outputs[i]
	if o.Alias == aliasInput {
		t := tt.newTensor(tt.storages.get(c.args[o.Input].Storage), o.Shape, c.rec.Line, fmt.Sprintf("%s output %d", fname, i))
		t.DType = o.DType
		return t
	}
	if o.Alias == aliasStatic {
		t := tt.tensors.get(o.StaticTensor)
		if t == nil {
			// The static tensor object died; rebuild a view of its storage.
			st := tt.newStorage(Storage{Dev: m.ds.index, Ptr: o.Ptr, Bytes: o.Bytes, Pool: poolDefault, Param: true, Line: c.rec.Line, What: fmt.Sprintf("%s output %d", fname, i)})
			t = tt.newTensor(st, o.Shape, c.rec.Line, st.What)
			t.DType = o.DType
			return t
		}
		tt.hold(t)
		return t
	}
	var st *Storage
	switch o.Alias {
	case aliasPrior:
		if *path == nil {
			*path = m.pathOf(n)
		}
		if sid := (*path)[o.Prior.Depth].OutWeak[o.Prior.Index]; sid != 0 && tt.storageLive(sid) {
			st = tt.storages.get(sid)
		}
	case aliasNew:
		st = tt.storages.get(outs[o.New].Storage)
	}
	if st == nil {
		st = tt.newStorage(Storage{Dev: m.ds.index, Ptr: o.Ptr, Bytes: o.Bytes, Pool: poolGraph,
			Line: c.rec.Line, What: fmt.Sprintf("%s output %d (replay of #%d)", fname, i, n.ID)})
	}
	t := tt.newTensor(st, o.Shape, c.rec.Line, st.What)
	t.DType = o.DType
	n.OutWeak[i] = st.ID
	return t
}
