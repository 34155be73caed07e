package sessions

import (
	"errors"
	"fmt"
	"sort"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/engine/device/sim"
	"github.com/cgtviz/cgtviz/traces"
)

// Defaults of Options.
const (
	// DefaultMaxKeyframes bounds the keyframes a session keeps. With the
	// spacing doubled whenever it is exceeded, a trace of N records keeps
	// between DefaultMaxKeyframes/2 and DefaultMaxKeyframes of them, spaced
	// about N/DefaultMaxKeyframes records apart.
	DefaultMaxKeyframes = 1000
	// DefaultKeyframeEvery is the initial spacing of keyframes: small traces
	// go back by restoring a clone at most this many records behind.
	DefaultKeyframeEvery = 16
	// DefaultKeyframeBytes bounds the memory of the keyframes (and the
	// local keyframes) as keyframeCost counts it: the device's snapshot
	// (device memory on the GPU, its upper bound on sim) and the host copy
	// of the tree. 128 MiB is a small share of a GPU's memory and of a
	// workstation's, and keeps the TUI within issue 14's 500 MB at 10,000
	// nodes, where the collector lets the heap grow to twice what is live
	// (15 keyframes every 8,192 records of BenchmarkMovesTree10k's trace,
	// 111 MB of heap; 256 MiB let 30 of them hold 165 MB).
	DefaultKeyframeBytes = 128 << 20
	// stepCache is how many full Steps StepAt keeps; older ones are
	// recomputed from a keyframe on demand.
	stepCache = 512
)

// ErrAtStart is returned by Back at position 0.
var ErrAtStart = errors.New("at the start of the trace")

// Options configure a Session.
type Options struct {
	// NewDevices returns n fresh devices, one per trace device. Default:
	// simulated devices (sim.New). A session calls it once, and again each
	// time it must re-run from the start (devices that cannot be cloned).
	NewDevices func(n int) ([]device.Device, error)
	// Check runs the engine's invariant checker after every record.
	Check bool
	// Source is where the trace came from: a file path, or DemoSource for
	// the embedded demo. Save writes it so that Load can reopen the trace.
	Source string
	// MaxKeyframes bounds the keyframes kept (default DefaultMaxKeyframes).
	MaxKeyframes int
	// KeyframeEvery is the initial keyframe spacing (default DefaultKeyframeEvery).
	KeyframeEvery int
	// KeyframeBytes bounds the bytes of the keyframes (default
	// DefaultKeyframeBytes; negative: no byte cap). Past it the spacing
	// doubles, as past MaxKeyframes.
	KeyframeBytes int64
	// Handoff is the engine's rule for an output handed to the next call
	// across a generation (engine.Options.Handoff); Save keeps it.
	Handoff engine.Handoff
	// OnGrow, when set, is called with the number of nodes the tree has
	// recorded whenever it has grown by an eighth (and at least 64) since
	// the last call, when the session runs a record for the first time:
	// what a caller bounding the process's memory needs to know (the
	// TUI's soft memory limit), without asking after every record.
	OnGrow func(nodes int)
	// Fingerprint is the size and hash of the trace as it was read
	// (OpenTraceFingerprint gives it); Save keeps it so that Load can tell
	// a trace that changed since. Zero: Save takes it from Source then.
	Fingerprint Fingerprint
}

// SimDevices returns n simulated devices; it is the default NewDevices.
func SimDevices(n int) ([]device.Device, error) {
	return sim.Devices(n), nil
}

// Session is a trace, a live engine at a position in it, and the history of
// what every executed record did. Methods must be called from one goroutine
// at a time.
type Session struct {
	src Records
	// closeSrc closes what the session opened to read src (Load's
	// index); nil when the caller owns src.
	closeSrc func() error
	opts     Options
	file     string

	eng  *engine.Engine
	devs []device.Device // the devices New made for eng, closed on a re-run
	pos  int             // records applied to eng

	// hist has one entry per executed record: hist.len() is the frontier,
	// the furthest position ever reached.
	hist    history
	ckpts   []int // indexes of executed records that checkpointed, ascending
	errs    map[int]*engine.Error
	expects map[int][]engine.ExpectFailure
	// overwrites are the records checked for a silent cached-object
	// overwrite (overwrite.go), by index.
	overwrites map[int]bool
	// watch is told the progress of long moves (watch.go).
	watch MoveWatcher
	// ahead reads the records of a long move ahead (readahead.go).
	ahead *readAhead

	// cloneable is false when the engine's devices cannot be snapshotted
	// (a device without Cloner): going back then re-runs from the start on fresh devices.
	cloneable bool
	kf        keyframes
	local     localFrames

	steps     map[int]*engine.Step // bounded cache of full results
	stepOrder []int                // insertion order of steps, for eviction

	state    *engine.State // cached State at statePos
	statePos int

	bps   []Breakpoint
	marks []Bookmark

	readErr error // the last failure to read a record

	grown int // the nodes last told to Options.OnGrow
}

