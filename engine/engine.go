package engine

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/cgtviz/cgtviz/engine/alloc"
	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/traces"
	"github.com/cgtviz/cgtviz/traces/ops"
)

// debugPanics makes Apply re-raise panics (CGTVIZ_DEBUG_PANIC=1), so that
// a developer sees the stack of an internal error.
var debugPanics = os.Getenv("CGTVIZ_DEBUG_PANIC") == "1"

// Options configure an Engine.
type Options struct {
	// Devices has one device per trace device (the header's "devices").
	Devices []device.Device
	// File is the trace's file name, used in messages.
	File string
	// Check runs the invariant checker after every record; a violation is
	// reported as an error of that record.
	Check bool
	// AllocOptions configure each device's caching allocator.
	AllocOptions alloc.Options
	// Handoff says what a new generation does to a live output of the
	// ending path that the incoming call takes as input (README,
	// "Deviations"): HandoffPreserve (the zero value) moves it out of the
	// pool first, as PyTorch's fix after 2.11 does; HandoffRaise frees it,
	// as PyTorch 2.11 does, and the call raises the overwritten error;
	// HandoffByVersion takes the rule of the PyTorch that recorded the
	// trace (handoff_rule.go), what the command line does by default.
	Handoff Handoff
	// RecompileLimit is Dynamo's recompile_limit: compiled graphs one code
	// object may hold; a call that needs another runs without compiling,
	// as plain Python. 0 means PyTorch's default, 8.
	RecompileLimit int
	// SharedCode compiles every def from one code object, as a program
	// that torch.compiles closures of one factory function does (and as
	// tools/torch-oracle.py does): they share Dynamo's recompile limit
	// and its automatic-dynamic shape history, while their guards keep
	// their graphs apart.
	SharedCode bool
}

// Engine runs trace records against CUDAGraph Trees: one tree manager, one
// caching allocator and one graph pool per device. It is not safe for
// concurrent use; Clone gives an independent copy (which shares the tree's
// nodes copy-on-write: use an engine and its clones from one goroutine).
type Engine struct {
	hdr   traces.Header
	check bool
	devs  []*devState
	defs  map[string]*defn
	// defCache is the call path's cache in front of defs (defcache.go).
	defCache defCache
	// lastInvocation is the invocation of the last call that named one
	// (hasInvocation: some call did).
	lastInvocation int64
	hasInvocation  bool
	steps          int
	// last is the last non-expect step, which expect records look at.
	last *Step
	// saved is the snapshot of the state before the current record, taken
	// lazily before its first heavy mutation (see snapshot.go).
	saved *snapshot
	// spareSaved is the last record's snapshot, emptied, for the next
	// markHeavy to fill (nil in a clone, which makes its own).
	spareSaved *snapshot
	light      lightState
	// stepChunk and eventChunk amortise the allocation of Steps and of
	// their events (see newStep).
	stepChunk  []Step
	eventChunk []Event
	// transient, set by RunStream, hands out reused Steps instead (see
	// transientSteps).
	transient *transientSteps
	// parked is transient's buffers while ReuseSteps has them off, kept
	// for the next time it turns them on.
	parked *transientSteps
	// arena holds the small slices of frequent events (events.go).
	arena eventArena
	// cur is the call runInTree hands the tree (see there).
	cur call
	// failAfter, set by tests only, fails a record that succeeded (under
	// Options.Check, which snapshots every record), so that a test can
	// prove the rollback of any record complete.
	failAfter func(*traces.Record) bool
	// shared is what the devices' tree managers see of the engine: the
	// tensors, the events, the undo log, the config and options, Dynamo's
	// generation (shared.go). Last: first, it moved the Engine's own
	// fields that every record reads away from each other (the replay
	// benchmarks measured it).
	shared
}

