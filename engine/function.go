package engine

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/engine/dynamo"
	"github.com/cgtviz/cgtviz/traces"
	"github.com/cgtviz/cgtviz/traces/ops"
)

// Function is one FunctionID: a compiled function specialised to its
// argument shapes and to which arguments are static, as Dynamo would
// recompile it. Each has its own warmup and its own nodes. What every call
// reads comes first, in one cache line.
type Function struct {
	ID int // PyTorch's FunctionID, counted per device
	// gen is the generation of the function tables that owns the object
	// (manager.fnGen): another one shares it.
	gen uint64
	// Warmups counts eager runs inside the pool (run_eager) so far.
	Warmups int
	// Mutated lists the parameters the body writes in place.
	Mutated []int
	// viewsOnly is plan.viewsOnly, which every call reads: here it costs
	// no read of the plan on a replay, which runs none of it.
	viewsOnly bool
	// Dynamic: the compiled graph has symbolic shapes (a dynamic dim).
	Dynamic bool
	// Graph is the def whose compiled graph this function is a size of,
	// where its own def names one (traces.Record.Graph), else "".
	Graph  string
	Mode   traces.Mode
	Dev    int
	Name   string
	Shapes [][]int
	// DTypes are the arguments' dtypes (Dynamo guards on them).
	DTypes []ops.DType
	// Static marks the arguments that are parameters (static inputs);
	// StaticIdx lists their positions.
	Static    []bool
	StaticIdx []int
	// Compile numbers the compiled graph of the def this function belongs
	// to (Dynamo recompiles when shapes change; see engine/dynamo).
	Compile int
	// Size numbers the function among its compiled graph's FunctionIDs,
	// from 1: cudagraphify records a dynamic graph once per distinct
	// input size, so 2 and up is a new size of a graph compiled before.
	Size int
	plan *plan
	// view is the function as the last State showed it (view.go).
	view *FunctionView
	// recordings counts the function's recordings in the tree so far
	// (Origin.First).
	recordings int
}

// plan is a function body compiled for fixed argument shapes: statements
// over numbered slots (params first), so running it needs no map lookups.
type plan struct {
	nParams int
	nSlots  int
	stmts   []planStmt
	returns []int
	shapes  [][]int // per slot
	dtypes  []ops.DType
	// body is the def's statements (the def's own slice, never changed),
	// rendered for messages only when one is needed (text): a new
	// FunctionID no longer formats every statement it may never report.
	body []traces.Stmt
	// viewsOnly is true when the body launches no kernel: its outputs are
	// its inputs or views of them. Dynamo and AOTAutograd compile nothing
	// for such a function, so it never reaches the tree (checked against
	// PyTorch 2.11: such calls run eagerly).
	viewsOnly bool
}

type planStmt struct {
	kind    string // "kernel", "view", "empty"
	k       ops.Kernel
	out     int // slot written
	a, b    int // slots, -1 when absent
	bk      ops.BKind
	scalar  float32
	inPlace bool // out is a parameter slot
	shape   []int
	// opaque: a dtype whose values are not modelled flows through the
	// statement: the launch writes the output's bytes (zeros) instead of
	// computing, so the graph and the pool are as PyTorch's.
	opaque bool
	// offset and strides of a view statement with as_strided geometry
	// (offset in elements, absolute in the storage).
	strided bool
	offset  int64
	strides []int64
}

