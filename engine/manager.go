package engine

import (
	"fmt"
	"math"
	"slices"

	"github.com/cgtviz/cgtviz/engine/alloc"
	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/engine/dynamo"
	"github.com/cgtviz/cgtviz/traces"
)

// This file is CUDAGraphTreeManager itself: its state and the call it is
// handed, generations, run and _run (the decision for every call, in its
// phases), the mutation and re-record limits, the ends of a path
// (try_end_curr_recording, try_end_curr_warmup, try_end_curr_execution,
// check_warn_on_unable_to_start_executing), and its copy for a clone.

// noNode is the key of "no current node" in the per-position maps
// (PyTorch uses None).
const noNode = math.MinInt32

// devState is one device: the device, its caching allocator and its tree.
type devState struct {
	index int
	dev   device.Device
	alloc *alloc.Allocator
	m     *manager
}

// manager is one device's CUDAGraphTreeManager. The methods named after
// PyTorch's (run, recordFunction, executeNode, ...) live in the files of
// their concern: manager.go, record.go, execute.go, checkpoint.go,
// dealloc.go (see docs/architecture.md). It sees of the Engine only what
// the devices share (sh).
type manager struct {
	// sh is what every device's manager shares: the tensors, the events
	// and the undo log, the config, Dynamo's generation counter.
	sh   *shared
	ds   *devState
	pool alloc.PoolID
	// pathScalars are the fields a replay changes before it can fail; the
	// rollback of a record saves and restores them whole (snapshot.go).
	pathScalars
	// nodes are the recorded CUDAGraphNodes by graph id.
	nodes []*Node
	// roots are, by FunctionID, its root nodes (a slice, not a map: a
	// call reads its function's at every replay); rootOrder keeps the
	// order in which functions first got a root (Python dict order).
	roots     [][]int
	rootOrder []int
	// rootSlab is where a function's first root is kept (firstRoot).
	rootSlab []int

	funcs []*Function
	// fnBySig indexes the FunctionIDs by their signature's hash (sigHash).
	fnBySig map[uint64][]int
	// compiles is Dynamo's compile state of each def.
	compiles map[string]*dynamo.Cache
	// sizes counts the FunctionIDs of each compiled graph (function.go).
	sizes map[graphKey]int
	// sizeWarned holds the compiled graphs whose sizes PyTorch warned of
	// (once each: function.go's warnDynamicShapes).
	sizeWarned map[graphKey]bool
	// defGraphs is the compiled graph of each def's first function, by
	// the def's name: where the defs that name it as their graph count
	// their sizes (function.go's graphOf).
	defGraphs map[string]graphKey
	// fnGen is the generation of the function tables: a Function of
	// another generation, and the tables while fnShared, are shared with a
	// clone and copied before a change (function.go, ownFunc).
	fnGen    uint64
	fnShared bool
	// dispatch is, per def (defn.idx), the FunctionID of its last call
	// on this device (function.go); compileEpoch counts the compiles on
	// the device, each of which makes every entry stale.
	dispatch     []dispatchEntry
	compileEpoch uint64

	warnedFns      map[int]bool
	warnedMutation map[int]bool
	// rootHints, nodeHints and warmupHints are
	// non_cudagraph_managed_mutation_hint[node][fid] (hint.go): at no
	// node by FunctionID, at a graph node by its id (slices rather than
	// maps: every call reads one), at a warmup node by its id.
	rootHints   []hint
	nodeHints   []map[int]bool
	warmupHints map[int]map[int]bool
	// numRerecord is num_rerecord[node][fid].
	numRerecord map[int]map[int]int
}

// pathScalars are the manager's small fields: where the path stands.
type pathScalars struct {
	// warmups are the warmup nodes of the current path by (negative) id.
	warmups map[int]*WarmupNode
	// cur is the current node: a graph id (>= 0), a warmup id (< 0), or
	// noNode.
	cur             int
	pathState       PathState
	currentGen      int
	pendingBackward bool
	warmupCounter   int
	checkpoints     int
	// curLine and curInv are the call that made the current node or
	// warmup current (its trace line, its invocation where it names one:
	// curHasInv), which a call continuing the path follows (Origin.Prev).
	curLine   int
	curInv    int64
	curHasInv bool
}