// New makes an engine for a trace with header h.
func New(h traces.Header, opts Options) (*Engine, error) {
	n := h.Devices
	if n < 1 {
		n = 1
	}
	if len(opts.Devices) != n {
		return nil, fmt.Errorf("engine: the trace uses %d device(s), %d given", n, len(opts.Devices))
	}
	cfg := h.Config
	if cfg.MaxTensorBytes == 0 && cfg.MaxTotalBytes == 0 && cfg.Set == nil && cfg.WarmupRuns == 0 && cfg.RerecordLimit == 0 {
		cfg = traces.DefaultConfig()
	}
	e := &Engine{hdr: h, check: opts.Check, defs: map[string]*defn{}}
	e.shared = shared{tt: newTensorTable(), cfg: cfg, file: opts.File, handoff: resolveHandoff(opts.Handoff, h),
		recompileLimit: opts.RecompileLimit, sharedCode: opts.SharedCode}
	if e.file == "" {
		e.file = "trace"
	}
	e.tt.onStorageDeath = e.storageDied
	e.snapshot = e.markHeavy
	for i, d := range opts.Devices {
		if d == nil {
			return nil, fmt.Errorf("engine: device %d is nil", i)
		}
		a := alloc.New(d, i, opts.AllocOptions)
		ds := &devState{index: i, dev: d, alloc: a}
		pool, err := newGraphPool(a)
		if err != nil {
			return nil, fmt.Errorf("engine: device %d: %w", i, err)
		}
		ds.m = newManager(&e.shared, ds, pool)
		e.devs = append(e.devs, ds)
	}
	return e, nil
}

// newGraphPool is graph_pool_handle(): a new private pool of a, made known
// to the allocator by an empty allocate-to-pool bracket (as a manager's
// first torch.cuda.graph does), so its state exists before any recording.
func newGraphPool(a *alloc.Allocator) (alloc.PoolID, error) {
	p := a.NewPoolID()
	if err := a.BeginAllocateToPool(p, device.SideStream); err != nil {
		return p, fmt.Errorf("create graph pool: %w", err)
	}
	if err := a.EndAllocateToPool(p); err != nil {
		return p, fmt.Errorf("create graph pool: %w", err)
	}
	return p, nil
}

// Header returns the trace header the engine runs.
func (e *Engine) Header() traces.Header { return e.hdr }

// Steps returns how many records were applied.
func (e *Engine) Steps() int { return e.steps }

// Counters returns the run's totals.
func (e *Engine) Counters() Counters { return e.counters }

// Allocator returns device dev's caching allocator (read-only use: the
// memory snapshot export).
func (e *Engine) Allocator(dev int) *alloc.Allocator {
	if dev < 0 || dev >= len(e.devs) {
		return nil
	}
	return e.devs[dev].alloc
}

// DeviceName returns device dev's name.
func (e *Engine) DeviceName(dev int) string {
	if dev < 0 || dev >= len(e.devs) {
		return ""
	}
	return e.devs[dev].dev.Name()
}

// NumDevices returns the number of devices.
func (e *Engine) NumDevices() int { return len(e.devs) }

// Step is the result of one record.
type Step struct {
	// Index is the 0-based index of the record after the header.
	Index  int
	Line   int
	Op     traces.Op
	Fn     string
	Device int
	// Action is what a call did ("" for other records and failed calls).
	Action Action
	// Node is the graph id a call recorded or replayed, Parent its
	// parent's graph id; -1 when none.
	Node   int
	Parent int
	// Checkpoint is true when the allocator was checkpointed during the call.
	Checkpoint bool
	// Err is the record's error, nil when it ran.
	Err    *Error
	Events []Event
	// ExpectFailures are the failed checks of an expect record.
	ExpectFailures []ExpectFailure
	// Note is a note record's text (the recorder's word on what it could
	// not record, say), "" for other records.
	Note string
	// nodeFn and parentFn are the function names of Node and its parent,
	// for expect records.
	nodeFn, parentFn string
	hasParentFn      bool
}

// ErrText is the record's error message, "" when it ran.
func (s *Step) ErrText() string {
	if s.Err == nil {
		return ""
	}
	return s.Err.Error()
}