// compilePlan builds the plan of def for argument shapes and dtypes (nil:
// every argument float32).
func compilePlan(def *traces.Record, shapes [][]int, dtypes []ops.DType) (*plan, error) {
	// The slices sized at once: a slot a parameter or a statement at
	// most, and a plan is built for every new FunctionID.
	nSlots := len(def.Params) + len(def.Body)
	p := &plan{nParams: len(def.Params), body: def.Body,
		shapes: make([][]int, 0, nSlots), dtypes: make([]ops.DType, 0, nSlots),
		stmts: make([]planStmt, 0, len(def.Body)), returns: make([]int, 0, len(def.Returns))}
	slots := map[string]int{}
	for i, name := range def.Params {
		slots[name] = i
		p.shapes = append(p.shapes, shapes[i])
		dt := ops.Float32
		if i < len(dtypes) {
			dt = dtypes[i]
		}
		p.dtypes = append(p.dtypes, dt)
	}
	p.nSlots = len(def.Params)
	for si, st := range def.Body {
		operands := ops.Operands{Shape: st.Shape, HasVal: st.HasValue, BIsNum: st.B.IsNum, Strided: st.Strided()}
		ps := planStmt{a: -1, b: -1, kind: "kernel"}
		if st.A != "" {
			s, ok := slots[st.A]
			if !ok {
				return nil, fmt.Errorf("statement %d: name %q is not bound", si+1, st.A)
			}
			ps.a = s
			operands.A, operands.HasA = p.shapes[s], true
		}
		if st.B.Name != "" {
			s, ok := slots[st.B.Name]
			if !ok {
				return nil, fmt.Errorf("statement %d: name %q is not bound", si+1, st.B.Name)
			}
			ps.b = s
			operands.B, operands.HasB = p.shapes[s], true
		}
		shape, bk, err := ops.ResultShape(st.K, operands)
		if err != nil {
			return nil, fmt.Errorf("statement %d (%s): %w", si+1, stmtText(st), err)
		}
		ps.shape, ps.bk = shape, bk
		ps.scalar = float32(st.B.Num)
		// The result's dtype: the statement's own, else a's (a view, an
		// elementwise op, a copy), else float32 (fill, empty).
		dt := ops.Float32
		if ps.a >= 0 {
			dt = p.dtypes[ps.a]
		}
		if st.DType != "" {
			d, ok := ops.ParseDType(st.DType)
			if !ok {
				return nil, fmt.Errorf("statement %d (%s): unknown dtype %q", si+1, stmtText(st), st.DType)
			}
			dt = d
		}
		ps.opaque = !dt.ComputesValues() || (ps.a >= 0 && !p.dtypes[ps.a].ComputesValues()) || (ps.b >= 0 && !p.dtypes[ps.b].ComputesValues())
		switch st.K {
		case ops.StmtView:
			ps.kind = "view"
			ps.strided, ps.offset, ps.strides = st.Strided(), st.Offset, st.Strides
		case ops.StmtEmpty:
			ps.kind = "empty"
		default:
			k, _ := ops.Parse(st.K)
			ps.k = k
			if k == ops.Fill {
				ps.scalar = float32(st.Value)
			}
		}
		if s, ok := slots[st.Out]; ok && s < p.nParams && ps.kind == "kernel" {
			// Writing into a parameter: the function mutates its input.
			if !slices.Equal(p.shapes[s], shape) {
				return nil, fmt.Errorf("statement %d (%s): writes %s into parameter %q of shape %s",
					si+1, stmtText(st), ops.FormatShape(shape), st.Out, ops.FormatShape(p.shapes[s]))
			}
			ps.out, ps.inPlace = s, true
		} else {
			ps.out = p.nSlots
			p.nSlots++
			p.shapes = append(p.shapes, shape)
			p.dtypes = append(p.dtypes, dt)
			slots[st.Out] = ps.out
		}
		p.stmts = append(p.stmts, ps)
	}
	for _, r := range def.Returns {
		s, ok := slots[r]
		if !ok {
			return nil, fmt.Errorf("returns %q, which the body does not bind", r)
		}
		p.returns = append(p.returns, s)
	}
	p.viewsOnly = true
	for _, ps := range p.stmts {
		if ps.kind != "view" {
			p.viewsOnly = false
		}
	}
	return p, nil
}

// text is statement i as a line of code ("c = y * 4"), for messages.
func (p *plan) text(i int) string { return stmtText(p.body[i]) }