func newManager(sh *shared, ds *devState, pool alloc.PoolID) *manager {
	return &manager{
		sh: sh, ds: ds, pool: pool, pathScalars: pathScalars{cur: noNode, currentGen: -1, warmups: map[int]*WarmupNode{}},
		fnBySig: map[uint64][]int{}, compiles: map[string]*dynamo.Cache{},
		warnedFns: map[int]bool{}, warnedMutation: map[int]bool{},
		numRerecord: map[int]map[int]int{},
	}
}

// call is one call record on its way through a device's tree manager: what
// PyTorch's CUDAGraphTreeManager.run receives (the function and its
// inputs), plus the def and the record it came from, for messages and
// events, and what the tree says of it for the record's Step (out).
type call struct {
	f    *Function
	def  *defn
	args []*Tensor
	rec  *traces.Record
	out  callOut
}

// callOut is what the tree did with a call besides its outputs and action:
// the node it recorded or replayed and that node's parent (-1 when none),
// and whether it checkpointed the allocator. Engine.runInTree puts it into
// the Step. It holds no pointer: the engine's one call is written twice a
// call, and the collector's write barriers then have nothing to do.
type callOut struct {
	node, parent int
	checkpoint   bool
}

// noCallOut is a call's out before the tree touched it.
var noCallOut = callOut{node: -1, parent: -1}

// line is the trace line of the call.
func (c *call) line() int { return c.rec.Line }

// emit adds an event of the current record. It appends itself rather
// than call shared.emit: each inlined level copied the 192-byte event once
// more.
func (m *manager) emit(ev Event) { m.sh.events = append(m.sh.events, ev) }

// curNode returns the current graph node, nil when the current node is none
// or a warmup node.
func (m *manager) curNode() *Node {
	if m.cur >= 0 && m.cur != noNode {
		return m.nodes[m.cur]
	}
	return nil
}

func (m *manager) curWarmup() *WarmupNode {
	if m.cur < 0 && m.cur != noNode {
		return m.warmups[m.cur]
	}
	return nil
}

// setCurrentNone ends the current path (clear_current_path_state_and_set_to_none).
func (m *manager) setCurrentNone() {
	m.cur = noNode
	m.pathState = PathNone
	m.warmups = nil
}

// ranCurrent notes that call c made the current node or warmup current.
func (m *manager) ranCurrent(c *call) {
	m.curLine = c.rec.Line
	if inv := c.rec.Invocation; inv != nil {
		m.curInv, m.curHasInv = *inv, true
	} else {
		m.curInv, m.curHasInv = 0, false
	}
}

func (m *manager) inNewInvocation() bool { return m.currentGen != m.sh.currGeneration() }

func (m *manager) canStartNewGeneration() bool {
	if !m.inNewInvocation() {
		return false
	}
	if m.sh.markStep != 0 {
		return true
	}
	return !m.pendingBackward
}

func (m *manager) updateGeneration() { m.currentGen = m.sh.currGeneration() }

// nodeKey is _get_node_id(): the current node's id, or noNode.
func (m *manager) nodeKey() int { return m.cur }

// runFunction is CUDAGraphTreeManager.run, what a cudagraphified
// function's call runs: _run, then the function's mode says whether a
// backward is pending (running_forwards_with_pending_backwards).
func (m *manager) runFunction(c *call) ([]*Tensor, Action, error) {
	outs, act, err := m.run(c)
	if err != nil {
		return nil, "", err
	}
	switch c.f.Mode {
	case traces.ModeForward:
		m.pendingBackward = true
	case traces.ModeBackward:
		m.pendingBackward = false
	}
	return outs, act, nil
}

// setToRunningBackward is set_to_running_backward: a backward ran without
// CUDA graphs (compile_fx skipped them for it), and no backward is pending.
func (m *manager) setToRunningBackward() { m.pendingBackward = false }