// Apply runs one record. It never panics on a record, and when the record
// fails the engine is exactly as it was before it.
func (e *Engine) Apply(rec *traces.Record) (step *Step) {
	step = e.newStep()
	// Cleared, then filled: the composite literal was built aside and
	// copied (two passes over 192 bytes, a twentieth of a replay's
	// instructions).
	*step = Step{}
	step.Index, step.Line, step.Op, step.Fn, step.Node, step.Parent = e.steps, rec.Line, rec.Op, rec.Fn, -1, -1
	e.events = e.events[:0]
	e.dropSaved()
	clear(e.undo)
	e.undo = e.undo[:0]
	e.saveLight()
	defer func() {
		if p := recover(); p != nil {
			if debugPanics {
				panic(p)
			}
			e.rollback()
			step.Err = e.recordError(rec, &internalError{p})
			step.Action, step.Node, step.Parent, step.Checkpoint = ActionNone, -1, -1, false
			e.events = e.events[:0]
		}
		if step.Err != nil {
			e.counters.Errors++
			// The event has the line; its text names the record and the
			// cause, not the location again.
			e.events = append(e.events, Event{Kind: EvError, Line: rec.Line, Device: step.Device, Fn: rec.Fn, Node: -1, Parent: -1, Msg: step.Err.What + ": " + step.Err.Err.Error()})
		}
		step.Events = e.keepEvents(e.events)
		e.steps++
		if rec.Op != traces.OpExpect {
			e.last = step
		}
		e.dropSaved()
	}()
	err := e.apply(rec, step)
	if kept, ok := err.(*keptError); ok {
		// PyTorch 2.11 raised after changing its tree: keep the change
		// (and its events), report the error.
		step.Err = e.recordError(rec, kept.err)
		step.Action, step.Node, step.Parent, step.Checkpoint = ActionNone, -1, -1, false
		if kept.action != "" {
			step.Action = kept.action
		}
		if raised, ok := kept.err.(*raisedError); ok {
			step.Action, step.Node, step.Parent = raised.action, raised.node, raised.parent
			step.nodeFn, step.parentFn, step.hasParentFn = raised.nodeFn, raised.parentFn, true
		}
		err = nil
	}
	if err == nil && e.check {
		if verr := e.CheckInvariants(); verr != nil {
			err = &invariantError{verr}
		}
		if err == nil && e.failAfter != nil && e.failAfter(rec) {
			err = &invariantError{errors.New("failure injected after the record (test)")}
		}
	}
	if err != nil {
		e.rollback()
		step.Err = e.recordError(rec, err)
		step.Action, step.Node, step.Parent, step.Checkpoint = ActionNone, -1, -1, false
		var raised *raisedError
		if errors.As(err, &raised) {
			step.Action, step.Node, step.Parent = raised.action, raised.node, raised.parent
			step.nodeFn, step.parentFn, step.hasParentFn = raised.nodeFn, raised.parentFn, true
		}
		e.events = e.events[:0]
	}
	return step
}

// recordError gives err the record's place and kind.
func (e *Engine) recordError(rec *traces.Record, err error) *Error {
	what := string(rec.Op)
	switch rec.Op {
	case traces.OpCall, traces.OpDef:
		what += " " + rec.Fn
	case traces.OpTensor, traces.OpParam, traces.OpRead, traces.OpSaved:
		what += " " + rec.Name
	case traces.OpEager:
		if rec.Stmt != nil {
			what += " " + rec.Stmt.Out
		}
	}
	return &Error{Kind: kindOf(err), File: e.file, Line: rec.Line, What: what, Err: err}
}

