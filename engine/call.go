package engine

import (
	"fmt"
	"slices"

	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/traces"
)

// applyCall runs a call record: Dynamo's part first (the arguments as its
// guards see them, then the compiled graph and FunctionID they select),
// then, unless the call never reaches the tree, the device's
// CUDAGraphTreeManager.run.
func (e *Engine) applyCall(rec *traces.Record, step *Step) error {
	// The def's cache slot answers what is checked here without the def
	// itself (defcache.go).
	ref := e.defOf(rec)
	def := ref.d
	if def == nil || len(rec.Args) != int(ref.nParams) || rec.Out != nil && len(rec.Out) != int(ref.nReturns) {
		return badCall(rec, ref)
	}
	dev, stale, err := e.callArgs(rec, ref)
	if err != nil {
		return err
	}
	step.Device = dev
	ds, err := e.dev(dev)
	if err != nil {
		return err
	}
	sc := &e.scratch
	sc.alias = aliasPattern(sc.alias, sc.args)
	f, limited, err := ds.m.function(def, int(ref.idx), rec.Line, sc.shapes, sc.dtypes, sc.static, sc.alias)
	if err != nil {
		return err
	}
	if stale != nil {
		return e.staleCall(rec, f, limited, stale)
	}
	step.Fn = rec.Fn // the def's name
	if limited || f.viewsOnly || f.Dynamic && e.cfg.SkipDynamicGraphs {
		return e.runOutsideTree(rec, step, ds, f, limited)
	}
	return e.runInTree(rec, step, ds.m, def, f)
}

// callArgs reads a call's arguments as Dynamo's guards see them (the
// tensors, their shapes and dtypes, which are static, their device) into
// the engine's scratch: one set of buffers serves every call, so a replay
// allocates none, and what is kept (a new Function, a compiled graph) is
// copied from them. stale is the overwritten error of an argument whose
// storage alone a new generation marked: a data access raises it, Dynamo's
// compile from the metadata does not.
func (e *Engine) callArgs(rec *traces.Record, ref defRef) (dev int, stale, err error) {
	n := len(rec.Args)
	sc := &e.scratch
	sc.args = slices.Grow(sc.args[:0], n)[:n]
	sc.shapes = slices.Grow(sc.shapes[:0], n)[:n]
	sc.static = slices.Grow(sc.static[:0], n)[:n]
	sc.dtypes = slices.Grow(sc.dtypes[:0], n)[:n]
	args, shapes, static, dtypes := sc.args, sc.shapes, sc.static, sc.dtypes
	for i, n := range rec.Args {
		t, s, err := e.tt.lookup(n)
		if err != nil {
			return 0, nil, argErr(i, err)
		}
		if s.Stale {
			if t.Tracked {
				// The object itself was marked: Dynamo fails on it
				// before anything compiles.
				return 0, nil, e.staleErr(s)
			}
			if stale == nil {
				stale = e.staleErr(s)
			}
		}
		if i == 0 {
			dev = s.Dev
		} else if s.Dev != dev {
			return 0, nil, devicesErr(dev, s.Dev)
		}
		args[i], shapes[i], static[i], dtypes[i] = t, t.Shape, s.Param, t.DType
	}
	if ref.hasStatic {
		// The def says which inputs the compiled graph takes as static
		// (a backward's saved tensors are, whatever made them).
		clear(static)
		for _, k := range ref.d.static {
			if k < len(static) {
				static[k] = true
			}
		}
	}
	return dev, stale, nil
}

// badCall is applyCall's error for a call that does not fit its def, out
// of line (as argErr).
func badCall(rec *traces.Record, ref defRef) error {
	if ref.d == nil {
		return fmt.Errorf("function %q is not defined", rec.Fn)
	}
	if len(rec.Args) != int(ref.nParams) {
		return fmt.Errorf("%d arguments for %d parameters", len(rec.Args), ref.nParams)
	}
	return fmt.Errorf("out binds %d names for %d results", len(rec.Out), ref.nReturns)
}

// argErr and devicesErr are callArgs' errors, formatted out of line so
// that the loop every call runs stays short.
func argErr(i int, err error) error { return fmt.Errorf("argument %d: %w", i, err) }

func devicesErr(a, b int) error {
	return fmt.Errorf("arguments on devices %d and %d: skipping cudagraphs due to multiple devices", a, b)
}

// staleCall ends a call with a stale argument (callArgs). Dynamo compiled
// from the tensors' metadata; the first data access at run time raises.
// PyTorch 2.11 keeps the compile (and the generation hook's bump): so does
// HandoffRaise, which replays 2.11's failures as they are. By default the
// record rolls back whole, as every failing record does.
func (e *Engine) staleCall(rec *traces.Record, f *Function, limited bool, stale error) error {
	if e.handoff != HandoffRaise {
		return stale
	}
	if !limited && !f.viewsOnly {
		e.enterCompiled(rec, f)
	}
	return &keptError{err: stale}
}

// runOutsideTree runs a call that never reaches the tree: past Dynamo's
// recompile limit (plain Python), of a function of views only (nothing
// compiled), or of a graph of symbolic shapes under
// cudagraph_skip_dynamic_graphs (compiled, not cudagraphed).
func (e *Engine) runOutsideTree(rec *traces.Record, step *Step, ds *devState, f *Function, limited bool) error {
	args := e.scratch.args
	switch {
	case limited:
		return e.runPlain(rec, step, ds, f, args, f.Name+" (eager)", -1,
			fmt.Sprintf("torch._dynamo hit config.recompile_limit (%d) for %s: no compiled graph accepts these inputs, so the call runs eagerly, without cudagraphs", e.recompileLimitNow(), f.Name))
	case f.viewsOnly:
		return e.runPlain(rec, step, ds, f, args, f.Name, f.ID,
			fmt.Sprintf("%s launches no kernel (its outputs are views of its inputs): nothing is compiled, it runs as plain Python", f.Name))
	}
	// The compiled graph of symbolic shapes runs, but not through
	// cudagraphs: Dynamo's generation hook still fires for the frame.
	e.enterCompiled(rec, f)
	return e.runPlain(rec, step, ds, f, args, f.Name, f.ID,
		"skipping cudagraphs due to graph with symbolic shapes inputs (torch._inductor.config.triton.cudagraph_skip_dynamic_graphs)")
}

// runInTree is the call of a cudagraphified function: Dynamo's generation
// hook, then the device's CUDAGraphTreeManager.run with the arguments held
// (the caller's references while it runs), then the results bound. What
// the tree says of the call (its node, a checkpoint) goes into the Step.
func (e *Engine) runInTree(rec *traces.Record, step *Step, m *manager, def *defn, f *Function) error {
	args := e.scratch.args
	e.enterCompiled(rec, f)
	for _, t := range args {
		e.tt.hold(t)
	}
	// One call value per engine: nothing keeps it past the record, and
	// the replay path then allocates no call.
	e.cur = call{f: f, def: def, args: args, rec: rec, out: noCallOut}
	outs, act, err := m.runFunction(&e.cur)
	out := e.cur.out
	e.cur = call{}
	step.Node, step.Parent, step.Checkpoint = out.node, out.parent, out.checkpoint
	if out.node >= 0 {
		// The functions an expect record names (expect.go).
		step.nodeFn, step.hasParentFn = m.funcs[m.nodes[out.node].Fn].Name, true
		if out.parent >= 0 {
			step.parentFn = m.funcs[m.nodes[out.parent].Fn].Name
		}
	}
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