// stmtText renders a statement as a line of code, for messages.
func stmtText(st traces.Stmt) string {
	syms := map[string]string{"add": "+", "sub": "-", "mul": "*", "div": "/"}
	b := st.B.Name
	if st.B.IsNum {
		b = fmt.Sprint(st.B.Num)
	}
	if op, ok := syms[st.K]; ok {
		return fmt.Sprintf("%s = %s %s %s", st.Out, st.A, op, b)
	}
	switch st.K {
	case "fill":
		return fmt.Sprintf("%s = fill(%s, %v)", st.Out, ops.FormatShape(st.Shape), st.Value)
	case "empty":
		return fmt.Sprintf("%s = empty(%s)", st.Out, ops.FormatShape(st.Shape))
	case "view":
		if st.Shape != nil {
			return fmt.Sprintf("%s = %s.view(%s)", st.Out, st.A, ops.FormatShape(st.Shape))
		}
		return fmt.Sprintf("%s = %s.view()", st.Out, st.A)
	}
	if b != "" {
		return fmt.Sprintf("%s = %s(%s, %s)", st.Out, st.K, st.A, b)
	}
	return fmt.Sprintf("%s = %s(%s)", st.Out, st.K, st.A)
}

// mutatedParams lists the parameters a body writes in place.
func mutatedParams(def *traces.Record) []int {
	idx := map[string]int{}
	for i, p := range def.Params {
		idx[p] = i
	}
	seen := map[int]bool{}
	var out []int
	for _, st := range def.Body {
		if i, ok := idx[st.Out]; ok && st.K != ops.StmtView && !seen[i] {
			seen[i] = true
			out = append(out, i)
		}
	}
	return out
}

// bodyRun is how a body runs: on which stream, whether its new tensors are
// in the graph pool, and what the allocator's context says.
type bodyRun struct {
	stream device.Stream
	pool   poolKind
	line   int
	what   string
}

// runBody runs f's body on args (held by the caller). It returns the output
// tensors, each held once. Intermediates that are not returned die at the
// end, inside the pool they were allocated in, as the spec says.
func (sh *shared) runBody(ds *devState, f *Function, args []*Tensor, r bodyRun) ([]*Tensor, error) {
	p := f.plan
	tt := sh.tt
	slots := make([]*Tensor, p.nSlots)
	copy(slots, args)
	// locals are a statement's output at most: room for a short body's
	// on the stack, which every warmup and recording runs.
	var localBuf [8]*Tensor
	locals := localBuf[:0]
	l := &sh.scratch.launch
	release := func() error {
		var first error
		for _, t := range locals {
			if err := tt.release(t); err != nil && first == nil {
				first = err
			}
		}
		return first
	}
	for i := range p.stmts {
		ps := &p.stmts[i]
		var a, b *Storage
		if ps.a >= 0 {
			a = tt.storages.get(slots[ps.a].Storage)
		}
		if ps.b >= 0 {
			b = tt.storages.get(slots[ps.b].Storage)
		}
		switch ps.kind {
		case "view":
			t := tt.newTensor(a, ps.shape, r.line, r.what)
			t.DType = p.dtypes[ps.out]
			if base := slots[ps.a]; ps.strided {
				t.Offset = ps.offset * int64(t.DType.Size())
				if !ops.IsContiguous(ps.shape, ps.strides) {
					t.Strides = append([]int64(nil), ps.strides...)
				}
			} else {
				// A plain view keeps its base's geometry start.
				t.Offset, t.Strides = base.Offset, base.Strides
			}
			locals = append(locals, t)
			slots[ps.out] = t
			continue
		}
		var out *Storage
		if ps.inPlace {
			out = tt.storages.get(slots[ps.out].Storage)
		} else {
			st, err := sh.allocStorage(ds, bytesOf(ps.shape, p.dtypes[ps.out]), r.stream, r.pool, r.line, r.what)
			if err != nil {
				release()
				return nil, fmt.Errorf("statement %d (%s): %w", i+1, p.text(i), err)
			}
			out = st
			t := tt.newTensor(st, ps.shape, r.line, r.what)
			t.DType = p.dtypes[ps.out]
			locals = append(locals, t)
			slots[ps.out] = t
		}
		if ps.kind == "empty" {
			continue
		}
		*l = device.Launch{K: ps.k, Out: out.Ptr, BKind: ps.bk, Scalar: ps.scalar}
		opaque := ps.opaque
		strided := false
		var at, bt, ot *Tensor
		if a != nil {
			at = slots[ps.a]
			l.A = a.Ptr + device.Ptr(at.Offset)
			strided = at.Strides != nil
		}
		if b != nil {
			bt = slots[ps.b]
			l.B = b.Ptr + device.Ptr(bt.Offset)
			strided = strided || bt.Strides != nil
		}
		if ps.inPlace {
			ot = slots[ps.out]
			l.Out = out.Ptr + device.Ptr(ot.Offset)
			strided = strided || ot.Strides != nil
		}
		switch {
		case !opaque && strided:
			// A view's elements are where its strides put them: the
			// launch carries them (strided.go), still one kernel.
			opaque = !stridedGeom(l, &sh.scratch.geom, ps.k, ps.bk, ps.shape, at, bt, ot)
		case ps.k == ops.Matmul:
			l.M, l.Kd, l.Cols = int64(p.shapes[ps.a][0]), int64(p.shapes[ps.a][1]), int64(p.shapes[ps.b][1])
		case ps.k == ops.Sum:
			l.N = numElems(p.shapes[ps.a])
		default:
			l.N = numElems(ps.shape)
		}
		if opaque {
			// Values of this dtype, or of a view the launch cannot
			// describe (docs/trace-format.md), are not modelled: one
			// kernel writes the output's bytes, so the graph still holds
			// one kernel, and Opaque has the sim mark them unknown, not
			// zeros.
			*l = device.Launch{K: ops.Fill, Out: out.Ptr, N: words(out.Bytes), Opaque: true}
		}
		if l.N == 0 && l.K != ops.Matmul {
			continue
		}
		if err := ds.dev.Launch(r.stream, l); err != nil {
			release()
			return nil, fmt.Errorf("statement %d (%s): launch %s: %w", i+1, p.text(i), ps.k, err)
		}
	}
	outs := make([]*Tensor, len(p.returns))
	for i, s := range p.returns {
		src := slots[s]
		st := tt.storages.get(src.Storage)
		outs[i] = tt.newTensor(st, p.shapes[s], r.line, r.what+" output "+strconv.Itoa(i))
		outs[i].DType = p.dtypes[s]
		// A view keeps its place in the storage (issue 31 item 4).
		outs[i].Offset, outs[i].Strides = src.Offset, src.Strides
	}
	if err := release(); err != nil {
		for _, o := range outs {
			tt.release(o)
		}
		return nil, err
	}
	return outs, nil
}