func (e *Engine) apply(rec *traces.Record, step *Step) error {
	// Only while the record runs: a reader may reuse its memory after, so
	// a storage that keeps it copies it (allocStorage).
	e.curSrc = rec.Src
	switch rec.Op {
	case traces.OpDef:
		if _, dup := e.defs[rec.Fn]; dup {
			return fmt.Errorf("function %q is already defined", rec.Fn)
		}
		d := newDefn(rec, e.nDefs)
		e.defs[rec.Fn] = d
		e.nDefs++
		// Undone by name: a copy of every def for each record's
		// rollback cost as much as the program's functions.
		e.onUndo(func() {
			delete(e.defs, d.Fn)
			e.defCache.forget()
			e.nDefs--
		})
		return nil
	case traces.OpTensor, traces.OpParam:
		step.Device = rec.Device
		return e.applyTensor(rec)
	case traces.OpCall:
		return e.applyCall(rec, step)
	case traces.OpEager:
		return e.applyEager(rec, step)
	case traces.OpDel:
		for _, n := range rec.Names {
			if _, ok := e.tt.names[n]; !ok {
				return fmt.Errorf("name %q is not bound", n)
			}
		}
		for _, n := range rec.Names {
			e.noteDeadCached(n)
			if err := e.tt.unbind(n); err != nil {
				return err
			}
		}
		return nil
	case traces.OpSaved:
		return e.applySaved(rec)
	case traces.OpStep:
		// torch.compiler.cudagraph_mark_step_begin()
		e.markStep--
		e.emit(Event{Kind: EvGeneration, Line: rec.Line, Node: -1, Parent: -1, Generation: e.markStep})
		return nil
	case traces.OpRead:
		// The host reads the data: only a freed output fails; what a
		// tensor of an unmodelled dtype holds does not matter here.
		var um *unmodelledError
		var vu *ValuesUnknownError
		if _, err := e.readValues(rec.Name); err != nil && !errors.As(err, &um) && !errors.As(err, &vu) {
			return err
		}
		return nil
	case traces.OpExpect:
		step.ExpectFailures = e.checkExpect(rec.Expect)
		for _, f := range step.ExpectFailures {
			e.emit(Event{Kind: EvExpectFailed, Line: rec.Line, Node: -1, Parent: -1, Msg: f.Msg})
		}
		return nil
	case traces.OpNote:
		step.Note = rec.Text
		return nil
	case traces.OpReset:
		return e.applyReset(rec)
	case traces.OpEmptyCache:
		// torch.cuda.empty_cache(): every device's allocator releases its
		// cached blocks (emptyCache runs release_cached_blocks on each).
		for _, ds := range e.devs {
			if err := e.emptyCache(ds, rec.Line); err != nil {
				return err
			}
		}
		return nil
	case traces.OpSkippedBackward:
		// compile_fx's backward with cudagraphs skipped calls the manager's
		// set_to_running_backward() before running eagerly: the forwards
		// no longer wait for a backward, and nothing else changes.
		ds, err := e.dev(rec.Device)
		if err != nil {
			return err
		}
		step.Device = rec.Device
		ds.m.setToRunningBackward()
		e.emit(Event{Kind: EvSkip, Line: rec.Line, Node: -1, Parent: -1, Device: rec.Device,
			Msg: "a backward ran without CUDA graphs (set_to_running_backward): no backward is pending"})
		return nil
	case traces.OpConfig:
		if rec.Config == nil {
			return fmt.Errorf("config record without settings")
		}
		e.cfg = e.cfg.With(*rec.Config)
		e.emit(Event{Kind: EvConfig, Line: rec.Line, Node: -1, Parent: -1, Msg: "settings in force: " + rec.Config.SetText()})
		return nil
	}
	return fmt.Errorf("unknown op %q", rec.Op)
}

func (e *Engine) dev(i int) (*devState, error) {
	if i < 0 || i >= len(e.devs) {
		return nil, fmt.Errorf("device %d does not exist (the trace has %d)", i, len(e.devs))
	}
	return e.devs[i], nil
}

