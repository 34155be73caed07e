package sessions

import (
	"sort"

	"github.com/cgtviz/cgtviz/engine"
)

// KindRerecord is a pseudo event kind for breakpoints and summaries: a
// recording caused by a pointer change of a static or managed input
// (engine.Event.Rerecord). The engine reports it as an EvRecord with a flag,
// but people ask to stop on it, so it gets its own bit.
const KindRerecord engine.EventKind = 31

// KindSet is a set of event kinds, one bit per engine.EventKind (and bit 31
// for KindRerecord). It is what the history keeps of a step's events.
type KindSet uint32

// Has reports whether k is in the set.
func (s KindSet) Has(k engine.EventKind) bool {
	return k < 32 && s&(1<<k) != 0
}

// Kinds lists the kinds in the set in numeric order.
func (s KindSet) Kinds() []engine.EventKind {
	var out []engine.EventKind
	for k := engine.EventKind(0); k < 32; k++ {
		if s.Has(k) {
			out = append(out, k)
		}
	}
	return out
}

// KindName returns the name of an event kind as breakpoints spell it,
// including the pseudo kind KindRerecord.
func KindName(k engine.EventKind) string {
	switch k {
	case KindRerecord:
		return "rerecord"
	case KindOverwrite:
		return "overwrite"
	}
	return k.String()
}

// ParseKind returns the kind named s: an engine kind ("replay",
// "checkpoint", ...) or "rerecord".
func ParseKind(s string) (engine.EventKind, bool) {
	switch s {
	case "rerecord":
		return KindRerecord, true
	case "overwrite":
		return KindOverwrite, true
	}
	return engine.ParseEventKind(s)
}

// BreakpointKinds lists the kinds a breakpoint may stop on, for pickers.
func BreakpointKinds() []engine.EventKind {
	return append(engine.EventKinds(), KindRerecord, KindOverwrite)
}

// Flags of an entry (an error or a failed expectation is in its kinds).
const (
	flagCheckpoint uint8 = 1 << iota
	flagRerecord
)

// Action codes of an entry; the order is irrelevant, only the mapping matters.
var actionCodes = []engine.Action{engine.ActionNone, engine.ActionWarmup, engine.ActionRecord, engine.ActionReplay, engine.ActionEager}

func actionCode(a engine.Action) uint8 {
	for i, x := range actionCodes {
		if x == a {
			return uint8(i)
		}
	}
	return 0
}

// entry is what the history keeps of one executed record, 16 bytes, stored
// once per distinct value (history). Everything else about the record is
// in the trace itself; error and expectation messages, rare, live in maps.
type entry struct {
	node, parent int32
	kinds        KindSet
	device       uint16
	action       uint8
	flags        uint8
}

// history is one entry per executed record, dictionary-coded: a long run
// is mostly repetition (the same call replaying the same node step after
// step), so the distinct entries are few and each record costs a 4-byte
// code, and the codes repeat with the period of the program's loop, which
// a Seq stores in next to nothing: a steady loop of 50M records costs a
// few hundred KB where the codes alone were 200 MB, and 16-byte entries
// 800 MB.
type history struct {
	codes Seq[uint32]
	dict  []entry
	ids   map[entry]uint32
	// recent caches ids's answers by a cheap hash of the entry: a loop
	// pushes its few entries over and over, and the map's lookup was
	// half of what the history cost a record.
	recent [64]struct {
		e  entry
		id uint32
		ok bool
	}
}

func (h *history) len() int { return h.codes.Len() }

func (h *history) at(i int) entry { return h.dict[h.codes.At(i)] }

func (h *history) push(e entry) {
	r := &h.recent[(uint32(e.node)*0x9e3779b1^uint32(e.kinds)*0x85ebca6b^uint32(e.action)<<3^uint32(e.flags))>>26]
	if r.ok && r.e == e {
		h.codes.Push(r.id)
		return
	}
	id, ok := h.ids[e]
	if !ok {
		if h.ids == nil {
			h.ids = map[entry]uint32{}
		}
		id = uint32(len(h.dict))
		h.dict = append(h.dict, e)
		h.ids[e] = id
	}
	r.e, r.id, r.ok = e, id, true
	h.codes.Push(id)
}

// Summary is the compact result of one executed record.
type Summary struct {
	// Index is the record's position in the trace (0-based).
	Index  int
	Action engine.Action
	// Node and Parent are graph ids, -1 when none.
	Node, Parent int
	Device       int
	Kinds        KindSet
	Checkpoint   bool
	Rerecord     bool
	// Err is the record's error message, "" when it succeeded.
	Err string
	// ExpectFailures are the failed expectations of an expect record.
	ExpectFailures []string
}