// allocStorage allocates a new storage of n bytes on stream s (the pool is
// chosen by the allocator's routing: the side stream goes to the graph pool
// while the engine allocates to it).
func (sh *shared) allocStorage(ds *devState, n int64, s device.Stream, pool poolKind, line int, what string) (*Storage, error) {
	st := Storage{Dev: ds.index, Bytes: n, Pool: pool, Line: line, What: what}
	if sh.curSrc != nil {
		src := *sh.curSrc
		st.Src = &src
	}
	if n == 0 {
		st.Pool = poolNone
		return sh.tt.newStorage(st), nil
	}
	ptr, err := ds.alloc.Malloc(n, s)
	if err != nil {
		return nil, err
	}
	st.Ptr, st.Owned = ptr, true
	return sh.tt.newStorage(st), nil
}

// function returns the FunctionID for def called with these shapes and
// static flags, creating it (with a new id) on first use. When no compiled
// graph accepts the call and the code object is at Dynamo's recompile
// limit, it returns limited and a Function outside the tree (ID -1) that
// runs the body eagerly.
//
// A call whose def, signature (shapes, dtypes, aliasing) and device are
// those of the def's last call, with no compile on the device since, runs
// through the same FunctionID (Dynamo's guards are a function of the
// cache and the signature alone): the manager's dispatch entry of the def
// says which, without the Dynamo cache, the signature hash and the
// function tables, each a cache miss per call in a program of ten
// thousand functions called in turn. idx is def.idx, which the caller
// has from the def's cache slot without reading the def.
func (m *manager) function(def *defn, idx int, line int, shapes [][]int, dtypes []ops.DType, static []bool, alias []int) (f *Function, limited bool, err error) {
	if idx < len(m.dispatch) {
		if d := &m.dispatch[idx]; d.def == def && d.epoch == m.compileEpoch && d.matches(shapes, dtypes, alias) {
			if m.sh.checkDispatch != nil {
				m.sh.checkDispatch(m, def, d.fid, shapes, dtypes, static, alias)
			}
			return m.ownFunc(d.fid), false, nil
		}
	}
	f, limited, err = m.lookupFunction(&def.Record, line, shapes, dtypes, static, alias)
	if err == nil && !limited {
		m.remember(def, f.ID, shapes, dtypes, alias)
	}
	return f, limited, err
}