// applyTensor makes an eager tensor (tensor) or a static one (param) in the
// device's default pool, then binds its name.
func (e *Engine) applyTensor(rec *traces.Record) error {
	ds, err := e.dev(rec.Device)
	if err != nil {
		return err
	}
	n := traces.NumElems(rec.Shape)
	dt, ok := ops.ParseDType(rec.DType)
	if !ok {
		return fmt.Errorf("unknown dtype %q", rec.DType)
	}
	what := string(rec.Op) + " " + rec.Name // no fmt: one per tensor record
	undo := e.saveAlloc(ds)
	ds.alloc.SetContext(rec.Line, what)
	st, err := e.allocStorage(ds, bytesOf(rec.Shape, dt), device.DefaultStream, poolDefault, rec.Line, what)
	if err != nil {
		return err
	}
	st.Param = rec.Op == traces.OpParam
	// Only float32 values are modelled: other dtypes keep the device's
	// memory as it is (check refuses "values" and expected values there).
	if n > 0 && dt.ComputesValues() {
		// On the device when it can (realsize.go).
		if err := e.initTensor(ds.dev, st.Ptr, rec); err != nil {
			e.tt.dropStorage(st.ID)
			e.tt.nextS--
			undo()
			return fmt.Errorf("copy values to the device: %w", err)
		}
	}
	// The record's shape is copied: a reader may reuse its buffer.
	t := e.tt.newTensor(st, slices.Clone(rec.Shape), rec.Line, what)
	t.DType = dt
	if err := e.tt.bind(rec.Name, t); err != nil {
		return err
	}
	return e.tt.release(t)
}

// initValues computes a tensor record's values on the host, into buf's
// memory when it is large enough.
func initValues(rec *traces.Record, buf []float32) ([]float32, error) {
	n := traces.NumElems(rec.Shape)
	v := slices.Grow(buf[:0], int(n))[:n]
	clear(v)
	switch rec.Init {
	case traces.InitRand:
		traces.FillRand(v, rec.Seed)
	case traces.InitZeros, "":
	case traces.InitOnes:
		for i := range v {
			v[i] = 1
		}
	case traces.InitArange:
		for i := range v {
			v[i] = float32(i)
		}
	case traces.InitValues:
		if int64(len(rec.Values)) != n {
			return nil, fmt.Errorf("init values: %d values for %d elements", len(rec.Values), n)
		}
		for i, x := range rec.Values {
			v[i] = float32(x)
		}
	default:
		return nil, fmt.Errorf("unknown init %q", rec.Init)
	}
	return v, nil
}

// readValues returns a named tensor's values (the read op: t.cpu()).
func (e *Engine) readValues(name string) ([]float32, error) {
	t, st, err := e.tt.lookup(name)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return nil, fmt.Errorf("tensor %q has no storage", name)
	}
	if st.Stale {
		return nil, e.staleErr(st)
	}
	if !t.DType.ComputesValues() {
		return nil, &unmodelledError{name, t.DType}
	}
	return e.tensorValues("read", name, t, st)
}

// applyEager runs one statement outside any graph, in the default pool.
func (e *Engine) applyEager(rec *traces.Record, step *Step) error {
	st := rec.Stmt
	if st == nil {
		return fmt.Errorf("eager record without a statement")
	}
	var args []*Tensor
	var params []string
	for _, n := range []string{st.A, st.B.Name} {
		if n == "" {
			continue
		}
		t, s, err := e.tt.lookup(n)
		if err != nil {
			return err
		}
		if s.Stale && (t.Tracked || st.K != "view") {
			// A view touches no data: it fails only on an object that
			// was marked itself (Tensor.Tracked), not on one whose
			// storage alone was.
			return e.staleErr(s)
		}
		args = append(args, t)
		params = append(params, n)
	}
	dev := 0
	if len(args) > 0 {
		dev = e.tt.storages.get(args[0].Storage).Dev
	}
	step.Device = dev
	ds, err := e.dev(dev)
	if err != nil {
		return err
	}
	undo := e.saveAlloc(ds)
	// x = f(x) binds a new tensor to x, as Python does; in a body, an out
	// naming a parameter would write into it in place. So the result gets
	// a name no argument can have (a trace name never holds a quote).
	body := *st
	for body.Out == body.A || body.Out == body.B.Name {
		body.Out += "'"
	}
	def := &traces.Record{Op: traces.OpDef, Fn: "eager", Params: params, Body: []traces.Stmt{body}, Returns: []string{body.Out}}
	shapes := make([][]int, len(args))
	dtypes := make([]ops.DType, len(args))
	for i, t := range args {
		shapes[i], dtypes[i] = t.Shape, t.DType
	}
	p, err := compilePlan(def, shapes, dtypes)
	if err != nil {
		return err
	}
	f := &Function{Name: "eager", Dev: dev, plan: p, viewsOnly: p.viewsOnly, Shapes: shapes, DTypes: dtypes}
	what := "eager " + stmtText(*st)
	ds.alloc.SetContext(rec.Line, what)
	outs, err := e.runEagerBody(ds, f, args, rec.Line, what)
	if err != nil {
		undo()
		return err
	}
	if err := e.tt.bind(st.Out, outs[0]); err != nil {
		return err
	}
	return e.tt.release(outs[0])
}