// run is CUDAGraphTreeManager._run, in PyTorch 2.11's order: the current
// path ends where a new generation or its dead outputs allow it; then the
// function runs eagerly outside the tree (a mutation or the re-record
// limit), warms up, or, past warmup, replays or records at this position
// (replayOrRecord; while recording, nothing replays).
func (m *manager) run(c *call) ([]*Tensor, Action, error) {
	if m.pathState == PathRecording {
		if err := m.tryEndCurrRecording(c); err != nil {
			return nil, "", err
		}
	}
	if m.pathState == PathWarmup {
		if err := m.tryEndCurrWarmup(c); err != nil {
			return nil, "", err
		}
	}
	// Under HandoffRaise the new generation may just have freed an input
	// (PyTorch 2.11). What raises then, and what stays changed, follows
	// where 2.11 first touches the input's data: an eager run, the warmup
	// run (after its node became current), or, for a warm function, the
	// invariant checks, a replay or the recording (staleWarm).
	stale := m.sh.raiseStaleArg(c.args)
	nid := m.nodeKey()
	// A function that mutates no input has the hint false wherever it is
	// called (_update_non_cudagraph_managed_mutation finds nothing to
	// skip for, and logs nothing): it is neither looked up nor stored,
	// which keeps every call from reading, and every new position from
	// making, a map of hints.
	eager := false
	if len(c.f.Mutated) > 0 {
		var err error
		if eager, err = m.mutationSkip(c, nid); err != nil {
			return nil, "", err
		}
	}
	if eager || m.exceedRerecordLimit(nid, c.f) {
		if stale != nil {
			// The model run outside the tree raises: no entry point ran.
			return nil, "", &keptError{err: stale, action: ActionEager}
		}
		return m.runEagerOutside(c, "")
	}
	if !m.sh.warmed(c.f) || m.pathState == PathWarmup {
		if m.pathState == PathExecution {
			if err := m.applyCheckpoint(c); err != nil {
				return nil, "", err
			}
		}
		return m.runWarmup(c)
	}
	if stale != nil {
		return nil, "", m.staleWarm(c, stale)
	}
	if m.pathState == PathRecording {
		// Recording is contagious: each call records a child of the last
		// until the path ends.
		return m.recordFunction(c, CauseRecordingPath, nil, false)
	}
	return m.replayOrRecord(c)
}

// mutationSkip is _run's non_cudagraph_managed_mutation_hint[nid][fid] for
// a function that mutates an input: whether it runs eagerly at this
// position, worked out (and the skip logged) at its first call here
// (_update_non_cudagraph_managed_mutation). check_for_mutation reads no
// tensor's data (after a new generation the path has ended, so nothing is
// a recorded tensor): an input that generation freed raises later.
func (m *manager) mutationSkip(c *call, nid int) (bool, error) {
	eager, known := m.mutationHint(nid, c.f.ID)
	if known {
		return eager, nil
	}
	if err := m.updateMutationHint(c); err != nil {
		return false, err
	}
	eager, _ = m.mutationHint(nid, c.f.ID)
	return eager, nil
}

// staleWarm is where PyTorch 2.11 raises for a warmed-up function whose
// input the new generation has just freed (HandoffRaise). That generation
// ended the path, so the candidates are the function's roots, in order:
// check_invariants reads the pointers of a root's static inputs when it
// re-records on them (rerecord_if_static_inputs_change), and raises at a
// freed one before any entry point (eager); a root whose invariants hold
// replays, and execute_node, its node already current, raises copying the
// inputs (replay); with none, record_function raises in
// CUDAGraphNode.__init__ before the node joins the tree (record).
func (m *manager) staleWarm(c *call, stale error) error {
	tt := m.sh.tt
	for _, id := range m.rootsOf(c.f.ID) {
		n := m.nodes[id]
		if n.RerecordIfStatic {
			// _tensors_data_ptrs_at_indices_equal: the first freed
			// input raises, the first moved one is a mismatch.
			for i, t := range c.args {
				if !n.Static[i] {
					continue
				}
				if s := tt.storages.get(t.Storage); s != nil && s.Stale {
					return &keptError{err: stale, action: ActionEager}
				}
				if tt.dataPtr(t) != n.Ptrs[i] {
					break
				}
			}
		}
		if m.checkInvariants(n, c).Status != StatusSuccess {
			continue
		}
		m.cur = n.ID
		m.pathState = PathExecution
		m.warmups = nil
		m.updateGeneration()
		return m.raiseIn(stale, ActionReplay, n)
	}
	return m.raiseIn(stale, ActionRecord, nil)
}