// lookupFunction is function without the dispatch entry: Dynamo's cache
// of the def's code object, then the FunctionID of the compiled graph and
// signature.
func (m *manager) lookupFunction(def *traces.Record, line int, shapes [][]int, dtypes []ops.DType, static []bool, alias []int) (f *Function, limited bool, err error) {
	// guard is what a compiled graph's guards tell apart: the def. Under
	// SharedCode every def is a closure of one code object, and the
	// guards see only what the closure reads, the def's body: two defs
	// with the same body run through one graph and one FunctionID
	// (checked on PyTorch 2.11 with tools/gpu/probes, torch-oracle.py).
	code, guard := def.Fn, def.Fn
	if m.sh.sharedCode {
		code, guard = "", bodyKey(def)
	}
	cs := m.compiles[code]
	fresh := cs == nil
	if fresh {
		cs = &dynamo.Cache{}
		m.compiles[code] = cs
		m.sh.onUndo(func() { delete(m.compiles, code) })
	}
	ent := cs.Lookup(guard, shapes, dtypes, alias)
	if ent == nil {
		if cs.Len() >= m.sh.recompileLimitNow() {
			p, err := compilePlan(def, shapes, dtypes)
			if err != nil {
				return nil, false, err
			}
			return &Function{ID: -1, Dev: m.ds.index, Name: def.Fn, Mode: def.Mode, Shapes: slices.Clone(shapes), DTypes: slices.Clone(dtypes), plan: p, viewsOnly: p.viewsOnly, Mutated: mutatedParams(def)}, true, nil
		}
		if !fresh {
			// A cache made by this record is dropped whole when it is
			// undone: only an older one needs its state back (and a
			// def's first call, each def's in a big program, copies
			// nothing).
			old := cs.Clone()
			m.sh.onUndo(func() { *cs = *old })
		}
		// A compile may change what the cache's guards accept for any
		// signature (a dynamic graph is looked up first): every dispatch
		// entry of the device is stale. The epoch only grows, so an
		// undone compile leaves them stale too (the rollback restores the
		// entries this record wrote, and they are looked up again).
		m.compileEpoch++
		ent = cs.Compile(guard, shapes, dtypes, alias, static, dynamo.Shapes{Automatic: m.sh.cfg.AutomaticDynamicShapes, AssumeStatic: m.sh.cfg.AssumeStaticByDefault, StaticInputsStatic: m.sh.sharedCode})
	}
	// The static inputs are those of the compiled graph: Dynamo does not
	// guard on mark_static_address, so a later call with a plain tensor in
	// that place reuses the graph and its FunctionID (checked on PyTorch).
	static = ent.Static
	// The usual case, a call seen before, compares shapes without
	// building the key string.
	sig := sigHash(guard, ent.Gen, shapes, dtypes, static)
	for _, id := range m.fnBySig[sig] {
		if f := m.funcs[id]; f.Compile == ent.Gen && sameSignature(f, shapes, dtypes, static) {
			return m.ownFunc(id), false, nil
		}
	}
	// Not found under its hash: no FunctionID has this signature (the
	// hash is a function of it). A map by the signature's text, looked up
	// here, held the same FunctionIDs and never found one, and neither did
	// a list by name, only ever appended to: each cost a string and map
	// entries for every new FunctionID.
	p, err := compilePlan(def, shapes, dtypes)
	if err != nil {
		return nil, false, err
	}
	f = &Function{ID: len(m.funcs), Dev: m.ds.index, Name: def.Fn, Mode: def.Mode, Shapes: slices.Clone(shapes), DTypes: slices.Clone(dtypes), Static: static, Compile: ent.Gen, Dynamic: ent.Dynamic() || def.Graph != "", Graph: def.Graph, plan: p, viewsOnly: p.viewsOnly, Mutated: mutatedParams(def)}
	// (The tables this writes to are the manager's own from here: a clone
	// shares them until one changes them.)
	m.ownFuncTables()
	gk := m.graphOf(def, graphKey{guard, ent.Gen})
	m.warnDynamicShapes(gk, def.Fn, line)
	if f.Mode == "" {
		f.Mode = traces.ModeInference
	}
	for i, s := range static {
		if s {
			f.StaticIdx = append(f.StaticIdx, i)
		}
	}
	f.gen = m.fnGen
	if m.sizes == nil {
		m.sizes = map[graphKey]int{}
	}
	m.sizes[gk]++
	f.Size = m.sizes[gk]
	nfuncs := len(m.funcs)
	bySig, hadSig := m.fnBySig[sig], m.fnBySig[sig] != nil
	m.funcs = append(m.funcs, f)
	m.fnBySig[sig] = append(m.fnBySig[sig], f.ID)
	m.sh.onUndo(func() {
		m.funcs = m.funcs[:nfuncs]
		if m.sizes[gk]--; m.sizes[gk] == 0 {
			delete(m.sizes, gk)
			if len(m.sizes) == 0 {
				m.sizes = nil // as it was before the first
			}
		}
		if hadSig {
			m.fnBySig[sig] = bySig
		} else {
			delete(m.fnBySig, sig)
		}
	})
	return f, false, nil
}