// New starts a session at position 0 of tr.
func New(tr *traces.Trace, opts Options) (*Session, error) {
	if tr == nil {
		return nil, errors.New("new session: nil trace")
	}
	return NewRecords(InMemory(tr), opts)
}

// NewRecords starts a session at position 0 of a trace's records, in
// memory or read on demand (Indexed).
func NewRecords(src Records, opts Options) (*Session, error) {
	if src == nil {
		return nil, errors.New("new session: nil records")
	}
	if opts.NewDevices == nil {
		opts.NewDevices = SimDevices
	}
	if opts.MaxKeyframes < 2 {
		opts.MaxKeyframes = DefaultMaxKeyframes
	}
	if opts.KeyframeEvery < 1 {
		opts.KeyframeEvery = DefaultKeyframeEvery
	}
	if opts.KeyframeBytes == 0 {
		opts.KeyframeBytes = DefaultKeyframeBytes
	}
	s := &Session{
		src:     src,
		opts:    opts,
		file:    opts.Source,
		errs:    map[int]*engine.Error{},
		expects: map[int][]engine.ExpectFailure{},
		steps:   map[int]*engine.Step{},
		kf:      keyframes{every: opts.KeyframeEvery, max: opts.MaxKeyframes, budget: opts.KeyframeBytes},
	}
	if s.file == "" {
		s.file = src.File()
	}
	if err := s.fresh(); err != nil {
		return nil, err
	}
	cost := keyframeCost(s.eng, 0)
	if c, err := s.eng.Clone(); err == nil {
		s.cloneable = true
		s.kf.add(keyframe{pos: 0, eng: c, bytes: cost, calls: callsRun(s.eng)})
	}
	return s, nil
}

// fresh replaces the engine by a new one at position 0 on new devices.
func (s *Session) fresh() error {
	n := s.src.Header().Devices
	if n < 1 {
		n = 1
	}
	devs, err := s.opts.NewDevices(n)
	if err != nil {
		return fmt.Errorf("session %s: devices: %w", s.file, err)
	}
	eng, err := engine.New(s.src.Header(), engine.Options{Devices: devs, File: s.file, Check: s.opts.Check, Handoff: s.opts.Handoff})
	if err != nil {
		closeAll(devs)
		return fmt.Errorf("session %s: %w", s.file, err)
	}
	closeAll(s.devs)
	s.eng, s.devs, s.pos = eng, devs, 0
	return nil
}

func closeAll(devs []device.Device) {
	for _, d := range devs {
		if d != nil {
			_ = d.Close() // a device that fails to close has nothing left to give
		}
	}
}

// Close releases the devices of a session that could not clone its engine
// (the GPU). Sessions on simulated devices hold only memory.
func (s *Session) Close() error {
	var errs []error
	for _, d := range s.devs {
		if d != nil {
			errs = append(errs, d.Close())
		}
	}
	s.devs = nil
	if s.closeSrc != nil {
		errs = append(errs, s.closeSrc())
		s.closeSrc = nil
	}
	return errors.Join(errs...)
}

// Records returns the session's records: what the trace pane shows.
func (s *Session) Records() Records { return s.src }

// Header returns the trace's header.
func (s *Session) Header() traces.Header { return s.src.Header() }

// Handoff returns the engine's handoff rule: Options.Handoff, with
// engine.HandoffByVersion resolved from the trace's header.
func (s *Session) Handoff() engine.Handoff {
	if s.opts.Handoff == engine.HandoffByVersion {
		rule, _ := engine.HandoffFor(s.src.Header())
		return rule
	}
	return s.opts.Handoff
}