func newEntry(st *engine.Step) entry {
	e := entry{
		node:   int32(st.Node),
		parent: int32(st.Parent),
		device: uint16(st.Device),
		action: actionCode(st.Action),
	}
	if st.Err != nil {
		e.kinds |= 1 << engine.EvError
	}
	if st.Checkpoint {
		e.flags |= flagCheckpoint
	}
	if len(st.ExpectFailures) > 0 {
		e.kinds |= 1 << engine.EvExpectFailed
	}
	for i := range st.Events {
		ev := &st.Events[i]
		if ev.Kind < 32 {
			e.kinds |= 1 << ev.Kind
		}
		if ev.Kind == engine.EvCheckpoint {
			e.flags |= flagCheckpoint
		}
		if ev.Kind == engine.EvRecord && ev.Rerecord {
			e.flags |= flagRerecord
			e.kinds |= 1 << KindRerecord
		}
	}
	return e
}

// replays reports whether the entry replayed node (any node when node < 0).
func (e entry) replays(node int) bool {
	if e.kinds&(1<<engine.EvReplay) == 0 {
		return false
	}
	return node < 0 || int(e.node) == node
}

// keyframe is an engine clone at a position. It is never applied to: a
// restore clones it again, so the keyframe stays as it was taken. bytes is
// what the clone cost in device memory (engine.Engine.SnapshotBytes when it
// was taken: on the GPU, device memory; on sim, its upper bound).
type keyframe struct {
	pos   int
	eng   *engine.Engine
	bytes int64
	// calls is how many calls eng had run (callsRun): the next
	// keyframe's cost counts the calls between the two.
	calls int
}

// keyframes is the bounded set of keyframes: one every every steps, with
// every doubled (and the odd ones dropped) whenever there are more than max
// or they hold more than budget bytes.
type keyframes struct {
	every  int
	max    int
	budget int64      // bytes; <= 0: no byte cap
	total  int64      // bytes held by list
	list   []keyframe // sorted by pos
}

// due reports whether a keyframe should be taken at pos.
func (k *keyframes) due(pos int) bool {
	if pos%k.every != 0 {
		return false
	}
	n := len(k.list)
	return n == 0 || k.list[n-1].pos < pos
}

// over reports whether the set breaks one of its caps.
func (k *keyframes) over() bool {
	return len(k.list) > k.max || (k.budget > 0 && k.total > k.budget && len(k.list) > 1)
}

// add appends a keyframe (after the last one), and
// thins the set when it has grown past max keyframes or budget bytes, so
// that memory stays bounded however long the trace and however big the
// tree: old keyframes are spaced twice as far apart, never dropped all
// (the one at position 0 always stays, and it costs next to nothing).
func (k *keyframes) add(f keyframe) {
	k.list = append(k.list, f)
	k.total += f.bytes
	for k.over() {
		k.every *= 2
		k.thin()
	}
}

// thin drops the keyframes off the spacing.
func (k *keyframes) thin() {
	kept := k.list[:0]
	k.total = 0
	for _, f := range k.list {
		if f.pos%k.every == 0 {
			kept = append(kept, f)
			k.total += f.bytes
		}
	}
	// The dropped clones go to the collector; on the GPU their device
	// memory is given back when it buries them.
	clear(k.list[len(kept):])
	k.list = kept
}

// reach widens the spacing, before a move that will take keyframes up to
// pos, to what add would have doubled it to by pos under the count cap
// (one keyframe at each multiple of it, 0 included, at most max): the
// move then clones only the keyframes that stay, where doubling on the
// way cloned about four times as many, each a copy of the engine's
// tables, to drop three in four (issue 34 item 15). The byte cap still
// doubles the spacing as the keyframes come, as before.
func (k *keyframes) reach(pos int) {
	every := k.every
	for pos/every+1 > k.max {
		every *= 2
	}
	if every != k.every {
		k.every = every
		k.thin()
	}
}

// fits reports whether a keyframe of bytes more fits under the budget with
// extra bytes held elsewhere (the local keyframes).
func (k *keyframes) fits(bytes, extra int64) bool {
	return k.budget <= 0 || k.total+extra+bytes <= k.budget
}

// at returns the last keyframe at or before pos.
func (k *keyframes) at(pos int) (keyframe, bool) { return frameAt(k.list, pos) }