// warnDynamicShapes is maybe_warning_due_to_dynamic_shape: cudagraphify
// records a graph per distinct input size of a dynamic graph, and past
// cudagraph_dynamic_shape_warn_limit of them PyTorch says so, once a
// compiled graph (cudagraphify_impl's has_warn: a graph whose sizes grew
// past the limit while it was None warns at its next new size).
func (m *manager) warnDynamicShapes(gk graphKey, fn string, line int) {
	limit := m.sh.cfg.DynamicShapeWarnLimit
	if limit <= 0 {
		return
	}
	// The size being added, and those recorded before: counted as the
	// functions are made, since a scan of the def's functions made the
	// growth of a big tree quadratic.
	n := 1 + m.sizes[gk]
	if n <= limit || m.sizeWarned[gk] {
		return
	}
	if m.sizeWarned == nil {
		m.sizeWarned = map[graphKey]bool{}
	}
	m.sizeWarned[gk] = true
	m.sh.onUndo(func() { delete(m.sizeWarned, gk) })
	m.emit(Event{Kind: EvWarning, Line: line, Device: m.ds.index, Fn: fn, FnID: -1, Node: -1, Parent: -1,
		Msg: fmt.Sprintf("CUDAGraph supports dynamic shapes by recording a new graph for each distinct input size. Recording too many CUDAGraphs may lead to extra overhead. We have observed %d distinct sizes. Please consider the following options for better performance: a) padding inputs to a few fixed number of shapes; or b) set torch._inductor.config.triton.cudagraph_skip_dynamic_graphs=True. Set torch._inductor.config.triton.cudagraph_dynamic_shape_warn_limit=None to silence this warning.", n)})
}

// graphOf is the compiled graph whose sizes a new function of def counts
// among: Dynamo's (own, the key of the def's compiled entry), or, for a
// def that names its graph (a recorded trace writes each size of a dynamic
// graph as its own def: traces.Record.Graph), the graph of the def it
// names, as that def's first function found it. The def's own graph is
// kept for the defs that name it. Like warnDynamicShapes, it writes the
// function tables, which the caller has made its own (ownFuncTables).
func (m *manager) graphOf(def *traces.Record, own graphKey) graphKey {
	gk := own
	if def.Graph != "" {
		var ok bool
		if gk, ok = m.defGraphs[def.Graph]; !ok {
			// (The graph's def not called yet: the sizes of this def's
			// name count together.)
			gk = graphKey{"graph " + def.Graph, 0}
		}
	}
	if _, ok := m.defGraphs[def.Fn]; !ok {
		if m.defGraphs == nil {
			m.defGraphs = map[string]graphKey{}
		}
		m.defGraphs[def.Fn] = gk
		m.sh.onUndo(func() { delete(m.defGraphs, def.Fn) })
	}
	return gk
}

