package engine

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/traces"
	"github.com/cgtviz/cgtviz/traces/ops"
)

// This file is what every device's tree manager sees of the engine: the
// tensor table, the record's events and undo log, the config and options
// in force, Dynamo's generation counter and the run's counters. The Engine
// holds one (embedded: its own code reads the fields as its own) and fills
// it; a manager holds a pointer to it and nothing else of the Engine. So
// the tree (manager.go, record.go, execute.go, checkpoint.go, dealloc.go,
// ...) is a layer below the Engine's façade, which TestEngineLayers keeps
// (docs/architecture.md draws the layers).

// shared is what the devices share.
type shared struct {
	// curSrc is the user's source line of the record being applied
	// (traces.Record.Src, valid while it runs), nil when it has none: the
	// storages it makes keep a copy for PyTorch's error texts.
	curSrc *traces.Source
	tt     *tensorTable
	cfg    traces.Config
	// file names the trace in messages; handoff, recompileLimit and
	// sharedCode are Options.Handoff, Options.RecompileLimit and
	// Options.SharedCode.
	file           string
	handoff        Handoff
	recompileLimit int
	sharedCode     bool
	// nDefs numbers the defs in the order they were made (defn.idx): a
	// manager sizes its dispatch table for all of them at once. The defs
	// are the Engine's; a call carries its own (call.def).
	nDefs int
	// genTracker is Dynamo's GenerationTracker.generation: bumped by every
	// top-level call of a compiled function (not by backward calls).
	genTracker int
	// markStep is MarkStepBox.mark_step_counter: 0, then -1, -2, ... at
	// each step record.
	markStep int
	counters Counters
	// events collects the current record's events.
	events []Event
	// undo puts back, newest first, what the current record changed in
	// the managers: their trees, functions, Dynamo caches and hints.
	undo []func()
	// snapshot takes the record's snapshot once, before its first change
	// beyond the light fields (Engine.markHeavy, snapshot.go); snapshotted
	// says it did, and kept are then the nodes whose copy undo holds
	// (keepNode).
	snapshot    func()
	snapshotted bool
	kept        map[*Node]bool
	// scratch holds the buffers of the call being run (callScratch).
	scratch callScratch
	// checkDispatch, set by tests only, is called at every call that a
	// dispatch entry answered (manager.function), with the FunctionID it
	// gave, so that a test can check it against the full lookup.
	checkDispatch func(m *manager, def *defn, fid int, shapes [][]int, dtypes []ops.DType, static []bool, alias []int)
}

// callScratch holds a call's signature while it is looked up.
type callScratch struct {
	args   []*Tensor
	shapes [][]int
	static []bool
	dtypes []ops.DType
	alias  []int
	// outs are a replay's outputs (reconstructOutputs): bound and
	// released by runInTree, kept by nothing after the record.
	outs []*Tensor
	// path is the path of the node being checked or replayed (pathOf).
	path []*Node
	// vals are a tensor record's values on their way to the device.
	vals []float32
	// launch is runBody's, written anew for each statement: a device
	// reads it during Launch and keeps no pointer to it (the sim copies
	// a captured launch), so a body's launches allocate nothing.
	launch device.Launch
	// geom is launch's geometry when an operand is a strided view
	// (strided.go): the device copies what it keeps, so it is reused too.
	geom ops.Geometry
}

// emit adds an event of the current record.
func (sh *shared) emit(ev Event) { sh.events = append(sh.events, ev) }

// onUndo logs how to put back a change the record makes to a manager.
func (sh *shared) onUndo(f func()) { sh.undo = append(sh.undo, f) }

// setAt sets (*s)[i] = v under the record's undo, growing *s to hold i
// (the tables kept by dense id: roots, hints, dispatch entries). Undone,
// the slot has its old value again, or *s is the slice it was, with what
// it grew by cleared so that a later growth over the same array finds
// zeros.
func setAt[T any](sh *shared, s *[]T, i int, v T) {
	prev := *s
	if i >= len(prev) {
		*s = slices.Grow(prev, i+1-len(prev))[:i+1]
	}
	old := (*s)[i]
	sh.onUndo(func() {
		if i >= len(prev) {
			clear((*s)[len(prev):])
			*s = prev
			return
		}
		(*s)[i] = old
	})
	(*s)[i] = v
}

// setKey sets m[k] = v under the record's undo: undone, k has its old
// value again, or is absent again.
func setKey[K comparable, V any](sh *shared, m map[K]V, k K, v V) {
	old, had := m[k]
	sh.onUndo(func() {
		if had {
			m[k] = old
		} else {
			delete(m, k)
		}
	})
	m[k] = v
}