// storageDied is called when a storage's last live tensor dies: an owned
// block goes back to the allocator, as a tensor's deleter does.
func (e *Engine) storageDied(s *Storage) error {
	e.emit(Event{Kind: EvTensorDied, Device: s.Dev, Node: -1, Parent: -1, Ptrs: e.arena.ptr(uint64(s.Ptr)), Tensors: e.arena.str(s.What)})
	if !s.Owned || s.Stale || s.Ptr == 0 {
		return nil
	}
	e.tt.keepS(s)
	s.Owned = false
	return e.devs[s.Dev].alloc.Free(s.Ptr)
}

// valuesClose compares values with a tolerance (absolute, or relative for
// large values), treating NaN as equal to NaN.
func valuesClose(got []float32, want []float64, tol float64) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		g, w := float64(got[i]), want[i]
		if math.IsNaN(g) || math.IsNaN(w) {
			// NaN is close to NaN only: a NaN is never within any
			// tolerance of a number (math.Abs(NaN-w) > tol is false).
			if math.IsNaN(g) && math.IsNaN(w) {
				continue
			}
			return false
		}
		if math.IsInf(w, 0) && g == w {
			continue
		}
		if math.Abs(g-w) > tol*math.Max(1, math.Abs(w)) {
			return false
		}
	}
	return true
}

func formatValues(v []float32) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, x := range v {
		if i > 0 {
			b.WriteString(", ")
		}
		if i == 16 {
			fmt.Fprintf(&b, "... (%d values)", len(v))
			break
		}
		fmt.Fprintf(&b, "%g", x)
	}
	b.WriteByte(']')
	return b.String()
}

// newStep hands out Steps from chunks: a run makes one per record, and a
// chunk allocation amortises them (callers may keep any Step).
func (e *Engine) newStep() *Step {
	if e.transient != nil {
		return e.transient.next(e.last)
	}
	if len(e.stepChunk) == 0 {
		e.stepChunk = make([]Step, 256)
	}
	s := &e.stepChunk[0]
	e.stepChunk = e.stepChunk[1:]
	return s
}

// keepEvents copies evs into append-only chunks, so that a Step's events
// need no allocation of their own; a chunk is never written again once
// handed out.
func (e *Engine) keepEvents(evs []Event) []Event {
	if len(evs) == 0 {
		return nil
	}
	if e.transient != nil {
		kept, spare := e.transient.keep(evs)
		e.events = spare
		return kept
	}
	if len(evs) > cap(e.eventChunk)-len(e.eventChunk) {
		n := 1024
		if len(evs) > n {
			n = len(evs)
		}
		e.eventChunk = make([]Event, 0, n)
	}
	start := len(e.eventChunk)
	e.eventChunk = append(e.eventChunk, evs...)
	return e.eventChunk[start:len(e.eventChunk):len(e.eventChunk)]
}