// fnGens hands out generations of function tables (manager.fnGen);
// atomic because clones may live in other goroutines.
var fnGens atomic.Uint64

// shareFuncs makes m and its clone c share the function tables and every
// Function: a tree of ten thousand FunctionIDs made each keyframe copy them
// all, while a call changes at most its own Function's warmup count, and
// only a new FunctionID changes the tables.
func (m *manager) shareFuncs(c *manager) {
	m.fnShared, c.fnShared = true, true
	m.fnGen, c.fnGen = fnGens.Add(1), fnGens.Add(1)
}

// ownFuncTables gives m its own copy of the function tables before it
// changes them, when a clone shares them. The slices in the maps are
// clipped, so that an append by either copies rather than writes into an
// array the other sees.
func (m *manager) ownFuncTables() {
	if !m.fnShared {
		return
	}
	m.fnShared = false
	m.funcs = slices.Clone(m.funcs)
	m.sizes = maps.Clone(m.sizes)
	m.sizeWarned = maps.Clone(m.sizeWarned)
	m.defGraphs = maps.Clone(m.defGraphs)
	bySig := make(map[uint64][]int, len(m.fnBySig))
	for k, v := range m.fnBySig {
		bySig[k] = slices.Clip(v)
	}
	m.fnBySig = bySig
}

// ownFunc returns FunctionID id as m's own object, copying one shared with
// a clone: the caller may change it (a warmup counts itself).
func (m *manager) ownFunc(id int) *Function {
	f := m.funcs[id]
	if f.gen == m.fnGen {
		return f
	}
	m.ownFuncTables()
	nf := *f
	nf.gen = m.fnGen
	m.funcs[id] = &nf
	return &nf
}

// defn is a def record as the engine keeps it: never changed once made
// (a clone shares it), numbered in the order the defs were made (idx), so
// that a manager keeps what it knows of each def in a slice (dispatch).
//
// What every call reads of it comes first, in one cache line (idx, the
// counts of params and returns, the static inputs), ahead of the record's
// 400 bytes: a call of one of ten thousand defs reads the def cold.
type defn struct {
	idx               int
	nParams, nReturns int
	static            []int
	traces.Record
}

// newDefn is the def of record rec, number idx.
func newDefn(rec *traces.Record, idx int) *defn {
	return &defn{idx: idx, nParams: len(rec.Params), nReturns: len(rec.Returns), static: rec.Static, Record: *rec}
}

// dispatchEntry is the FunctionID of a def's last call on one device and
// the signature it was found for (manager.function's fast path). def
// tells a later def of the same index (after a rollback) apart; epoch is
// the manager's compileEpoch when it was found.
type dispatchEntry struct {
	def   *defn
	fid   int
	epoch uint64
	// sig is the signature, per argument its dtype, alias, rank and dims
	// after the count of arguments: in the entry itself up to len(small)
	// numbers (one argument of rank up to 6, or a few of low rank), so
	// that the check reads one object.
	n     int
	small [12]int32
	big   []int
}

// sigLen is the count of numbers in the signature of shapes.
func sigLen(shapes [][]int) int {
	n := 1
	for _, s := range shapes {
		n += 3 + len(s)
	}
	return n
}

// matches reports whether shapes, dtypes and alias are the entry's
// signature.
func (d *dispatchEntry) matches(shapes [][]int, dtypes []ops.DType, alias []int) bool {
	if d.n != sigLen(shapes) {
		return false
	}
	if d.big != nil {
		return slices.Equal(d.big, appendSig(nil, shapes, dtypes, alias))
	}
	if d.small[0] != int32(len(shapes)) {
		return false
	}
	k := 1
	for i, s := range shapes {
		if d.small[k] != int32(dtypes[i]) || d.small[k+1] != int32(alias[i]) || d.small[k+2] != int32(len(s)) {
			return false
		}
		k += 3
		for _, x := range s {
			if int(d.small[k]) != x {
				return false
			}
			k++
		}
	}
	return true
}