// Source returns where the trace came from (Options.Source).
func (s *Session) Source() string { return s.opts.Source }

// Pos returns the number of records applied: the position in the trace.
func (s *Session) Pos() int { return s.pos }

// Len returns the number of records that may run: all of a trace in
// memory; of one read on demand, those checked so far (it grows while the
// trace is checked in the background or followed).
func (s *Session) Len() int { return s.src.Len() }

// Executed returns the furthest position ever reached: records before it
// have a Summary.
func (s *Session) Executed() int { return s.hist.len() }

// Cloneable reports whether going back restores keyframes (true) or
// re-runs the trace from the start on fresh devices (false: devices that
// cannot be cloned).
func (s *Session) Cloneable() bool { return s.cloneable }

// SnapshotBytes is the device memory one more keyframe would cost now
// (engine.Engine.SnapshotBytes).
func (s *Session) SnapshotBytes() int64 { return s.eng.SnapshotBytes() }

// State returns the engine's state at the current position (computed once
// per position).
func (s *Session) State() *engine.State {
	if s.state == nil || s.statePos != s.pos {
		s.state = s.eng.State()
		s.statePos = s.pos
	}
	return s.state
}

// Step applies the next record to the live engine. It returns false at the
// end of the trace, and when the record cannot be read (Err says why).
func (s *Session) Step() (*engine.Step, bool) {
	if s.pos >= s.src.Len() {
		return nil, false
	}
	st, err := s.apply()
	if err != nil {
		return nil, false
	}
	return st, true
}

// Err returns why the last record read failed (a trace read on demand
// whose file changed or vanished), nil when none did.
func (s *Session) Err() error { return s.readErr }

// record reads record i; a failure is kept for Err.
func (s *Session) record(i int) (*traces.Record, error) {
	rec, err, ok := s.fromAhead(i)
	if !ok {
		rec, err = s.src.Record(i)
	}
	if err != nil {
		s.readErr = fmt.Errorf("session %s: %w", s.file, err)
		return nil, s.readErr
	}
	return rec, nil
}

// apply runs record s.pos and extends the history when it is new.
func (s *Session) apply() (*engine.Step, error) {
	st, _, err := s.run(true)
	return st, err
}

// run runs record s.pos and extends the history when it is new. keep says
// whether the record's full Step is wanted (StepAt's cache keeps it);
// without, the engine reuses its Step's buffers, as `cgtviz run`'s does,
// and the Step returned is valid only until the next record runs: a long
// move runs most of its records so, as only its last stepCache Steps
// would stay in the cache. The record is returned too, valid until the
// next record runs.
func (s *Session) run(keep bool) (*engine.Step, *traces.Record, error) {
	i := s.pos
	rec, err := s.record(i)
	if err != nil {
		return nil, nil, err
	}
	s.eng.ReuseSteps(!keep)
	st := s.eng.Apply(rec)
	s.pos++
	if i == s.hist.len() {
		e := newEntry(st)
		s.hist.push(e)
		if e.flags&flagCheckpoint != 0 {
			s.ckpts = append(s.ckpts, i)
		}
		if st.Err != nil {
			s.errs[i] = st.Err
		}
		if len(st.ExpectFailures) > 0 {
			s.expects[i] = st.ExpectFailures
		}
		if s.opts.OnGrow != nil {
			if n := s.eng.Counters().Recordings; n >= s.grown+max(s.grown/8, 64) {
				s.grown = n
				s.opts.OnGrow(n)
			}
		}
		if s.cloneable && s.kf.due(s.pos) {
			// A failed clone costs only a longer way back.
			n, prev := callsRun(s.eng), 0
			if last, ok := s.kf.at(s.pos); ok {
				prev = last.calls
			}
			cost := keyframeCost(s.eng, n-prev)
			if c, err := s.eng.Clone(); err == nil {
				s.kf.add(keyframe{pos: s.pos, eng: c, bytes: cost, calls: n})
			}
		}
	}
	if keep {
		s.cacheStep(i, st)
	}
	return st, rec, nil
}

func (s *Session) cacheStep(i int, st *engine.Step) {
	if _, ok := s.steps[i]; ok {
		s.steps[i] = st
		return
	}
	if len(s.stepOrder) >= stepCache {
		delete(s.steps, s.stepOrder[0])
		s.stepOrder = s.stepOrder[1:]
	}
	s.steps[i] = st
	s.stepOrder = append(s.stepOrder, i)
}