// replayOrRecord is _run past warmup, off a recording path: the function's
// recordings at this position (current_node.children[fid], or roots[fid]
// at none) are checked in order, and the first whose invariants hold
// replays (execute_node). When none does, a root function may start again
// from the roots, where the path ends; else recordOrSkip goes on.
func (m *manager) replayOrRecord(c *call) ([]*Tensor, Action, error) {
	var candidates []int
	if cn := m.curNode(); cn != nil {
		candidates = cn.Children[c.f.ID]
	} else {
		candidates = m.rootsOf(c.f.ID)
	}
	cause := CauseFirstChild
	if m.cur == noNode {
		cause = CauseNewRoot
	}
	var failures []InvariantFailure
	rerecord := false
	for _, id := range candidates {
		child := m.nodes[id]
		fail := m.checkInvariants(child, c)
		if fail.Status == StatusSuccess {
			return m.executeNode(child, c)
		}
		failures = append(failures, fail)
		m.emit(Event{Kind: EvInvariantFailed, Line: c.rec.Line, Device: m.ds.index, Fn: c.f.Name, FnID: c.f.ID, Node: id, Parent: child.Parent,
			Failures: []InvariantFailure{fail}, Msg: fail.Describe()})
		if fail.Status == StatusStaticInputIdxMismatch || fail.Status == StatusCudagraphManagedIdxMismatch {
			rerecord = true
		}
	}
	if len(candidates) > 0 {
		cause = CauseInvariants
	}
	if m.cur != noNode && len(m.rootsOf(c.f.ID)) > 0 {
		// A root function: maybe restart from the roots.
		m.tryEndCurrExecution(c)
		if m.cur == noNode {
			return m.run(c)
		}
	}
	return m.recordOrSkip(c, cause, failures, rerecord)
}

// recordOrSkip is the rest of _run when no recording at this position
// replayed: the function may yet run eagerly (its mutation hint here, or
// an unexpected re-record past the limit); else the path ends or
// checkpoints (apply_checkpoint_execution_state_in_allocator) and the
// function records.
func (m *manager) recordOrSkip(c *call, cause RecordCause, failures []InvariantFailure, rerecord bool) ([]*Tensor, Action, error) {
	if len(c.f.Mutated) > 0 {
		if err := m.updateMutationHint(c); err != nil {
			return nil, "", err
		}
		if eager, _ := m.mutationHint(m.nodeKey(), c.f.ID); eager {
			return m.runEagerOutside(c, "")
		}
	}
	if rerecord {
		if msg := m.countRerecord(c, failures); msg != "" {
			if err := m.logSkip(c, msg); err != nil {
				return nil, "", err
			}
			return m.runEagerOutside(c, msg)
		}
	}
	m.tryEndCurrExecution(c)
	if m.cur != noNode {
		if err := m.applyCheckpoint(c); err != nil {
			return nil, "", err
		}
	}
	if m.cur == noNode {
		cause = CauseNewRoot
	}
	return m.recordFunction(c, cause, failures, rerecord)
}