// frameAt returns the last of the sorted frames at or before pos.
func frameAt(list []keyframe, pos int) (keyframe, bool) {
	i := sort.Search(len(list), func(i int) bool { return list[i].pos > pos })
	if i == 0 {
		return keyframe{}, false
	}
	return list[i-1], true
}

// localPerInterval is how many local keyframes divide one keyframe
// interval. Going back one record from position p restores the keyframe at
// or before p and re-applies the records after it; with local keyframes,
// holding N down costs at most interval/localPerInterval records a step
// rather than a whole interval.
const localPerInterval = 32

// localKeep bounds the local keyframes held at a time. Holding N down
// walks back one record a press, so only the few frames just below the
// position serve it; the whole interval's worth (localPerInterval) held
// 74 MB at 10,000 nodes (BenchmarkMovesTree10k's 30 N from the end), a
// third of the heap, for presses that rarely come.
const localKeep = 4

// localFrames are short-lived keyframes inside one interval of the
// bounded set, made while records are re-applied after a restore. Only one
// interval has them at a time, so they add a constant to memory.
type localFrames struct {
	base  int // position of the keyframe whose interval they divide
	list  []keyframe
	total int64 // bytes held by list
}

// at returns the last local keyframe at or before pos.
func (l *localFrames) at(pos int) (keyframe, bool) { return frameAt(l.list, pos) }

// has reports whether a local keyframe exists at pos.
func (l *localFrames) has(pos int) bool {
	f, ok := l.at(pos)
	return ok && f.pos == pos
}

// drop gives up every local keyframe (to the collector) and starts the
// interval at base.
func (l *localFrames) drop(base int) {
	clear(l.list)
	*l = localFrames{base: base}
}

// keep drops the highest local keyframes until at most n are left: going
// back, the position moves down, so the highest are the first no longer
// below it.
func (l *localFrames) keep(n int) {
	for len(l.list) > n {
		last := len(l.list) - 1
		l.total -= l.list[last].bytes
		l.list[last] = keyframe{}
		l.list = l.list[:last]
	}
}

// add inserts a keyframe, keeping the list sorted.
func (l *localFrames) add(f keyframe) {
	i := sort.Search(len(l.list), func(i int) bool { return l.list[i].pos > f.pos })
	l.list = append(l.list, keyframe{})
	copy(l.list[i+1:], l.list[i:])
	l.list[i] = f
	l.total += f.bytes
}

// Host memory of a keyframe beyond the device's snapshot. engine.Clone
// shares the tree's nodes and functions with the live engine and copies
// the rest (the tensor table, the manager's maps): BenchmarkKeyframeBytes
// has 134 bytes a node right after the clone, BenchmarkClone10k 650 in a
// tree whose nodes all hold a cached output. Then the live engine's calls
// change nodes the keyframe shares, and each change gives the keyframe a
// copy of its own (engine's unshare): a keyframe ends up holding a copy of
// every node that a call changed after it, up to the whole tree. The
// engine does not say its own size, so the session counts a keyframe
// hostBytesPerNode for each node (recordings) and hostBytesPerCopy for
// each node a call may have copied, min(nodes, the calls since the last
// keyframe): the calls before a keyframe stand for those after it, where
// the spacing is steady. TestKeyframeCostMeasured holds the count against
// the heap that dropping the keyframes frees, at 1 to 3,000 nodes: 1.2 to
// 2.1 times it; at 10,000 nodes (BenchmarkMovesTree10k's trace, a 256 MiB cap)
// 30 keyframes every 4,096 records are counted 160 MB, and the heap with
// them is 165 MB above the heap with the first alone. (The count was 1,200
// bytes a node alone: 0.8 times the heap at 100 nodes and 256 records a
// keyframe, where most of a keyframe is the nodes the calls copied.)
const (
	hostBytesPerNode = 600
	hostBytesPerCopy = 1500
	hostBytesBase    = 24 << 10
)

// callsRun is how many calls eng has run, whatever each did.
func callsRun(eng *engine.Engine) int {
	c := eng.Counters()
	return c.Warmups + c.Recordings + c.Replays + c.Eager
}

// keyframeCost is what one more keyframe of eng costs: the device's
// snapshot (device memory on the GPU, its upper bound on sim) and the
// tree's host copy, for a keyframe taken since calls after the last.
func keyframeCost(eng *engine.Engine, since int) int64 {
	nodes := int64(eng.Counters().Recordings)
	copies := min(nodes, int64(max(since, 0)))
	return eng.SnapshotBytes() + hostBytesBase + hostBytesPerNode*nodes + hostBytesPerCopy*copies
}
