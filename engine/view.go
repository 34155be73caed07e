package engine

import (
	"fmt"
	"sort"

	"github.com/cgtviz/cgtviz/engine/alloc"
	"github.com/cgtviz/cgtviz/engine/device"
)

// State returns a deep, immutable view of the engine now.
func (e *Engine) State() *State {
	st := &State{Step: e.steps, Generation: e.currGeneration(), MarkSteps: -e.markStep, Counters: e.counters}
	// Names per tensor.
	names := map[int][]string{}
	for n, id := range e.tt.names {
		names[id] = append(names[id], n)
	}
	for _, ns := range names {
		sort.Strings(ns)
	}
	// The oldest live named tensor of each storage, found once (an output
	// names it): looking it up per output made a State of a big tree
	// quadratic.
	oldest := map[int]int{}
	for _, t := range e.tt.tensors.all() {
		if !t.live() || len(names[t.ID]) == 0 {
			continue
		}
		if b, ok := oldest[t.Storage]; !ok || t.ID < b {
			oldest[t.Storage] = t.ID
		}
	}
	for _, ds := range e.devs {
		st.Devices = append(st.Devices, e.deviceState(ds, names, oldest))
	}
	for _, t := range e.tt.tensors.all() {
		if !t.live() {
			continue
		}
		s := e.tt.storages.get(t.Storage)
		tv := TensorView{ID: t.ID, Names: names[t.ID], Shape: append([]int(nil), t.Shape...), Line: t.Line, Producer: t.What, State: TensorLive}
		if s != nil {
			tv.Device, tv.Ptr, tv.Bytes, tv.Pool, tv.Storage = s.Dev, uint64(s.Ptr), s.Bytes, s.Pool.String(), s.ID
			switch {
			case s.Param:
				tv.Owner = "param"
			case s.Owned:
				tv.Owner = "allocator"
			case s.Stale:
				tv.Owner = "none (freed)"
			default:
				tv.Owner = "none (replay output)"
			}
			if s.Stale {
				tv.State = TensorStale
			}
		}
		st.Tensors = append(st.Tensors, tv)
	}
	sort.Slice(st.Tensors, func(i, j int) bool { return st.Tensors[i].ID < st.Tensors[j].ID })
	n := 0
	for _, ds := range e.devs {
		n += len(ds.m.funcs)
	}
	if n > 0 {
		st.Functions = make([]FunctionView, 0, n)
	}
	for _, ds := range e.devs {
		for _, f := range ds.m.funcs {
			st.Functions = append(st.Functions, e.functionView(f))
		}
	}
	return st
}

// functionView returns f's view, made once per function and again only
// when whether it is warmed changes (a warmup, or a config record): a
// State of ten thousand FunctionIDs copies their views, sharing their
// shapes, rather than copying every shape.
func (e *Engine) functionView(f *Function) FunctionView {
	w := e.warmed(f)
	if v := f.view; v != nil && v.Warmed == w && v.Mode == string(f.Mode) {
		return *v
	}
	fv := FunctionView{ID: f.ID, Device: f.Dev, Fn: f.Name, Mode: string(f.Mode), Warmed: w, Graph: f.Graph}
	if v := f.view; v != nil {
		fv.Shapes = v.Shapes // the shapes never change
	} else {
		for _, s := range f.Shapes {
			fv.Shapes = append(fv.Shapes, append([]int(nil), s...))
		}
	}
	f.view = &fv
	return fv
}