// countRerecord counts an unexpected re-record (num_rerecord[nid][fid] +=
// 1) and, past the limit (exceed_rerecord_limit), returns the skip's
// message: the function runs eagerly at this position from now on.
func (m *manager) countRerecord(c *call, failures []InvariantFailure) string {
	nid := m.nodeKey()
	if m.numRerecord[nid] == nil {
		m.numRerecord[nid] = map[int]int{}
		m.sh.onUndo(func() { delete(m.numRerecord, nid) })
	}
	counts, fid := m.numRerecord[nid], c.f.ID
	setKey(m.sh, counts, fid, counts[fid]+1)
	if !m.exceedRerecordLimit(nid, c.f) {
		return ""
	}
	reason := ""
	for _, fl := range failures {
		if fl.Status != StatusExpectedDeadIndicesBeforeGraphMismatch {
			reason = rerecordReason(fl)
		}
	}
	node := "None"
	if nid != noNode {
		node = fmt.Sprint(nid)
	}
	return fmt.Sprintf("skipping cudagraph due to function %d exceeding max re-recording limit (=%d) on cudagraph node %s due to %s.", c.f.ID, m.sh.cfg.RerecordLimit, node, reason)
}

func rerecordReason(f InvariantFailure) string {
	name := f.InputName
	if name == "" {
		name = fmt.Sprintf("arg%d", f.Input)
	}
	return fmt.Sprintf("%s.\ninput name: %s. data pointer changed from %#x to %#x", f.Status, name, f.Old, f.New)
}

// exceedRerecordLimit is exceed_rerecord_limit. Every call asks it; a
// program that never re-recorded has no counts, and then no two lookups.
func (m *manager) exceedRerecordLimit(nid int, f *Function) bool {
	n := 0
	if len(m.numRerecord) > 0 {
		n = m.numRerecord[nid][f.ID]
	}
	return n > m.sh.cfg.RerecordLimit
}

// updateMutationHint is _update_non_cudagraph_managed_mutation: a function
// that mutates an input that is neither static nor an output of the current
// path runs eagerly at this position; the skip is logged once per function
// (and, under cudagraph_or_error, raised: logSkip).
func (m *manager) updateMutationHint(c *call) error {
	nid, fid := m.nodeKey(), c.f.ID
	var bad []int
	for _, i := range c.f.Mutated {
		if c.f.Static[i] {
			continue
		}
		// With cudagraph_support_input_mutation off, a mutated output of
		// the path is a skip like any other (check_for_mutation).
		if m.sh.cfg.SupportInputMutation && m.isRecordedTensor(c.args[i]) {
			continue
		}
		bad = append(bad, i)
	}
	m.setMutationHint(nid, fid, len(bad) > 0)
	if len(bad) == 0 {
		return nil
	}
	if m.warnedMutation[c.f.ID] {
		return nil
	}
	m.warnedMutation[fid] = true
	m.sh.onUndo(func() { delete(m.warnedMutation, fid) })
	// The call's own def: a def of another name that shares c.f (under
	// SharedCode) has the same params and body (bodyKey).
	msg := fmt.Sprintf("skipping cudagraphs due to mutated inputs (%d instances). Found from : \n   %s:%d, in %s\n    %s",
		len(bad), m.sh.file, c.rec.Line, c.f.Name, mutationText(&c.def.Record, bad))
	return m.logSkip(c, msg)
}

// logSkip is log_cudagraph_skip_and_bump_counter: the skip is logged, and
// under triton.cudagraph_or_error raised as a RuntimeError. PyTorch raises
// after it changed its tree (the mutation hint, the re-record count, the
// warned function), so the change is kept: the next call of the function
// runs eagerly without raising again, as in PyTorch. Nothing ran: the
// step's action is eager, as the recorder says of a call no tree node ran.
func (m *manager) logSkip(c *call, msg string) error {
	m.emit(Event{Kind: EvSkip, Line: c.rec.Line, Device: m.ds.index, Fn: c.f.Name, FnID: c.f.ID, Node: -1, Parent: -1, Msg: msg})
	if !m.sh.cfg.CudagraphOrError {
		return nil
	}
	return &keptError{err: fmt.Errorf("RuntimeError (triton.cudagraph_or_error): %s", msg), action: ActionEager}
}