// currGeneration is CUDAGraphTreeManager.get_curr_generation: the mark
// step counter once a step record set it, else Dynamo's generation.
func (sh *shared) currGeneration() int {
	if sh.markStep != 0 {
		return sh.markStep
	}
	return sh.genTracker
}

// warmed reports whether f has run its warmups (warmed_up_functions).
func (sh *shared) warmed(f *Function) bool { return f.Warmups >= sh.cfg.WarmupRuns }

// DefaultRecompileLimit is torch._dynamo.config.recompile_limit.
const DefaultRecompileLimit = 8

// recompileLimitNow is Dynamo's recompile_limit in force: Options'
// when given, else the trace's config.
func (sh *shared) recompileLimitNow() int {
	switch {
	case sh.recompileLimit > 0:
		return sh.recompileLimit
	case sh.cfg.Set[traces.KeyRecompileLimit] || sh.cfg.RecompileLimit > 0:
		return sh.cfg.RecompileLimit
	}
	return DefaultRecompileLimit
}

// Handoff is the engine's rule for a live output handed to the next
// compiled call across a generation boundary.
type Handoff uint8

const (
	// HandoffPreserve keeps the handed-off output (PyTorch PR #184102).
	HandoffPreserve Handoff = iota
	// HandoffRaise is PyTorch 2.11: the output is freed with the rest of
	// the path, the call raises, and the tree is left as 2.11 leaves it.
	HandoffRaise
	// HandoffByVersion follows the rule of the PyTorch that recorded the
	// trace (handoff_rule.go); New resolves it, so the tree never sees it.
	HandoffByVersion
)

// String names the rule as the command line spells it.
func (h Handoff) String() string {
	switch h {
	case HandoffRaise:
		return "raise"
	case HandoffByVersion:
		return "version"
	}
	return "preserve"
}

// ParseHandoff reads "preserve", "raise" or "version".
func ParseHandoff(s string) (Handoff, error) {
	switch s {
	case "preserve", "":
		return HandoffPreserve, nil
	case "raise":
		return HandoffRaise, nil
	case "version":
		return HandoffByVersion, nil
	}
	return 0, fmt.Errorf("unknown handoff rule %q (want preserve, raise or version)", s)
}

// staleErr is PyTorch's error for any data access to a deallocated output:
// its stack trace is where the storage was made.
func (sh *shared) staleErr(s *Storage) error {
	// PyTorch's stack trace is the user's frame that made the tensor:
	// the record's src when the trace has it, with the trace's line after
	// it; else the trace's line alone.
	stack := sh.file + ":" + strconv.Itoa(s.Line) + ", in " + s.What
	if s.Src != nil {
		stack = fmt.Sprintf("File %q, line %d", traces.Printable(s.Src.File), s.Src.Line)
		if s.Src.Fn != "" {
			stack += ", in " + traces.Printable(s.Src.Fn)
		}
		stack += " (" + sh.file + ":" + strconv.Itoa(s.Line) + ", " + s.What + ")"
	}
	msg := overwrittenMsg(stack)
	if s.StaleLine > 0 {
		// Which call overwrote it, which PyTorch does not say (issue 34
		// item 8): the call whose new generation freed it.
		msg += fmt.Sprintf(" [cgtviz: it was freed at line %d, when the call of %s there began a new generation", s.StaleLine, s.StaleFn)
		if s.StaleGrad {
			// The autograd engine adding a backward's gradient to the
			// .grad an earlier one handed out (pytorch#169545): the
			// user's fix is where the mark_step goes, not a clone.
			msg += "; it is a gradient a backward handed out, which the autograd engine keeps as .grad and adds the next backward's to: with gradient accumulation, call cudagraph_mark_step_begin() once an optimizer step, before its micro-batches, not before each"
		}
		msg += "]"
	}
	return &OverwrittenError{msg}
}

// raiseStaleArg is staleArg under HandoffRaise, and nil otherwise: only
// 2.11's rule frees a call's input as its generation starts (the default
// rule moves it out of the pool first), and the replay path need not look.
func (sh *shared) raiseStaleArg(args []*Tensor) error {
	if sh.handoff != HandoffRaise {
		return nil
	}
	return sh.staleArg(args)
}

// staleArg returns the overwritten error of the first argument whose
// storage a new generation has just freed, or nil.
func (sh *shared) staleArg(args []*Tensor) error {
	for _, t := range args {
		if s := sh.tt.storages.get(t.Storage); s != nil && s.Stale {
			return sh.staleErr(s)
		}
	}
	return nil
}