func (e *Engine) deviceState(ds *devState, names map[int][]string, oldest map[int]int) DeviceState {
	m := ds.m
	dv := DeviceState{Index: ds.index, Name: ds.dev.Name(), Current: -1, PathState: m.pathState, CurrentGen: m.currentGen,
		PendingBackward: m.pendingBackward, Checkpoints: m.checkpoints}
	cur := m.curNode()
	onPath := map[int]bool{}
	if w := m.curWarmup(); w != nil {
		dv.CurrentWarmup = w.ID
		var chain []*WarmupNode
		chain, cur = m.warmupChain(w)
		for i := len(chain) - 1; i >= 0; i-- {
			x := chain[i]
			wv := WarmupView{ID: x.ID, Fn: m.funcs[x.Fn].Name, FnID: x.Fn, Line: x.Line, Parent: NoParent, Failed: x.Failed}
			if x.ParentWarm != 0 {
				wv.Parent = x.ParentWarm
			} else if x.ParentGraph >= 0 {
				wv.Parent = x.ParentGraph
			}
			for i, sid := range x.OutWeak {
				wv.Outputs = append(wv.Outputs, e.outputView(i, sid, x.OutShapes[i], names, oldest))
			}
			dv.Warmups = append(dv.Warmups, wv)
		}
	} else if cur != nil {
		dv.Current = cur.ID
	}
	for _, x := range m.path(cur) {
		dv.Path = append(dv.Path, x.ID)
		onPath[x.ID] = true
	}
	for _, fid := range m.rootOrder {
		dv.Roots = append(dv.Roots, m.rootsOf(fid)...)
	}
	if len(m.nodes) > 0 {
		// Sized once: a State of a big tree is mostly its nodes.
		dv.Nodes = make([]NodeView, 0, len(m.nodes))
	}
	for _, n := range m.nodes {
		nv := e.nodeView(m, n, names, oldest)
		nv.OnPath, nv.Current = onPath[n.ID], n.ID == dv.Current
		dv.Nodes = append(dv.Nodes, nv)
	}
	dv.Pool = e.poolView(ds, m.pool, names)
	dv.Default = e.poolView(ds, alloc.PoolID{}, names)
	for _, id := range ds.alloc.Pools() {
		if id == (alloc.PoolID{}) || id == m.pool {
			continue
		}
		// Only a pool that still reserves memory is worth the view.
		if ds.alloc.PoolStats(id).ReservedBytes[alloc.Aggregate].Current > 0 {
			dv.Dropped = append(dv.Dropped, e.poolView(ds, id, names))
		}
	}
	st := ds.alloc.Stats()
	dv.Totals = AllocatorTotals{Segments: len(ds.alloc.Segments()), ReservedBytes: st.ReservedBytes[alloc.Aggregate].Current,
		AllocatedBytes: st.AllocatedBytes[alloc.Aggregate].Current, PeakReserved: st.ReservedBytes[alloc.Aggregate].Peak}
	return dv
}

// nodeView returns n's view now, from n.view when that still holds.
func (e *Engine) nodeView(m *manager, n *Node, names map[int][]string, oldest map[int]int) NodeView {
	children, last := 0, -1
	for _, fid := range n.childOrder {
		if ids := n.Children[fid]; len(ids) > 0 {
			children += len(ids)
			last = ids[len(ids)-1]
		}
	}
	if c := n.view; c != nil && c.v.Replays == n.Replays && c.children == children && c.lastChild == last && e.outputsHold(c, n, names, oldest) {
		return c.v
	}
	nv := NodeView{ID: n.ID, Fn: m.funcs[n.Fn].Name, FnID: n.Fn, Parent: n.Parent, Depth: n.Depth, Mode: string(n.Mode),
		RecordedAtLine: n.Line, Cause: n.Cause, Failures: n.Failures, Origin: n.Origin, Replays: n.Replays,
		ExpectedDeadBefore: n.ExpectedDeadBefore, ExpectedDeadAfter: n.ExpectedDeadAfter, LiveAfter: n.LiveAfter,
		Mutated: m.funcs[n.Fn].Mutated}
	if children > 0 {
		nv.Children = make([]int, 0, children)
	}
	for _, fid := range n.childOrder {
		nv.Children = append(nv.Children, n.Children[fid]...)
	}
	if c := n.view; c != nil {
		// The inputs never change after the recording.
		nv.Inputs = c.v.Inputs
	} else {
		if len(n.Static) > 0 {
			nv.Inputs = make([]InputView, 0, len(n.Static))
		}
		for i := range n.Static {
			kind := InputCopied
			switch {
			case n.Managed[i]:
				kind = InputManaged
			case n.Static[i]:
				kind = InputStatic
			}
			nv.Inputs = append(nv.Inputs, InputView{Index: i, Name: n.InputNames[i], Kind: kind, Ptr: uint64(n.Ptrs[i]), Shape: n.InputShapes[i]})
		}
	}
	if len(n.Outputs) > 0 {
		nv.Outputs = make([]OutputView, 0, len(n.Outputs))
	}
	for i, o := range n.Outputs {
		ov := e.outputView(i, n.OutWeak[i], o.Shape, names, oldest)
		ov.Ptr, ov.Bytes = uint64(o.Ptr), o.Bytes
		ov.Cached = o.Unaliased
		switch o.Alias {
		case aliasStatic:
			ov.Alias = "static"
			if t := e.tt.tensors.get(o.StaticTensor); t != nil && t.live() {
				ov.Live = true
				ov.Tensor = firstName(names[t.ID])
			}
		case aliasPrior:
			ov.Alias = "prior " + o.Prior.String()
		case aliasNew:
			ov.Alias = fmt.Sprintf("output %d", o.New)
		case aliasInput:
			ov.Alias = fmt.Sprintf("input %d", o.Input)
		}
		nv.Outputs = append(nv.Outputs, ov)
	}
	nv.Kernels = n.kernelViews()
	n.view = &nodeView{v: nv, children: children, lastChild: last, weak: append([]int(nil), n.OutWeak...)}
	return nv
}

