package engine

import (
	"fmt"
	"slices"

	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/traces"
	"github.com/cgtviz/cgtviz/traces/ops"
)

// call is one call record on its way through a device's tree manager: what
// PyTorch's CUDAGraphTreeManager._run receives (the function and its
// inputs), plus the record it came from, for messages and events, and the
// Step it fills in.
type call struct {
	f    *Function
	args []*Tensor
	rec  *traces.Record
	step *Step
}

// line is the trace line of the call.
func (c *call) line() int { return c.rec.Line }

// emit adds an event of the current record.
func (m *manager) emit(ev Event) { m.eng.emit(ev) }

// applyCall runs a call record through the device's tree manager.
func (e *Engine) applyCall(rec *traces.Record, step *Step) error {
	// The def's cache slot answers what is checked here without the def
	// itself (defcache.go).
	ref := e.defOf(rec)
	def := ref.d
	if def == nil {
		return fmt.Errorf("function %q is not defined", rec.Fn)
	}
	if len(rec.Args) != int(ref.nParams) {
		return fmt.Errorf("%d arguments for %d parameters", len(rec.Args), ref.nParams)
	}
	if rec.Out != nil && len(rec.Out) != int(ref.nReturns) {
		return fmt.Errorf("out binds %d names for %d results", len(rec.Out), ref.nReturns)
	}
	// The call's signature is read, or copied where it is kept (a new
	// Function, a compiled graph): one set of buffers serves every call,
	// so a replay allocates none.
	n := len(rec.Args)
	sc := &e.scratch
	sc.args = slices.Grow(sc.args[:0], n)[:n]
	sc.shapes = slices.Grow(sc.shapes[:0], n)[:n]
	sc.static = slices.Grow(sc.static[:0], n)[:n]
	sc.dtypes = slices.Grow(sc.dtypes[:0], n)[:n]
	args, shapes, static, dtypes := sc.args, sc.shapes, sc.static, sc.dtypes
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
				return e.staleErr(s)
			}
			if stale == nil {
				stale = e.staleErr(s)
			}
		}
		if i == 0 {
			dev = s.Dev
		} else if s.Dev != dev {
			return fmt.Errorf("arguments on devices %d and %d: skipping cudagraphs due to multiple devices", dev, s.Dev)
		}
		args[i], shapes[i], static[i], dtypes[i] = t, t.Shape, s.Param, t.DType
	}
	if ref.hasStatic {
		// The def says which inputs the compiled graph takes as static
		// (a backward's saved tensors are, whatever made them).
		clear(static)
		for _, k := range def.static {
			if k < len(static) {
				static[k] = true
			}
		}
	}
	step.Device = dev
	ds, err := e.dev(dev)
	if err != nil {
		return err
	}
	m := ds.m
	sc.alias = aliasPattern(sc.alias, args)
	f, limited, err := m.function(def, int(ref.idx), rec.Line, shapes, dtypes, static, sc.alias)
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
		if !limited && !f.viewsOnly {
			e.enterCompiled(rec, f)
		}
		return &keptError{err: stale}
	}
	step.Fn = rec.Fn // the def's name
	switch {
	case limited:
		return e.runPlain(rec, step, ds, f, args, f.Name+" (eager)", -1,
			fmt.Sprintf("torch._dynamo hit config.recompile_limit (%d) for %s: no compiled graph accepts these inputs, so the call runs eagerly, without cudagraphs", e.recompileLimitNow(), f.Name))
	case f.viewsOnly:
		return e.runPlain(rec, step, ds, f, args, f.Name, f.ID,
			fmt.Sprintf("%s launches no kernel (its outputs are views of its inputs): nothing is compiled, it runs as plain Python", f.Name))
	case f.Dynamic && e.cfg.SkipDynamicGraphs:
		// The compiled graph runs, but not through cudagraphs: Dynamo's
		// generation hook still fires for the frame.
		e.enterCompiled(rec, f)
		return e.runPlain(rec, step, ds, f, args, f.Name, f.ID,
			"skipping cudagraphs due to graph with symbolic shapes inputs (torch._inductor.config.triton.cudagraph_skip_dynamic_graphs)")
	}
	mode := f.Mode
	e.enterCompiled(rec, f)
	for _, t := range args {
		e.tt.hold(t)
	}
	// One call value per engine: nothing keeps it past the record, and
	// the replay path then allocates no call.
	e.cur = call{f: f, args: args, rec: rec, step: step}
	outs, act, err := m.run(&e.cur)
	e.cur = call{}
	for _, t := range args {
		e.tt.release(t)
	}
	if err != nil {
		return err
	}
	step.Action = act
	if act == ActionWarmup || act == ActionRecord {
		for _, t := range outs {
			e.tt.keepT(t)
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

// enterCompiled is Dynamo's hook on entering a top-level compiled frame:
// GenerationTracker.generation moves on, once per invocation. A backward
// runs inside autograd, not through a frame, and moves nothing. A call that
// names its invocation (a graph after a graph break, in the frame that
// compiled the graph before it) moves the counter only when the invocation
// differs from the last call's; without one, every call is an invocation.
func (e *Engine) enterCompiled(rec *traces.Record, f *Function) {
	if f.Mode == traces.ModeBackward {
		return
	}
	if inv := rec.Invocation; inv != nil {
		if e.hasInvocation && *inv == e.lastInvocation {
			return
		}
		e.lastInvocation, e.hasInvocation = *inv, true
	}
	e.genTracker++
}

// recompileLimitNow is Dynamo's recompile_limit in force: Options'
// when given, else the trace's config.
func (e *Engine) recompileLimitNow() int {
	switch {
	case e.recompileLimit > 0:
		return e.recompileLimit
	case e.cfg.Set[traces.KeyRecompileLimit] || e.cfg.RecompileLimit > 0:
		return e.cfg.RecompileLimit
	}
	return DefaultRecompileLimit
}

// callScratch holds a call's signature while it is looked up.
type callScratch struct {
	args   []*Tensor
	shapes [][]int
	static []bool
	dtypes []ops.DType
	alias  []int
	// outs are a replay's outputs (reconstructOutputs): bound and
	// released by applyCall, kept by nothing after the record.
	outs []*Tensor
	// path is the path of the node being checked or replayed (pathOf).
	path []*Node
	// vals are a tensor record's values on their way to the device.
	vals []float32
	// launch is runBody's, written anew for each statement: a device
	// reads it during Launch and keeps no pointer to it (the sim copies
	// a captured launch), so a body's launches allocate nothing.
	launch device.Launch
}

// pathOf is m.path(n) in the engine's buffer: valid until the next call,
// for the replay path, which looks at the path of each candidate once.
func (e *Engine) pathOf(m *manager, n *Node) []*Node {
	p := slices.Grow(e.scratch.path[:0], n.Depth+1)[:n.Depth+1]
	for x := n; x != nil; x = m.nodesOrNil(x.Parent) {
		p[x.Depth] = x
	}
	e.scratch.path = p
	return p
}
