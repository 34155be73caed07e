package engine

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/cgtviz/cgtviz/engine/alloc"
	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/traces"
)

// noNode is the key of "no current node" in the per-position maps
// (PyTorch uses None).
const noNode = math.MinInt32

// manager is one device's CUDAGraphTreeManager. The methods named after
// PyTorch's (run, recordFunction, executeNode, ...) live in the files of
// their concern: manager.go, record.go, execute.go, checkpoint.go,
// dealloc.go (see docs/architecture.md).
type manager struct {
	// eng is what every device's manager shares: the tensors, the events,
	// the config, Dynamo's generation counter.
	eng  *Engine
	ds   *devState
	pool alloc.PoolID
	// pathScalars are the fields a replay changes before it can fail; the
	// rollback of a record saves and restores them whole (snapshot.go).
	pathScalars
	// nodes are the recorded CUDAGraphNodes by graph id.
	nodes []*Node
	// roots maps a FunctionID to its root nodes; rootOrder keeps the order
	// in which functions first got a root (Python dict order).
	roots     map[int][]int
	rootOrder []int

	funcs  []*Function
	fnKeys map[string]int
	// fnByName lists the FunctionIDs of each def, for the lookup of a call.
	fnByName map[string][]int
	// compiles is Dynamo's compile state of each def.
	compiles map[string]*compileState

	warnedFns      map[int]bool
	warnedMutation map[int]bool
	// mutationHint is non_cudagraph_managed_mutation_hint[node][fid].
	mutationHint map[int]map[int]bool
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
}

func newManager(e *Engine, ds *devState, pool alloc.PoolID) *manager {
	return &manager{
		eng: e, ds: ds, pool: pool, pathScalars: pathScalars{cur: noNode, currentGen: -1, warmups: map[int]*WarmupNode{}},
		roots: map[int][]int{}, fnKeys: map[string]int{},
		warnedFns: map[int]bool{}, warnedMutation: map[int]bool{},
		mutationHint: map[int]map[int]bool{}, numRerecord: map[int]map[int]int{},
	}
}

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

// ---- generations ----

func (e *Engine) currGeneration() int {
	if e.markStep != 0 {
		return e.markStep
	}
	return e.genTracker
}

func (m *manager) inNewInvocation() bool { return m.currentGen != m.eng.currGeneration() }

func (m *manager) canStartNewGeneration() bool {
	if !m.inNewInvocation() {
		return false
	}
	if m.eng.markStep != 0 {
		return true
	}
	return !m.pendingBackward
}

func (m *manager) updateGeneration() { m.currentGen = m.eng.currGeneration() }

// ---- the call ----