// outputsHold reports whether the outputs of c's view are n's now: the
// same storages, Cached flags, liveness and names (what outputView and
// the static alias read).
func (e *Engine) outputsHold(c *nodeView, n *Node, names map[int][]string, oldest map[int]int) bool {
	if len(c.v.Outputs) != len(n.Outputs) || len(c.weak) != len(n.OutWeak) {
		return false
	}
	for i := range n.Outputs {
		o, ov, sid := &n.Outputs[i], &c.v.Outputs[i], n.OutWeak[i]
		if sid != c.weak[i] || ov.Cached != o.Unaliased {
			return false
		}
		live, tensor := false, ""
		if sid != 0 {
			if s := e.tt.storages.get(sid); s != nil {
				live = s.Refs > 0
				if best, ok := oldest[sid]; ok {
					tensor = names[best][0]
				}
			}
		}
		if o.Alias == aliasStatic {
			if t := e.tt.tensors.get(o.StaticTensor); t != nil && t.live() {
				live, tensor = true, firstName(names[t.ID])
			}
		}
		if ov.Live != live || ov.Tensor != tensor {
			return false
		}
	}
	return true
}

func firstName(ns []string) string {
	if len(ns) == 0 {
		return ""
	}
	return ns[0]
}

func (e *Engine) outputView(i, sid int, shape []int, names map[int][]string, oldest map[int]int) OutputView {
	ov := OutputView{Index: i, Shape: append([]int(nil), shape...)}
	if sid == 0 {
		ov.Alias = "input"
		return ov
	}
	s := e.tt.storages.get(sid)
	if s == nil {
		return ov
	}
	ov.Ptr, ov.Bytes = uint64(s.Ptr), s.Bytes
	ov.Live = s.Refs > 0
	// The name of the oldest named tensor of the storage: tensors is a map,
	// so taking the first one met would make State differ between calls.
	if best, ok := oldest[sid]; ok {
		ov.Tensor = names[best][0]
	}
	return ov
}