// Back moves one record back. It returns ErrAtStart at position 0.
func (s *Session) Back() error {
	if s.pos == 0 {
		return ErrAtStart
	}
	return s.Goto(s.pos - 1)
}

// Goto moves to position target (0 ≤ target ≤ Len). Going forward applies
// records (live beyond the frontier); going back restores the nearest
// keyframe at or before target and re-applies the records after it, or,
// when the engine cannot be cloned, re-runs from the start on fresh devices.
func (s *Session) Goto(target int) error {
	if n := s.src.Len(); target < 0 || target > n {
		return fmt.Errorf("go to step %d: out of range 0..%d", target, n)
	}
	if target == s.pos {
		return nil
	}
	// Local keyframes serve holding N down: they are made on the way back
	// one record, not on a jump, where each would be a whole clone of the
	// tree (~30 ms at 10,000 nodes) made on speculation.
	back := target == s.pos-1
	if s.cloneable {
		kf, ok := s.kf.at(target)
		if ok && s.local.base != kf.pos {
			// A move to another interval leaves the local keyframes of
			// the last one useless (they serve N there); at 10,000 nodes
			// each holds megabytes.
			s.local.drop(kf.pos)
		}
		if lf, lok := s.local.at(target); lok && lf.pos >= kf.pos && lf.pos <= target {
			kf, ok = lf, true
		}
		if ok && (target < s.pos || kf.pos > s.pos) {
			eng, err := kf.eng.Clone()
			if err != nil {
				return fmt.Errorf("go to step %d: restore keyframe %d: %w", target, kf.pos, err)
			}
			s.eng, s.pos = eng, kf.pos
		}
	}
	if target < s.pos {
		if err := s.fresh(); err != nil {
			return fmt.Errorf("go to step %d: re-run: %w", target, err)
		}
	}
	from := s.pos
	defer s.startAhead(s.pos, target)()
	if target > s.hist.len() && s.cloneable {
		s.kf.reach(target)
	}
	// Only the last stepCache Steps of the move would stay in the cache.
	keepFrom := target - stepCache
	for s.pos < target {
		if err := s.watched(s.pos-from, target-from); err != nil {
			return err
		}
		if _, _, err := s.run(s.pos >= keepFrom); err != nil {
			return fmt.Errorf("go to step %d: %w", target, err)
		}
		if back {
			s.takeLocal(target)
		}
	}
	return nil
}

// takeLocal takes a local keyframe at the current position, on the way
// back to target, when it divides the current keyframe interval, is one of
// the localKeep such positions at or below target, and none is there yet.
// Moving to another interval drops the local keyframes of the last one.
func (s *Session) takeLocal(target int) {
	if !s.cloneable || s.pos >= s.hist.len() {
		return
	}
	kf, ok := s.kf.at(s.pos)
	if !ok {
		return
	}
	if s.local.base != kf.pos {
		s.local.drop(kf.pos)
	}
	every := max(s.kf.every/localPerInterval, 1)
	if s.pos == kf.pos || s.pos%every != 0 || s.local.has(s.pos) {
		return
	}
	// Only the frames just below target serve the next presses of N; one
	// lower down would be a clone made on speculation, and N reaches it
	// only after localKeep*every more presses, when one restore of the
	// keyframe (a jump's cost) makes the next ones.
	if s.pos <= target-localKeep*every {
		return
	}
	// Local keyframes share the byte budget with the others: on a big
	// pool they are the first to go, a slower step back rather than more
	// memory.
	n := callsRun(s.eng)
	cost := keyframeCost(s.eng, n-kf.calls)
	if !s.kf.fits(cost, s.local.total) {
		return
	}
	if c, err := s.eng.Clone(); err == nil {
		s.local.add(keyframe{pos: s.pos, eng: c, bytes: cost, calls: n})
		s.local.keep(localKeep)
	}
}