// raiseIn is an error PyTorch raised inside CUDAGraphTreeManager.run: in
// the entry point the step names (run_eager: warmup, record_function:
// record, execute_node: replay, with n the node it made current) or, as
// eager, before any, which is what cgtrace writes of such a call (the last
// entry point it noted, else eager). Under HandoffRaise what 2.11 changed
// before it raised stays (docs/pytorch-bridge.md, "Errors inside a call");
// otherwise the record rolls back whole, as every failing record does.
func (m *manager) raiseIn(err error, action Action, n *Node) error {
	re := &raisedError{err: err, action: action, node: -1, parent: -1}
	if n != nil {
		re.node, re.parent, re.nodeFn = n.ID, n.Parent, m.funcs[n.Fn].Name
		if n.Parent >= 0 {
			re.parentFn = m.funcs[m.nodes[n.Parent].Fn].Name
		}
	}
	if m.sh.handoff == HandoffRaise {
		return &keptError{err: re, action: action}
	}
	return re
}

func mutationText(def *traces.Record, idx []int) string {
	for _, st := range def.Body {
		if len(idx) > 0 && st.Out == def.Params[idx[0]] {
			return stmtText(st)
		}
	}
	return ""
}

// isRecordedTensor is _is_cuda_graph_recorded_tensor at the current node:
// does t's storage lie at a pointer recorded as an output of the path?
func (m *manager) isRecordedTensor(t *Tensor) bool {
	st := m.sh.tt.storages.get(t.Storage)
	if st == nil || st.Ptr == 0 {
		return false
	}
	if w := m.curWarmup(); w != nil {
		for _, sid := range m.warmupPathLive(w) {
			if s := m.sh.tt.storages.get(sid); s != nil && s.Ptr == st.Ptr {
				return true
			}
		}
		return false
	}
	if n := m.curNode(); n != nil {
		return n.isPathOutputPtr(m, st.Ptr)
	}
	return false
}

func (m *manager) tryEndCurrRecording(c *call) error {
	if m.canStartNewGeneration() {
		if err := m.deallocCurrentPath(c); err != nil {
			return err
		}
		m.endPath(c, whyNewGeneration)
		return nil
	}
	if m.allOutputsDead() {
		m.endPath(c, whyAllDead)
		return nil
	}
	m.checkWarnOnUnableToStart(c)
	return nil
}

func (m *manager) tryEndCurrWarmup(c *call) error {
	return m.tryEndCurrRecording(c)
}

func (m *manager) tryEndCurrExecution(c *call) {
	if m.cur == noNode {
		return
	}
	if m.canStartNewGeneration() {
		m.endPath(c, whyNewGeneration)
		return
	}
	if m.allOutputsDead() {
		m.endPath(c, whyAllDead)
	}
}

// Why a path ends (the messages of EvPathEnd).
const (
	whyNewGeneration = "path ended: a new generation started"
	whyAllDead       = "path ended: every output of the path is dead"
)

func (m *manager) endPath(c *call, why string) {
	ev := Event{Kind: EvPathEnd, Line: c.rec.Line, Device: m.ds.index, Node: -1, Parent: -1, Msg: why}
	if n := m.curNode(); n != nil {
		ev.Node = n.ID
	} else if w := m.curWarmup(); w != nil {
		ev.WarmupID = w.ID
	}
	m.emit(ev)
	m.setCurrentNone()
}

// allOutputsDead is all_outputs_are_dead of the current node.
func (m *manager) allOutputsDead() bool {
	if w := m.curWarmup(); w != nil {
		return len(m.warmupPathLive(w)) == 0
	}
	n := m.curNode()
	if n == nil {
		return true
	}
	path := m.path(n)
	for _, oi := range n.LiveAfter {
		if m.sh.tt.storageLive(path[oi.Depth].OutWeak[oi.Index]) {
			return false
		}
	}
	return true
}