// applyCall runs a call record through the device's tree manager.
func (e *Engine) applyCall(rec *traces.Record, step *Step) error {
	def := e.defs[rec.Fn]
	if def == nil {
		return fmt.Errorf("function %q is not defined", rec.Fn)
	}
	if len(rec.Args) != len(def.Params) {
		return fmt.Errorf("%d arguments for %d parameters", len(rec.Args), len(def.Params))
	}
	if rec.Out != nil && len(rec.Out) != len(def.Returns) {
		return fmt.Errorf("out binds %d names for %d results", len(rec.Out), len(def.Returns))
	}
	args := make([]*Tensor, len(rec.Args))
	shapes := make([][]int, len(rec.Args))
	static := make([]bool, len(rec.Args))
	dev := 0
	var stale error // an argument whose storage alone was marked
	for i, n := range rec.Args {
		t, s, err := e.tt.lookup(n)
		if err != nil {
			return fmt.Errorf("argument %d: %w", i, err)
		}
		if s.Stale {
			if t.Tracked {
				// The object itself was marked: Dynamo fails on it
				// before anything compiles.
				return staleErr(s)
			}
			if stale == nil {
				stale = staleErr(s)
			}
		}
		if i == 0 {
			dev = s.Dev
		} else if s.Dev != dev {
			return fmt.Errorf("arguments on devices %d and %d: skipping cudagraphs due to multiple devices", dev, s.Dev)
		}
		args[i], shapes[i], static[i] = t, t.Shape, s.Param
	}
	step.Device = dev
	ds, err := e.dev(dev)
	if err != nil {
		return err
	}
	m := ds.m
	f, limited, err := m.function(def, shapes, static, aliasPattern(args))
	if err != nil {
		return err
	}
	if stale != nil {
		// Dynamo compiled from the tensors' metadata; the first data
		// access at run time raises. PyTorch 2.11 keeps the compile (and
		// the generation hook's bump): so does HandoffRaise, which
		// replays 2.11's failures as they are. By default the record
		// rolls back whole, as every failing record does.
		if e.handoff != HandoffRaise {
			return stale
		}
		if !limited && !f.plan.viewsOnly && f.Mode != traces.ModeBackward {
			e.genTracker++
		}
		return &keptError{stale}
	}
	step.Fn = def.Fn
	switch {
	case limited:
		return e.runPlain(rec, step, ds, f, args, f.Name+" (eager)", -1,
			fmt.Sprintf("torch._dynamo hit config.recompile_limit (%d) for %s: no compiled graph accepts these inputs, so the call runs eagerly, without cudagraphs", e.recompileLimit, f.Name))
	case f.plan.viewsOnly:
		return e.runPlain(rec, step, ds, f, args, f.Name, f.ID,
			fmt.Sprintf("%s launches no kernel (its outputs are views of its inputs): nothing is compiled, it runs as plain Python", f.Name))
	}
	mode := f.Mode
	if mode != traces.ModeBackward {
		// Dynamo's on-enter hook of a top-level compiled call.
		e.genTracker++
	}
	for _, t := range args {
		e.tt.hold(t)
	}
	outs, act, err := m.run(&call{f: f, args: args, rec: rec, step: step})
	for _, t := range args {
		e.tt.release(t)
	}
	if err != nil {
		return err
	}
	step.Action = act
	if act == ActionWarmup || act == ActionRecord {
		for _, t := range outs {
			t.Tracked = true
		}
	}
	switch mode {
	case traces.ModeForward:
		m.pendingBackward = true
	case traces.ModeBackward:
		m.pendingBackward = false
	}
	return e.bindResults(rec, outs)
}

// runPlain runs a call as plain Python, eagerly in the default pool,
// untouched by the tree and by generations: a function of views only (Dynamo
// compiles nothing) or a call past the recompile limit. fnID is the
// FunctionID the event names (-1 when none was made); why is its message.
func (e *Engine) runPlain(rec *traces.Record, step *Step, ds *devState, f *Function, args []*Tensor, what string, fnID int, why string) error {
	outs, err := e.runEagerBody(ds, f, args, rec.Line, what)
	if err != nil {
		return err
	}
	step.Action = ActionEager
	e.counters.Eager++
	e.emit(Event{Kind: EvEager, Line: rec.Line, Device: ds.index, Fn: f.Name, FnID: fnID, Node: -1, Parent: -1, Msg: why})
	return e.bindResults(rec, outs)
}

// runEagerBody runs f's body on the default stream and pool, holding the
// arguments alive while it runs (an argument may be named by nothing else).
func (e *Engine) runEagerBody(ds *devState, f *Function, args []*Tensor, line int, what string) ([]*Tensor, error) {
	for _, t := range args {
		e.tt.hold(t)
	}
	outs, err := e.runBody(ds, f, args, bodyRun{stream: device.DefaultStream, pool: poolDefault, line: line, what: what})
	for _, t := range args {
		e.tt.release(t)
	}
	return outs, err
}

// bindResults binds a call's results to its out names, then drops the
// call's hold: results without a name die now.
func (e *Engine) bindResults(rec *traces.Record, outs []*Tensor) error {
	for i, t := range outs {
		if rec.Out != nil {
			if err := e.tt.bind(rec.Out[i], t); err != nil {
				return err
			}
		}
	}
	for _, t := range outs {
		if err := e.tt.release(t); err != nil {
			return err
		}
	}
	return nil
}