// appendSig appends the numbers of a signature (dispatchEntry.sig).
func appendSig(buf []int, shapes [][]int, dtypes []ops.DType, alias []int) []int {
	buf = append(buf, len(shapes))
	for i, s := range shapes {
		buf = append(buf, int(dtypes[i]), alias[i], len(s))
		buf = append(buf, s...)
	}
	return buf
}

// remember makes fid the def's dispatch entry for this signature, under
// the record's undo.
func (m *manager) remember(def *defn, fid int, shapes [][]int, dtypes []ops.DType, alias []int) {
	d := dispatchEntry{def: def, fid: fid, epoch: m.compileEpoch, n: sigLen(shapes)}
	// Built on the stack: it is copied into the entry, and only a
	// signature too long for it is kept as it is (a copy).
	var buf [len(d.small)]int
	sig := appendSig(buf[:0], shapes, dtypes, alias)
	fits := d.n <= len(d.small)
	for _, x := range sig {
		if int(int32(x)) != x {
			fits = false
		}
	}
	if fits {
		for k, x := range sig {
			d.small[k] = int32(x)
		}
	} else {
		d.big = slices.Clone(sig)
	}
	// Room for every def made so far at once: the table grows by a def
	// at a time in a program's first calls, and append's growth of a long
	// slice (a quarter) copied the entries four times over (4.3 MB of the
	// 70 a growth of 10,000 nodes allocated). Undone, the table is the
	// slice it was (nil before the first call), as setAt's own undo does.
	if n := m.sh.nDefs; cap(m.dispatch) < n {
		old := m.dispatch
		m.dispatch = slices.Grow(m.dispatch, n-len(m.dispatch))
		m.sh.onUndo(func() { m.dispatch = old })
	}
	setAt(m.sh, &m.dispatch, def.idx, d)
}

// graphKey is one compiled graph of a def: its guard and Compile number.
type graphKey struct {
	guard string
	gen   int
}

// aliasPattern returns, per argument, the index of the first earlier
// argument that views the same storage, or -1.
func aliasPattern(buf []int, args []*Tensor) []int {
	out := slices.Grow(buf[:0], len(args))[:len(args)]
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

func sameSignature(f *Function, shapes [][]int, dtypes []ops.DType, static []bool) bool {
	if len(f.Shapes) != len(shapes) {
		return false
	}
	for i := range shapes {
		if f.Static[i] != static[i] || f.DTypes[i] != dtypes[i] || !slices.Equal(f.Shapes[i], shapes[i]) {
			return false
		}
	}
	return true
}

// sigHash hashes a call's signature (FNV-1a over the guard, the graph and
// every argument's shape, dtype and static flag) without allocating: the
// lookup of a call seen before costs the same among ten FunctionIDs or ten
// thousand. Equal hashes are confirmed with sameSignature.
func sigHash(guard string, gen int, shapes [][]int, dtypes []ops.DType, static []bool) uint64 {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	mix := func(x uint64) { h = (h ^ x) * prime }
	for i := 0; i < len(guard); i++ {
		mix(uint64(guard[i]))
	}
	mix(uint64(gen))
	for i, s := range shapes {
		mix(uint64(len(s)) | uint64(dtypes[i])<<32)
		if static[i] {
			mix(1 << 40)
		}
		for _, d := range s {
			mix(uint64(d))
		}
	}
	return h
}

// bodyKey is a def's body as a closure's guards see it: its params, its
// statements and its returns (not its name).
func bodyKey(def *traces.Record) string {
	b, err := json.Marshal(struct {
		Params, Returns []string
		Body            []traces.Stmt
		Mode            traces.Mode
	}{def.Params, def.Returns, def.Body, def.Mode})
	if err != nil {
		return "def " + def.Fn // cannot happen: the fields are plain data
	}
	return string(b)
}