// poolView annotates one pool's blocks with the tensors that live in them.
func (e *Engine) poolView(ds *devState, id alloc.PoolID, names map[int][]string) PoolView {
	a := ds.alloc
	pv := PoolView{ID: [2]int64{id.First, id.Second}}
	ps := a.PoolStats(id)
	pv.ReservedBytes, pv.AllocatedBytes, pv.PeakReserved = ps.ReservedBytes[alloc.Aggregate].Current, ps.AllocatedBytes[alloc.Aggregate].Current, ps.ReservedBytes[alloc.Aggregate].Peak
	// Storages by address range, for the blocks.
	type occupant struct {
		s     *Storage
		names []string
	}
	var occ []occupant
	for _, s := range e.tt.storages.all() {
		if s.Dev != ds.index || s.Ptr == 0 || s.Refs == 0 {
			continue
		}
		var ns []string
		for _, t := range e.tt.tensors.all() {
			if t.Storage == s.ID && t.live() {
				ns = append(ns, names[t.ID]...)
			}
		}
		sort.Strings(ns)
		occ = append(occ, occupant{s, ns})
	}
	// By address, then id: several storages can share an address (stale
	// ones and the live one over them), and storages is a map, so without
	// the id the order (and so State) would change from call to call.
	sort.Slice(occ, func(i, j int) bool {
		if occ[i].s.Ptr != occ[j].s.Ptr {
			return occ[i].s.Ptr < occ[j].s.Ptr
		}
		return occ[i].s.ID < occ[j].s.ID
	})
	changed := map[device.Ptr]bool{}
	newly := map[device.Ptr]bool{}
	if ev := e.lastCheckpoint(ds.index); ev != nil {
		for _, b := range ev.Reallocated {
			changed[device.Ptr(b.Ptr)] = true
			newly[device.Ptr(b.Ptr)] = true
		}
		for _, b := range ev.Freed {
			changed[device.Ptr(b.Ptr)] = true
		}
	}
	for _, seg := range a.PoolSegments(id) {
		sv := SegmentView{Addr: uint64(seg.Addr), Size: seg.Size, Small: seg.Small, Stream: int(seg.Stream)}
		for _, b := range seg.Blocks {
			bv := BlockView{Addr: uint64(b.Addr), Size: b.Size, Requested: b.RequestedSize, Allocated: b.Allocated,
				ProducedAt: b.Line, ProducedBy: b.What, InCheckpoint: changed[b.Addr], CheckpointNew: newly[b.Addr]}
			lo, hi := b.Addr, b.Addr+device.Ptr(b.Size)
			var live, stale bool
			for _, o := range occ {
				if o.s.Ptr >= hi || o.s.Ptr+device.Ptr(o.s.Bytes) <= lo {
					continue
				}
				if o.s.Stale {
					stale = true
				} else {
					live = true
				}
				bv.Tensors = append(bv.Tensors, o.names...)
			}
			switch {
			case b.Allocated && live:
				bv.State = BlockAllocated
			case b.Allocated:
				bv.State = BlockUnowned
			case live:
				bv.State = BlockLiveInvisible
			case stale:
				bv.State = BlockStale
			default:
				bv.State = BlockFree
			}
			sv.Blocks = append(sv.Blocks, bv)
		}
		pv.Segments = append(pv.Segments, sv)
	}
	return pv
}

// lastCheckpoint returns the delta of the last checkpoint of a device in the
// current record, if any (the UI keeps older ones from the events).
func (e *Engine) lastCheckpoint(dev int) *CheckpointView {
	for i := len(e.events) - 1; i >= 0; i-- {
		if ev := e.events[i]; ev.Kind == EvCheckpoint && ev.Device == dev {
			return ev.Delta
		}
	}
	if e.last != nil {
		for i := len(e.last.Events) - 1; i >= 0; i-- {
			if ev := e.last.Events[i]; ev.Kind == EvCheckpoint && ev.Device == dev {
				return ev.Delta
			}
		}
	}
	return nil
}

func sortStrings(s []string) { sort.Strings(s) }

// GraphDOT returns the CUDA graph of graph node id on device dev as DOT
// text, as the device prints it: cuGraphDebugDotPrint on the GPU, the
// simulated device's own rendering on sim.
func (e *Engine) GraphDOT(dev, id int) (string, error) {
	if dev < 0 || dev >= len(e.devs) {
		return "", fmt.Errorf("device %d does not exist", dev)
	}
	ds := e.devs[dev]
	n := ds.m.nodesOrNil(id)
	if n == nil {
		return "", fmt.Errorf("device %d has no graph node %d", dev, id)
	}
	return ds.dev.GraphDOT(n.Graph)
}