// function returns the FunctionID for def called with these shapes and
// static flags, creating it (with a new id) on first use. When no compiled
// graph accepts the call and the code object is at Dynamo's recompile
// limit, it returns limited and a Function outside the tree (ID -1) that
// runs the body eagerly.
func (m *manager) function(def *traces.Record, shapes [][]int, static []bool, alias []int) (f *Function, limited bool, err error) {
	code := def.Fn
	if m.eng.sharedCode {
		code = ""
	}
	cs := m.compiles[code]
	if cs == nil {
		cs = &compileState{}
		if m.compiles == nil {
			m.compiles = map[string]*compileState{}
		}
		m.compiles[code] = cs
	}
	ent := cs.lookup(def.Fn, shapes, alias)
	if ent == nil {
		if len(cs.entries) >= m.eng.recompileLimit {
			p, err := compilePlan(def, shapes)
			if err != nil {
				return nil, false, err
			}
			return &Function{ID: -1, Dev: m.ds.index, Name: def.Fn, Mode: def.Mode, Shapes: shapes, plan: p, Mutated: mutatedParams(def)}, true, nil
		}
		m.eng.markHeavy()
		ent = cs.recompile(def.Fn, shapes, alias, static)
	}
	// The static inputs are those of the compiled graph: Dynamo does not
	// guard on mark_static_address, so a later call with a plain tensor in
	// that place reuses the graph and its FunctionID (checked on PyTorch).
	static = ent.static
	// The usual case, a call seen before, compares shapes without
	// building the key string.
	for _, id := range m.fnByName[def.Fn] {
		if f := m.funcs[id]; f.Compile == ent.gen && sameSignature(f, shapes, static) {
			return f, false, nil
		}
	}
	key := fmt.Sprintf("%s#%d", fnKey(def.Fn, shapes, static, m.ds.index), ent.gen)
	if id, ok := m.fnKeys[key]; ok {
		return m.funcs[id], false, nil
	}
	p, err := compilePlan(def, shapes)
	if err != nil {
		return nil, false, err
	}
	m.eng.markHeavy()
	f = &Function{ID: len(m.funcs), Dev: m.ds.index, Name: def.Fn, Mode: def.Mode, Shapes: shapes, Static: static, Compile: ent.gen, plan: p, Mutated: mutatedParams(def)}
	if f.Mode == "" {
		f.Mode = traces.ModeInference
	}
	for i, s := range static {
		if s {
			f.StaticIdx = append(f.StaticIdx, i)
		}
	}
	m.funcs = append(m.funcs, f)
	m.fnKeys[key] = f.ID
	if m.fnByName == nil {
		m.fnByName = map[string][]int{}
	}
	m.fnByName[def.Fn] = append(m.fnByName[def.Fn], f.ID)
	return f, false, nil
}

// compileState is Dynamo's view of one code object (one def, or every def
// under Options.SharedCode): its compiled graphs (cache entries, each
// guarding the def it was compiled for) and the automatic-dynamic history
// of its arguments. A call runs through the newest graph whose guards accept it;
// when none does, Dynamo recompiles, and dims whose size ever changed become
// dynamic (automatic dynamic shapes), except sizes 0 and 1, which are
// always specialized. cudagraphify keys its FunctionIDs per compiled graph
// and int key, so after a switch to dynamic shapes even a shape seen
// before gets a new FunctionID (all checked against PyTorch 2.11).
type compileState struct {
	entries []*compileEntry // oldest first
	frames  []*argFrame     // per argument, from the first compile on
}

// argFrame is Dynamo's FrameStateSizeEntry for one argument of a def: the
// sizes its compiles saw, -1 where they differed. Dynamo keys it by the
// argument's source, not by rank: once a compile sees another rank the
// whole size becomes auto_dynamic (pgo.py's _merge_atom_tup), and every
// later compile makes all its dims dynamic.
type argFrame struct {
	dims    []int
	anyRank bool
}

// merge records the sizes of a new compile.
func (a *argFrame) merge(s []int) {
	switch {
	case a.anyRank:
	case len(a.dims) != len(s):
		a.anyRank, a.dims = true, nil
	default:
		for j, d := range s {
			if a.dims[j] != d {
				a.dims[j] = -1
			}
		}
	}
}

// dynamic reports whether dim j is compiled dynamic.
func (a *argFrame) dynamic(j int) bool { return a.anyRank || a.dims[j] < 0 }

// compileEntry is one compiled graph: its guards on shapes (-1: dynamic)
// and on the aliasing of its arguments, and the static inputs it was
// compiled with.
type compileEntry struct {
	gen  int
	fn   string // the def: a closure's guards reject the other defs
	dims [][]int
	// alias is, per argument, the first earlier argument passed the same
	// tensor storage, or -1: Dynamo guards on duplicated inputs, so a call
	// aliasing its arguments differently needs another graph.
	alias  []int
	static []bool
}