func (m *manager) checkWarnOnUnableToStart(c *call) {
	if m.warnedFns[c.f.ID] || !m.inNewInvocation() {
		return
	}
	// The path from the root, warmup nodes included, and the current node
	// (current_node: the path's last node).
	type pn struct{ fn, parentFn int }
	var path []pn
	current := -1 // index of the current node in path
	if w := m.curWarmup(); w != nil {
		for x := w; x != nil; {
			p := pn{fn: x.Fn, parentFn: -1}
			if x.ParentWarm != 0 {
				p.parentFn = m.warmups[x.ParentWarm].Fn
			} else if x.ParentGraph >= 0 {
				p.parentFn = m.nodes[x.ParentGraph].Fn
			}
			if x == w {
				current = len(path)
			}
			path = append(path, p)
			if x.ParentWarm != 0 {
				x = m.warmups[x.ParentWarm]
			} else {
				for _, n := range m.path(m.nodesOrNil(x.ParentGraph)) {
					pf := -1
					if n.Parent >= 0 {
						pf = m.nodes[n.Parent].Fn
					}
					path = append(path, pn{fn: n.Fn, parentFn: pf})
				}
				x = nil
			}
		}
	} else if n := m.curNode(); n != nil {
		for _, x := range m.path(n) {
			pf := -1
			if x.Parent >= 0 {
				pf = m.nodes[x.Parent].Fn
			}
			path = append(path, pn{fn: x.Fn, parentFn: pf})
		}
		current = len(path) - 1
	}
	var existing []pn
	for _, p := range path {
		if p.fn == c.f.ID {
			existing = append(existing, p)
		}
	}
	if len(existing) <= 1 {
		return
	}
	parents := map[int]bool{}
	for _, p := range existing {
		if p.parentFn >= 0 {
			parents[p.parentFn] = true
		}
	}
	if current >= 0 && path[current].parentFn >= 0 {
		parents[path[current].parentFn] = true
	}
	if len(parents) == len(existing) {
		return
	}
	fid := c.f.ID
	m.warnedFns[fid] = true
	m.sh.onUndo(func() { delete(m.warnedFns, fid) })
	m.emit(Event{Kind: EvWarning, Line: c.rec.Line, Device: m.ds.index, Fn: c.f.Name, FnID: c.f.ID, Node: -1, Parent: -1,
		Msg: WarnPendingBackward})
}

func (m *manager) nodesOrNil(id int) *Node {
	if id >= 0 && id < len(m.nodes) {
		return m.nodes[id]
	}
	return nil
}

// forPathOutputs calls visit with each live output storage of the current
// path and the function that made it, root first: the graph nodes from the
// root, then the warmup chain from its oldest.
func (m *manager) forPathOutputs(visit func(fn, sid int)) {
	if w := m.curWarmup(); w != nil {
		m.forWarmupPathOutputs(w, visit)
	} else if n := m.curNode(); n != nil {
		m.forNodePathOutputs(n, visit)
	}
}

// forNodePathOutputs calls visit with each live output storage of the path
// from the root to n, root first, and the function that made it.
func (m *manager) forNodePathOutputs(n *Node, visit func(fn, sid int)) {
	for _, x := range m.path(n) {
		m.forLiveOutputs(x.Fn, x.OutWeak, visit)
	}
}

// forWarmupPathOutputs is forNodePathOutputs for a warmup node: the graph
// nodes below its chain, then the chain from its oldest to w.
func (m *manager) forWarmupPathOutputs(w *WarmupNode, visit func(fn, sid int)) {
	chain, top := m.warmupChain(w)
	if top != nil {
		m.forNodePathOutputs(top, visit)
	}
	for i := len(chain) - 1; i >= 0; i-- {
		m.forLiveOutputs(chain[i].Fn, chain[i].OutWeak, visit)
	}
}

// forLiveOutputs calls visit(fn, sid) for each of outs still live.
func (m *manager) forLiveOutputs(fn int, outs []int, visit func(fn, sid int)) {
	for _, sid := range outs {
		if sid != 0 && m.sh.tt.storageLive(sid) {
			visit(fn, sid)
		}
	}
}

// nodePathLive returns the live output storages of the path to n, root
// first.
func (m *manager) nodePathLive(n *Node) []int {
	var out []int
	m.forNodePathOutputs(n, func(_, sid int) { out = append(out, sid) })
	return out
}