// StepAt returns the full result of record i once it has been executed, nil
// otherwise. Recent results are cached; others are recomputed from a
// keyframe on a scratch engine. Without keyframes (devices that cannot clone) an old result is
// rebuilt from its summary, without events.
func (s *Session) StepAt(i int) *engine.Step {
	if i < 0 || i >= s.hist.len() {
		return nil
	}
	if st, ok := s.steps[i]; ok {
		return st
	}
	if s.cloneable {
		if kf, ok := s.kf.at(i); ok {
			if st := s.replayAt(kf, i); st != nil {
				s.cacheStep(i, st)
				return st
			}
		}
	}
	sum, _ := s.Summary(i)
	rec, err := s.src.Record(i)
	if err != nil {
		rec = &traces.Record{Line: s.src.Line(i)}
	}
	return &engine.Step{
		Index: i, Line: rec.Line, Op: rec.Op, Fn: rec.Fn, Device: sum.Device,
		Action: sum.Action, Node: sum.Node, Parent: sum.Parent,
		Checkpoint: sum.Checkpoint, Err: s.errs[i], ExpectFailures: s.expects[i],
	}
}

// replayAt recomputes record i's full result on a scratch clone of kf; nil
// when the clone or a record read fails.
func (s *Session) replayAt(kf keyframe, i int) *engine.Step {
	eng, err := kf.eng.Clone()
	if err != nil {
		return nil
	}
	var st *engine.Step
	for p := kf.pos; p <= i; p++ {
		rec, err := s.src.Record(p)
		if err != nil {
			return nil
		}
		st = eng.Apply(rec)
	}
	return st
}

// Summary returns the compact result of record i once it has been executed.
func (s *Session) Summary(i int) (Summary, bool) {
	if i < 0 || i >= s.hist.len() {
		return Summary{}, false
	}
	sum := summaryOf(s.hist.at(i))
	sum.Index = i
	sum.Err = errText(s.errs[i])
	sum.ExpectFailures = expectMessages(s.expects[i])
	return sum, true
}

// summaryOf is what a history entry says of its record: a Summary less
// its index and messages.
func summaryOf(e entry) Summary {
	return Summary{
		Action:     actionCodes[e.action],
		Node:       int(e.node),
		Parent:     int(e.parent),
		Device:     int(e.device),
		Kinds:      e.kinds,
		Checkpoint: e.flags&flagCheckpoint != 0,
		Rerecord:   e.flags&flagRerecord != 0,
	}
}

// Summaries calls f with Summary(i) for each executed record i of [lo, hi),
// in order. It is the bulk form for a reader that takes every record of a
// long range once (the timeline after a 25M-record move): each distinct
// history entry is turned into a Summary once, and the error maps are read
// only when they hold something, where Summary(i) costs all of that per
// record.
func (s *Session) Summaries(lo, hi int, f func(Summary)) {
	hi = min(hi, s.hist.len())
	lo = max(lo, 0)
	if lo >= hi {
		return
	}
	base := make([]Summary, len(s.hist.dict))
	made := make([]bool, len(s.hist.dict))
	checkErrs := len(s.errs) > 0 || len(s.expects) > 0
	s.hist.codes.Each(lo, hi, func(i int, c uint32) {
		if !made[c] {
			base[c], made[c] = summaryOf(s.hist.dict[c]), true
		}
		sum := base[c]
		sum.Index = i
		if checkErrs {
			sum.Err = errText(s.errs[i])
			sum.ExpectFailures = expectMessages(s.expects[i])
		}
		f(sum)
	})
}

// Keyframes returns how many keyframes the history holds and their spacing.
func (s *Session) Keyframes() (n, every int) { return len(s.kf.list), s.kf.every }

// KeyframeBytes returns the bytes the keyframes and local keyframes hold
// (as engine.Engine.SnapshotBytes counted them when they were taken) and
// the byte budget (<= 0: none).
func (s *Session) KeyframeBytes() (held, budget int64) {
	return s.kf.total + s.local.total, s.kf.budget
}

// LastCheckpoint returns the index of the last record before pos that
// checkpointed a pool, or -1.
func (s *Session) LastCheckpoint(pos int) int {
	i := sort.SearchInts(s.ckpts, pos) - 1
	if i < 0 {
		return -1
	}
	return s.ckpts[i]
}

func errText(err *engine.Error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func expectMessages(fs []engine.ExpectFailure) []string {
	if len(fs) == 0 {
		return nil
	}
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Msg
	}
	return out
}