// accepts reports whether the graph's guards let the call through.
func (c *compileEntry) accepts(fn string, shapes [][]int, alias []int) bool {
	if c.fn != fn || len(c.dims) != len(shapes) || !slices.Equal(c.alias, alias) {
		return false
	}
	for i, s := range shapes {
		if len(s) != len(c.dims[i]) {
			return false
		}
		for j, d := range s {
			if c.dims[i][j] >= 0 && c.dims[i][j] != d {
				return false
			}
			// A dynamic dim is a symbol guarded >= 2: sizes 0 and 1 are
			// specialized, so they need a graph of their own.
			if c.dims[i][j] < 0 && d < 2 {
				return false
			}
		}
	}
	return true
}

// lookup returns the newest compiled graph that accepts the call, or nil.
func (c *compileState) lookup(fn string, shapes [][]int, alias []int) *compileEntry {
	for i := len(c.entries) - 1; i >= 0; i-- {
		if c.entries[i].accepts(fn, shapes, alias) {
			return c.entries[i]
		}
	}
	return nil
}

// recompile adds a compiled graph for shapes, with the static inputs of
// this call, after merging shapes into the arguments' history.
func (c *compileState) recompile(fn string, shapes [][]int, alias []int, static []bool) *compileEntry {
	for i, s := range shapes {
		for len(c.frames) <= i {
			c.frames = append(c.frames, nil)
		}
		switch {
		case static[i]:
			// A static input (a parameter, a static address) always gets
			// static shapes (force_parameter_static_shapes), and Dynamo
			// records no history for it.
		case c.frames[i] == nil:
			// The first compile that sees this argument position.
			c.frames[i] = &argFrame{dims: slices.Clone(s)}
		default:
			c.frames[i].merge(s)
		}
	}
	// Numbered across all of the code object's graphs: FunctionIDs are
	// keyed by it.
	ent := &compileEntry{gen: len(c.entries) + 1, fn: fn, dims: cloneDims(shapes), alias: alias, static: slices.Clone(static)}
	for i, s := range shapes {
		if static[i] {
			continue
		}
		for j, d := range s {
			if c.frames[i].dynamic(j) && d > 1 {
				ent.dims[i][j] = -1
			}
		}
	}
	c.entries = append(c.entries, ent)
	return ent
}

func (c *compileState) clone() *compileState {
	n := &compileState{}
	for _, e := range c.entries {
		n.entries = append(n.entries, &compileEntry{gen: e.gen, fn: e.fn, dims: cloneDims(e.dims), alias: e.alias, static: e.static})
	}
	for _, a := range c.frames {
		if a == nil {
			n.frames = append(n.frames, nil)
			continue
		}
		n.frames = append(n.frames, &argFrame{dims: slices.Clone(a.dims), anyRank: a.anyRank})
	}
	return n
}

func cloneDims(d [][]int) [][]int {
	var out [][]int
	for _, x := range d {
		out = append(out, slices.Clone(x))
	}
	return out
}

// aliasPattern returns, per argument, the index of the first earlier
// argument that views the same storage, or -1.
func aliasPattern(args []*Tensor) []int {
	out := make([]int, len(args))
	for i, t := range args {
		out[i] = -1
		for j := 0; j < i; j++ {
			if args[j].Storage == t.Storage {
				out[i] = j
				break
			}
		}
	}
	return out
}

func sameSignature(f *Function, shapes [][]int, static []bool) bool {
	if len(f.Shapes) != len(shapes) {
		return false
	}
	for i := range shapes {
		if f.Static[i] != static[i] || !slices.Equal(f.Shapes[i], shapes[i]) {
			return false
		}
	}
	return true
}

func (e *Engine) warmed(f *Function) bool { return f.Warmups >= e.cfg.WarmupRuns }

// nodeKey is _get_node_id(): the current node's id, or noNode.
func (m *manager) nodeKey() int { return m.cur }