// warmupChain returns the warmup nodes from w up to the first one whose
// parent is not a warmup node (w first), and that parent graph node (nil
// when the chain starts at the roots).
func (m *manager) warmupChain(w *WarmupNode) ([]*WarmupNode, *Node) {
	var chain []*WarmupNode
	for x := w; x != nil; {
		chain = append(chain, x)
		if x.ParentWarm == 0 {
			return chain, m.nodesOrNil(x.ParentGraph)
		}
		x = m.warmups[x.ParentWarm]
	}
	return chain, nil
}

// warmupPathLive is CUDAWarmupNode.path_live_weakrefs.
func (m *manager) warmupPathLive(w *WarmupNode) []int {
	var out []int
	m.forWarmupPathOutputs(w, func(_, sid int) { out = append(out, sid) })
	return out
}

// firstRoot returns the roots' slice of a function's first root, id:
// carved out of a slab with the slices of the functions that got theirs
// before and after it, so that a replay among many root functions called
// in turn reads its candidates from the line of the one before, where a
// slice of one id allocated alone was a miss of its own per call. Its
// capacity is its length: a second root moves the function's slice out.
func (m *manager) firstRoot(id int) []int {
	if len(m.rootSlab) == 0 {
		m.rootSlab = make([]int, 256)
	}
	r := m.rootSlab[:1:1]
	r[0] = id
	m.rootSlab = m.rootSlab[1:]
	return r
}

// clone deep-copies a manager. Nodes are copied (their mutable parts);
// functions are shared except for their warmup counts.
func (m *manager) clone() *manager {
	c := *m
	// The nodes are shared, copied by the first of the two managers to
	// change one (unshare); Clone registers the copy (share).
	c.nodes = slices.Clone(m.nodes)
	// The copy's roots are one allocation, each function's slice a part
	// of it (its capacity its length); the slab is the original's.
	c.roots = make([][]int, len(m.roots))
	total := 0
	for _, v := range m.roots {
		total += len(v)
	}
	all := make([]int, 0, total)
	for k, v := range m.roots {
		if v != nil {
			off := len(all)
			all = append(all, v...)
			c.roots[k] = all[off:len(all):len(all)]
		}
	}
	c.rootSlab = nil
	c.rootOrder = append([]int(nil), m.rootOrder...)
	c.warmups = make(map[int]*WarmupNode, len(m.warmups))
	for k, w := range m.warmups {
		nw := *w
		nw.OutWeak = append([]int(nil), w.OutWeak...)
		c.warmups[k] = &nw
	}
	// The function tables and the Functions are shared (shareFuncs).
	m.shareFuncs(&c)
	// The dispatch entries name the FunctionIDs, which the clone shares,
	// and nothing of the Dynamo caches, which it copies: they hold for it.
	c.dispatch = slices.Clone(m.dispatch)
	c.compiles = make(map[string]*dynamo.Cache, len(m.compiles))
	for k, v := range m.compiles {
		c.compiles[k] = v.Clone()
	}
	c.warnedFns = copySet(m.warnedFns)
	c.warnedMutation = copySet(m.warnedMutation)
	c.warmupHints = make(map[int]map[int]bool, len(m.warmupHints))
	for k, v := range m.warmupHints {
		c.warmupHints[k] = copySet(v)
	}
	c.rootHints = slices.Clone(m.rootHints)
	c.nodeHints = make([]map[int]bool, len(m.nodeHints))
	for k, v := range m.nodeHints {
		if v != nil {
			c.nodeHints[k] = copySet(v)
		}
	}
	c.numRerecord = make(map[int]map[int]int, len(m.numRerecord))
	for k, v := range m.numRerecord {
		nv := make(map[int]int, len(v))
		for a, b := range v {
			nv[a] = b
		}
		c.numRerecord[k] = nv
	}
	return &c
}

func copySet(s map[int]bool) map[int]bool {
	c := make(map[int]bool, len(s))
	for k, v := range s {
		c[k] = v
	}
	return c
}