// run is CUDAGraphTreeManager._run, in PyTorch 2.11's order.
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
	// where 2.11 first touches the input's data: the mutation check, an
	// eager run, the warmup run (after its node became current), or the
	// invariant checks and the recording (the tree unchanged).
	stale := m.eng.raiseStaleArg(c.args)
	nid := m.nodeKey()
	if _, ok := m.mutationHint[nid][c.f.ID]; !ok {
		if stale != nil && len(c.f.Mutated) > 0 {
			return nil, "", &keptError{stale}
		}
		m.updateMutationHint(c)
	}
	if m.mutationHint[nid][c.f.ID] || m.exceedRerecordLimit(nid, c.f) {
		if stale != nil {
			return nil, "", &keptError{stale}
		}
		return m.runEagerOutside(c, "")
	}
	if !m.eng.warmed(c.f) || m.pathState == PathWarmup {
		if m.pathState == PathExecution {
			if err := m.applyCheckpoint(c); err != nil {
				return nil, "", err
			}
		}
		return m.runWarmup(c)
	}
	if stale != nil {
		return nil, "", &keptError{stale}
	}
	var candidates []int
	if cn := m.curNode(); cn != nil {
		candidates = cn.Children[c.f.ID]
	} else {
		candidates = m.roots[c.f.ID]
	}
	cause := CauseRecordingPath
	var failures []InvariantFailure
	rerecord := false
	if m.pathState != PathRecording {
		cause = CauseFirstChild
		if m.cur == noNode {
			cause = CauseNewRoot
		}
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
		if m.cur != noNode && len(m.roots[c.f.ID]) > 0 {
			// A root function: maybe restart from the roots.
			m.tryEndCurrExecution(c)
			if m.cur == noNode {
				return m.run(c)
			}
		}
		if len(c.f.Mutated) > 0 {
			m.updateMutationHint(c)
			if m.mutationHint[m.nodeKey()][c.f.ID] {
				return m.runEagerOutside(c, "")
			}
		}
		if rerecord {
			nid := m.nodeKey()
			m.eng.markHeavy()
			if m.numRerecord[nid] == nil {
				m.numRerecord[nid] = map[int]int{}
			}
			m.numRerecord[nid][c.f.ID]++
			if m.exceedRerecordLimit(nid, c.f) {
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
				msg := fmt.Sprintf("skipping cudagraph due to function %d exceeding max re-recording limit (=%d) on cudagraph node %s due to %s.", c.f.
					ID, m.eng.cfg.RerecordLimit, node, reason)
				m.emit(Event{Kind: EvSkip, Line: c.rec.Line, Device: m.ds.index, Fn: c.f.Name, FnID: c.f.ID, Node: -1, Parent: -1, Msg: msg})
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
	}
	return m.recordFunction(c, cause, failures, rerecord)
}

func rerecordReason(f InvariantFailure) string {
	name := f.InputName
	if name == "" {
		name = fmt.Sprintf("arg%d", f.Input)
	}
	return fmt.Sprintf("%s.\ninput name: %s. data pointer changed from %#x to %#x", f.Status, name, f.Old, f.New)
}

func (m *manager) exceedRerecordLimit(nid int, f *Function) bool {
	return m.numRerecord[nid][f.ID] > m.eng.cfg.RerecordLimit
}

// updateMutationHint is _update_non_cudagraph_managed_mutation: a function
// that mutates an input that is neither static nor an output of the current
// path runs eagerly at this position; the skip is logged once per function.
func (m *manager) updateMutationHint(c *call) {
	m.eng.markHeavy()
	nid := m.nodeKey()
	if m.mutationHint[nid] == nil {
		m.mutationHint[nid] = map[int]bool{}
	}
	var bad []int
	for _, i := range c.f.Mutated {
		if c.f.Static[i] {
			continue
		}
		if m.isRecordedTensor(c.args[i]) {
			continue
		}
		bad = append(bad, i)
	}
	if len(bad) == 0 {
		m.mutationHint[nid][c.f.ID] = false
		return
	}
	m.mutationHint[nid][c.f.ID] = true
	if m.warnedMutation[c.f.ID] {
		return
	}
	m.warnedMutation[c.f.ID] = true
	def := m.eng.defs[c.f.Name]
	msg := fmt.Sprintf("skipping cudagraphs due to mutated inputs (%d instances). Found from : \n   %s:%d, in %s\n    %s",
		len(bad), m.eng.file, c.rec.Line, c.f.Name, mutationText(def, bad))
	m.emit(Event{Kind: EvSkip, Line: c.rec.Line, Device: m.ds.index, Fn: c.f.Name, FnID: c.f.ID, Node: -1, Parent: -1, Msg: msg})
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
	st := m.eng.tt.storages[t.Storage]
	if st == nil || st.Ptr == 0 {
		return false
	}
	if w := m.curWarmup(); w != nil {
		for _, sid := range m.warmupPathLive(w) {
			if s := m.eng.tt.storages[sid]; s != nil && s.Ptr == st.Ptr {
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

// ---- ending paths ----

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
		if m.eng.tt.storageLive(path[oi.Depth].OutWeak[oi.Index]) {
			return false
		}
	}
	return true
}

func (m *manager) checkWarnOnUnableToStart(c *call) {
	if m.warnedFns[c.f.ID] || !m.inNewInvocation() {
		return
	}
	// The path from the root, warmup nodes included.
	type pn struct{ fn, parentFn int }
	var path []pn
	if w := m.curWarmup(); w != nil {
		for x := w; x != nil; {
			p := pn{fn: x.Fn, parentFn: -1}
			if x.ParentWarm != 0 {
				p.parentFn = m.warmups[x.ParentWarm].Fn
			} else if x.ParentGraph >= 0 {
				p.parentFn = m.nodes[x.ParentGraph].Fn
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
	if len(path) > 0 {
		last := path[0]
		if last.parentFn >= 0 {
			parents[last.parentFn] = true
		}
	}
	if len(parents) == len(existing) {
		return
	}
	m.eng.markHeavy()
	m.warnedFns[c.f.ID] = true
	m.emit(Event{Kind: EvWarning, Line: c.rec.Line, Device: m.ds.index, Fn: c.f.Name, FnID: c.f.ID, Node: -1, Parent: -1,
		Msg: "Unable to hit fast path of CUDAGraphs because of pending, uninvoked backwards. Consider running with torch.no_grad() or using torch.compiler.cudagraph_mark_step_begin() before each model invocation"})
}

func (m *manager) nodesOrNil(id int) *Node {
	if id >= 0 && id < len(m.nodes) {
		return m.nodes[id]
	}
	return nil
}

// deallocCurrentPath is dealloc_current_path_weakrefs: every live output of
// the path is freed now and marked, so that any later access raises the
// overwritten error. Live outputs that the incoming call takes as inputs
// are first moved out of the pool (PyTorch's fix after 2.11; see README).
func (m *manager) deallocCurrentPath(c *call) error {
	if w := m.failedWarmupOnPath(); w != nil {
		// PyTorch 2.11 asserts, for every node of the path, that it holds
		// a weak reference per output: a warmup whose run raised holds
		// none, so the path can never end through a new generation.
		// Kept, not rolled back: what the call did before (Dynamo's
		// compile, its FunctionID, the generation hook) stays, as in 2.11.
		return &keptError{&assertionError{fmt.Sprintf("AssertionError: the current path holds warmup %d, whose run raised at line %d (PyTorch 2.11: assert len(node.tensor_weakrefs) == len(node.stack_traces) in dealloc_current_path_weakrefs); every new generation fails here until the path's outputs are all dead",
			w.ID, w.Line)}}
	}
	m.eng.markHeavy()
	live := m.pathLive()
	if len(live) == 0 {
		return nil
	}
	liveSet := map[int]bool{}
	for _, sid := range live {
		liveSet[sid] = true
	}
	// Preserve inputs of the incoming call (not under HandoffRaise, where
	// they are freed with the rest and the call raises).
	var kept []string
	var keptPtrs []uint64
	for _, t := range c.args {
		if m.eng.handoff == HandoffRaise || !liveSet[t.Storage] {
			continue
		}
		old := m.eng.tt.storages[t.Storage]
		if old == nil {
			continue
		}
		moved, err := m.moveOutOfPool(old, c)
		if err != nil {
			return err
		}
		delete(liveSet, old.ID)
		kept = append(kept, m.eng.tt.nameOfStorage(moved.ID))
		keptPtrs = append(keptPtrs, uint64(old.Ptr))
	}
	if len(kept) > 0 {
		m.emit(Event{Kind: EvPreserve, Line: c.rec.Line, Device: m.ds.index, Node: -1, Parent: -1, Tensors: kept, Ptrs: keptPtrs,
			Msg: "live outputs passed to the next call were moved out of the graph pool before the path was freed"})
	}
	var names []string
	var ptrs []uint64
	seen := map[device.Ptr]bool{}
	for _, sid := range live {
		if !liveSet[sid] {
			continue
		}
		s := m.eng.tt.storages[sid]
		if s == nil || s.Refs == 0 || seen[s.Ptr] {
			continue
		}
		seen[s.Ptr] = true
		stack := fmt.Sprintf("%s:%d, in %s", m.eng.file, s.Line, s.What)
		s.Stale = true
		s.StaleMsg = overwrittenMsg(stack)
		if s.Owned {
			s.Owned = false
			m.ds.alloc.SetContext(c.rec.Line, "dealloc previous generation")
			if err := m.ds.alloc.Free(s.Ptr); err != nil {
				return fmt.Errorf("free output of the previous generation at %#x: %w", s.Ptr, err)
			}
		}
		n := m.eng.tt.nameOfStorage(sid)
		if n == "" {
			n = s.What
		}
		names = append(names, n)
		ptrs = append(ptrs, uint64(s.Ptr))
	}
	if len(names) > 0 {
		m.emit(Event{Kind: EvDealloc, Line: c.rec.Line, Device: m.ds.index, Node: -1, Parent: -1, Tensors: names, Ptrs: ptrs,
			Msg: fmt.Sprintf("freed %d output(s) of the previous generation; reading them now raises the overwritten error", len(names))})
	}
	return nil
}

// failedWarmupOnPath returns a warmup node of the current path whose run
// raised (HandoffRaise), or nil.
func (m *manager) failedWarmupOnPath() *WarmupNode {
	w := m.curWarmup()
	if w == nil {
		return nil
	}
	chain, _ := m.warmupChain(w)
	for _, x := range chain {
		if x.Failed {
			return x
		}
	}
	return nil
}

// moveOutOfPool copies a live pool storage into a new default-pool storage
// and points every tensor viewing it there.
func (m *manager) moveOutOfPool(old *Storage, c *call) (*Storage, error) {
	ds := m.ds
	ds.alloc.SetContext(c.line(), "preserve "+old.What)
	ns, err := m.eng.allocStorage(ds, old.Bytes, device.DefaultStream, poolDefault, old.Line, old.What)
	if err != nil {
		return nil, err
	}
	if old.Bytes > 0 {
		if err := ds.dev.CopyDtoD(device.DefaultStream, ns.Ptr, old.Ptr, old.Bytes/4); err != nil {
			return nil, err
		}
	}
	for _, t := range m.eng.tt.tensors {
		if t.Storage == old.ID {
			t.Storage = ns.ID
			if t.live() {
				ns.Refs++
			}
		}
	}
	old.Refs = 0
	if old.Owned {
		old.Owned = false
		if err := ds.alloc.Free(old.Ptr); err != nil {
			return nil, err
		}
	}
	if old.Pins == 0 {
		delete(m.eng.tt.storages, old.ID)
	}
	return ns, nil
}

// pathLive returns the live output storages of the current path (warmup
// chain and graph nodes), root first.
func (m *manager) pathLive() []int {
	if w := m.curWarmup(); w != nil {
		return m.warmupPathLive(w)
	}
	if n := m.curNode(); n != nil {
		return m.nodePathLive(n)
	}
	return nil
}

func (m *manager) nodePathLive(n *Node) []int {
	var out []int
	for _, x := range m.path(n) {
		for _, sid := range x.OutWeak {
			if sid != 0 && m.eng.tt.storageLive(sid) {
				out = append(out, sid)
			}
		}
	}
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
	chain, top := m.warmupChain(w)
	var out []int
	if top != nil {
		out = m.nodePathLive(top)
	}
	for i := len(chain) - 1; i >= 0; i-- {
		for _, sid := range chain[i].OutWeak {
			if sid != 0 && m.eng.tt.storageLive(sid) {
				out = append(out, sid)
			}
		}
	}
	return out
}

// ---- checkpoints ----

// applyCheckpoint is apply_checkpoint_execution_state_in_allocator: the
// pool is put back as it was when the current node recorded, the live
// outputs of the path become owners of their blocks again, and blocks of
// outputs that died since are freed.
func (m *manager) applyCheckpoint(c *call) error {
	m.eng.markHeavy()
	n := m.curNode()
	if n == nil {
		return fmt.Errorf("checkpoint without a current graph node")
	}
	m.checkpoints++
	m.eng.counters.Checkpoints++
	c.step.
		Checkpoint = true
	path := m.path(n)
	// remove_path_cached_tensors
	for _, x := range path {
		m.eng.dropCachedTensors(x)
	}
	var livePtrs []device.Ptr
	liveOwner := map[device.Ptr]int{}
	for _, sid := range m.nodePathLive(n) {
		s := m.eng.tt.storages[sid]
		if _, dup := liveOwner[s.Ptr]; !dup {
			liveOwner[s.Ptr] = sid
			livePtrs = append(livePtrs, s.Ptr)
		}
	}
	var deadPtrs []device.Ptr
	seenDead := map[device.Ptr]bool{}
	for _, oi := range n.LiveAfter {
		sid := path[oi.Depth].OutWeak[oi.Index]
		if sid == 0 || m.eng.tt.storageLive(sid) {
			continue
		}
		p := path[oi.Depth].Outputs[oi.Index].Ptr
		if !seenDead[p] {
			seenDead[p] = true
			deadPtrs = append(deadPtrs, p)
		}
	}
	a := m.ds.alloc
	a.SetContext(c.rec.Line, fmt.Sprintf("checkpoint to #%d", n.ID))
	delta, err := a.SetCheckpointPoolState(n.CheckpointState, nil, livePtrs)
	if err != nil {
		return fmt.Errorf("checkpoint to node %d: %w", n.ID, err)
	}
	for p, sid := range liveOwner {
		s := m.eng.tt.storages[sid]
		s.Owned = true
		_ = p
	}
	view := &CheckpointView{Node: n.ID}
	for _, b := range delta.DataPtrsAllocd {
		if sid, ok := liveOwner[b.Addr]; ok {
			view.Reallocated = append(view.Reallocated, DeltaBlock{Ptr: uint64(b.Addr), Size: b.Size, Tensor: m.eng.storageLabel(sid)})
		}
	}
	for _, p := range deadPtrs {
		blk, _ := a.BlockAt(p)
		if err := a.Free(p); err != nil {
			return fmt.Errorf("checkpoint to node %d: free dead output at %#x: %w", n.ID, p, err)
		}
		view.Freed = append(view.Freed, DeltaBlock{Ptr: uint64(p), Size: blk.Size, Tensor: m.deadOutputLabel(n, p)})
	}
	sort.Slice(view.Reallocated, func(i, j int) bool { return view.Reallocated[i].Ptr < view.Reallocated[j].Ptr })
	m.emit(Event{Kind: EvCheckpoint, Line: c.rec.Line, Device: m.ds.index, Node: n.ID, Parent: n.Parent, Delta: view,
		Msg: fmt.Sprintf("Checkpointing cuda caching allocator state. Number of checkpoints %d", m.checkpoints)})
	if ok, mm := a.CheckPoolLiveAllocations(m.pool, livePtrs); !ok {
		return fmt.Errorf("after the checkpoint the pool does not match the live tensors: allocated but not live %v, live but not allocated %v",
			mm.AllocatedNotLive, mm.LiveNotAllocated)
	}
	return nil
}

func (e *Engine) storageLabel(sid int) string {
	if n := e.tt.nameOfStorage(sid); n != "" {
		return n
	}
	if s := e.tt.storages[sid]; s != nil {
		return s.What
	}
	return ""
}

func (m *manager) deadOutputLabel(n *Node, p device.Ptr) string {
	for _, x := range m.path(n) {
		for i, o := range x.Outputs {
			if o.Ptr == p {
				return fmt.Sprintf("%s output %d (dead)", m.funcs[x.Fn].Name, i)
			}
		}
	}
	return "(dead)"
}

// dropCachedTensors is remove_path_cached_tensors for one node.
func (e *Engine) dropCachedTensors(n *Node) {
	for _, tid := range n.Cached {
		if tid == 0 {
			continue
		}
		t := e.tt.tensors[tid]
		if t == nil {
			continue
		}
		t.Cached = false
		if s := e.tt.storages[t.Storage]; s != nil {
			s.Pins--
			if s.Refs == 0 && s.Pins == 0 {
				delete(e.tt.storages, s.ID)
			}
		}
		if !t.live() {
			delete(e.tt.tensors, tid)
		}
	}
	n.Cached = nil
}
