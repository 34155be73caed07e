package ui

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/sessions"
)

// blockGlyphs are the cells of each engine.BlockState. They differ without
// color: a person reading a NO_COLOR screen or a golden file tells them
// apart by shape.
var blockGlyphs = [...]string{
	engine.BlockFree:          "·",
	engine.BlockAllocated:     "█",
	engine.BlockLiveInvisible: "▒",
	engine.BlockStale:         "×",
	engine.BlockUnowned:       "!",
}

// changedGlyph marks, under a segment's bar, the blocks the last checkpoint
// changed, and follows their names in the block list.
const changedGlyph = "^"

// Run styles of a pool line: a BlockState, or one of these.
const (
	runPlain   = -1
	runChanged = 16 + iota
	runDim
	runBold
	runWarn
)

// run is a piece of a pool line with one style. Lines are kept as runs and
// styled only when visible, so that a pool of 50,000 blocks costs one pass
// to lay out and a screenful of lipgloss calls to draw.
type run struct {
	style int
	text  string
}

type poolLine []run

// poolPane draws the current device's pools: segments as rows of blocks to
// scale, each block in the glyph of its state. Segments are laid out lazily,
// when they scroll into view, so that a frame of a pool with thousands of
// segments costs what it shows.
type poolPane struct {
	scroll
	key   poolKey
	items []poolItem
	where *lazyIndex // the state's tensors by name, built on first need
	// shared is where the layout finds the index of its state ready (the
	// snapshot's), nil to build its own.
	shared func() *lazyIndex
	// lines is the buffer the layout functions append to.
	lines []poolLine
	// memo holds short runs styled with memoOf (styled).
	memo   map[run]string
	memoOf *Styles
}

// poolItem is a run of lines of the pool pane: fixed text, or one segment
// laid out on first sight.
type poolItem struct {
	seg   *engine.SegmentView
	lines []poolLine
	done  bool
}

type poolKey struct {
	st    *engine.State
	dev   int
	width int
}

// layout starts a new layout when the state, device or width changed;
// shared gives the state's tensor index when it is ready elsewhere (nil:
// the layout builds its own).
func (p *poolPane) layout(st *engine.State, dev, w int, shared func() *lazyIndex) {
	k := poolKey{st, dev, w}
	if k == p.key && p.items != nil {
		return
	}
	p.key, p.items, p.where, p.shared = k, p.items[:0], nil, shared
	p.fixed(func() { p.legend(w) })
	if st == nil || dev < 0 || dev >= len(st.Devices) {
		return
	}
	ds := &st.Devices[dev]
	type namedPool struct {
		name    string
		pv      *engine.PoolView
		dropped bool
	}
	pools := []namedPool{{"graph pool", &ds.Pool, false}}
	for i := range ds.Dropped {
		pools = append(pools, namedPool{"graph pool of a dropped tree", &ds.Dropped[i], true})
	}
	pools = append(pools, namedPool{"default pool", &ds.Default, false})
	for _, pl := range pools {
		p.fixed(func() { p.pool(pl.name, pl.pv, pl.dropped, w) })
		for i := range pl.pv.Segments {
			p.items = append(p.items, poolItem{seg: &pl.pv.Segments[i]})
		}
	}
}

// fixed appends an item of the lines f adds.
func (p *poolPane) fixed(f func()) {
	p.lines = nil
	f()
	p.items = append(p.items, poolItem{lines: p.lines, done: true})
}

// item returns item i, laid out.
func (p *poolPane) item(i int) []poolLine {
	it := &p.items[i]
	if !it.done {
		p.lines = nil
		p.segment(it.seg, p.tensors, p.key.width)
		it.lines, it.done = p.lines, true
	}
	return it.lines
}

// tensors indexes the state's tensors by name, once per layout: the stale
// names at once, the full index when a block first needs it. The index is
// the snapshot's, shared with the other panes, when it is of this state.
func (p *poolPane) tensors() *lazyIndex {
	if p.where == nil {
		if p.shared != nil {
			if l := p.shared(); l.st == p.key.st {
				p.where = l
			}
		}
		if p.where == nil {
			p.where = newLazyIndex(p.key.st)
		}
	}
	return p.where
}

// window returns the lines from the offset on, at most h, laying out what
// it reaches; past the end it clamps the offset.
func (p *poolPane) window(h int) []poolLine {
	var out []poolLine
	at := 0
	for i := range p.items {
		ls := p.item(i)
		if at+len(ls) > p.offset {
			from := max(p.offset-at, 0)
			out = append(out, ls[from:min(len(ls), from+h-len(out))]...)
		}
		at += len(ls)
		if len(out) >= h {
			return out
		}
	}
	if last := max(at-h, 0); p.offset > last {
		p.offset, p.cursor = last, last
		return p.window(h)
	}
	return out
}

// allLines lays out everything (for tests and the end of the pane).
func (p *poolPane) allLines() []poolLine {
	var out []poolLine
	for i := range p.items {
		out = append(out, p.item(i)...)
	}
	return out
}

func (p *poolPane) add(runs ...run) { p.lines = append(p.lines, poolLine(runs)) }

// legend lays out the glyph legend, wrapped to the width.
func (p *poolPane) legend(w int) {
	items := []run{
		{int(engine.BlockAllocated), blockGlyphs[engine.BlockAllocated] + " allocated"},
		{int(engine.BlockLiveInvisible), blockGlyphs[engine.BlockLiveInvisible] + " live, allocator thinks free"},
		{int(engine.BlockStale), blockGlyphs[engine.BlockStale] + " stale"},
		{int(engine.BlockFree), blockGlyphs[engine.BlockFree] + " free"},
		{int(engine.BlockUnowned), blockGlyphs[engine.BlockUnowned] + " unowned"},
		{runChanged, changedGlyph + " changed by last checkpoint"},
		// One unit in every list: the bytes of pool a span covers (an
		// allocated block's, rounded as the allocator rounds; a tensor's
		// own where it lies in a block the allocator believes free).
		{runDim, "sizes: pool bytes each span covers"},
	}
	var line poolLine
	used := 0
	for _, it := range items {
		n := len([]rune(it.text)) + 2
		if used > 0 && used+n > w {
			p.lines = append(p.lines, line)
			line, used = nil, 0
		}
		line = append(line, it, run{runPlain, "  "})
		used += n
	}
	if len(line) > 0 {
		p.lines = append(p.lines, line)
	}
}

// pool lays out one pool: a summary, the explanation the seed thread asks
// for when replay outputs are invisible to the allocator, then segments.
func (p *poolPane) pool(name string, pv *engine.PoolView, dropped bool, w int) {
	var counts [len(blockGlyphs)]int
	for i := range pv.Segments {
		bs := pv.Segments[i].Blocks
		for j := range bs {
			if s := bs[j].State; int(s) < len(counts) {
				counts[s]++
			}
		}
	}
	p.add(run{runPlain, ""})
	// The summary flows onto as many lines as the width needs: nothing in
	// it may be cut at 80 columns.
	p.flow(w, "", run{runBold, fmt.Sprintf("%s (%d,%d):", name, pv.ID[0], pv.ID[1])},
		run{runPlain, "reserved " + human(pv.ReservedBytes)}, run{runPlain, "allocated " + human(pv.AllocatedBytes)},
		run{runPlain, "peak reserved " + human(pv.PeakReserved)})
	if len(pv.Segments) == 0 {
		p.add(run{runDim, "  no segments"})
		return
	}
	// The block counts, those that are not zero (room matters at 80
	// columns, and a zero tells nothing the bar does not).
	items := []run{{runPlain, fmt.Sprintf("%d segments", len(pv.Segments))}}
	for _, c := range []struct {
		st   engine.BlockState
		name string
	}{{engine.BlockAllocated, "allocated"}, {engine.BlockLiveInvisible, "live-invisible"}, {engine.BlockStale, "stale"}, {engine.BlockUnowned, "unowned"}} {
		if n := counts[c.st]; n > 0 {
			items = append(items, run{int(c.st), fmt.Sprintf("%d %s", n, c.name)})
		}
	}
	p.flow(w, "  ", items...)
	if counts[engine.BlockLiveInvisible] > 0 {
		why := "a recording now would overwrite them, so the tree manager checkpoints the pool first."
		if dropped {
			// No manager records into a dropped tree's pool again.
			why = "no tree records into this pool any more, so they stay as they are until they die."
		}
		for _, l := range wrap(fmt.Sprintf("%s %d block(s) hold live replay outputs that the allocator believes free: %s",
			blockGlyphs[engine.BlockLiveInvisible], counts[engine.BlockLiveInvisible], why), w) {
			p.add(run{runWarn, l})
		}
	}
}

// flow lays out items separated by " · " on lines of at most w cells,
// each line starting with indent; an item is never split.
func (p *poolPane) flow(w int, indent string, items ...run) {
	line := poolLine{{runPlain, indent}}
	used := len(indent)
	for i, it := range items {
		n := len([]rune(it.text))
		if i > 0 {
			sep := " · "
			if i == 1 && strings.HasSuffix(items[0].text, ":") {
				sep = " "
			}
			if used+len(sep)+n > w {
				p.add(line...)
				line, used = poolLine{{runPlain, indent + "  "}}, len(indent)+2
			} else {
				line = append(line, run{runPlain, sep})
				used += len([]rune(sep))
			}
		}
		line = append(line, it)
		used += n
	}
	p.add(line...)
}

// piece is a span of a segment drawn in one state: a block, or, inside a
// block the allocator believes free, the part a live (or stale) tensor
// occupies and the free gaps around it. Splitting such blocks shows where
// the replay outputs are, which the allocator itself cannot say.
type piece struct {
	state   engine.BlockState
	size    int64
	changed bool
	// live are the names of the live tensors that hold the piece; stale
	// the names of freed tensors still pointing into it. Both are empty
	// for free space. A block lists its holders, never a dead name as one.
	live, stale []string
}

// label is the piece's names as the block list shows them: the live
// holders, then the stale names apart ("c (stale: a)").
func (pc piece) label() string {
	switch {
	case len(pc.stale) == 0:
		return joinNames(pc.live)
	case len(pc.live) == 0:
		return "stale: " + joinNames(pc.stale)
	}
	return joinNames(pc.live) + " (stale: " + joinNames(pc.stale) + ")"
}

// pieces splits a segment's blocks into pieces.
func pieces(sg *engine.SegmentView, where func() *lazyIndex) []piece {
	out := make([]piece, 0, len(sg.Blocks))
	for i := range sg.Blocks {
		b := &sg.Blocks[i]
		changed := b.InCheckpoint || b.CheckpointNew
		split := !b.Allocated && (b.State == engine.BlockLiveInvisible || b.State == engine.BlockStale)
		var spans []span
		if split {
			spans = occupied(b, where().index())
		}
		if len(spans) == 0 {
			live, stale := holders(b.Tensors, b.Addr, b.Addr+uint64(b.Size), where)
			out = append(out, piece{state: b.State, size: b.Size, changed: changed, live: live, stale: stale})
			continue
		}
		at := b.Addr
		for _, sp := range spans {
			if sp.lo > at {
				out = append(out, piece{state: engine.BlockFree, size: int64(sp.lo - at), changed: changed})
			}
			out = append(out, piece{state: sp.state, size: int64(sp.hi - sp.lo), changed: changed, live: sp.live, stale: sp.stale})
			at = sp.hi
		}
		if end := b.Addr + uint64(b.Size); end > at {
			out = append(out, piece{state: engine.BlockFree, size: int64(end - at), changed: changed})
		}
	}
	return out
}

// joinNames joins a block's tensor names in sorted order: the engine lists the
// names of storages sharing an address in no fixed order, and the screen
// must not flicker between equal states.
func joinNames(ns []string) string {
	if len(ns) < 2 {
		return strings.Join(ns, ",")
	}
	return strings.Join(slices.Sorted(slices.Values(ns)), ",")
}

// holders splits the names the engine lists for a block into the live
// tensors that hold [lo, hi) and the stale ones: a name whose tensor was
// freed (del, a new generation) may still be listed where its storage lay.
// The block list is in every frame, so the common case (one name, or all
// live) allocates nothing new.
func holders(names []string, lo, hi uint64, where func() *lazyIndex) (live, stale []string) {
	if len(names) == 0 {
		return nil, nil
	}
	l := where()
	// Most names are no stale tensor's: those are live holders without a
	// look at where the tensors lie.
	suspect := false
	for _, n := range names {
		if l.stale[n] {
			suspect = true
			break
		}
	}
	if !suspect {
		return names, nil
	}
	x := l.index()
	allLive := true
	for _, n := range names {
		if !x.liveIn(n, lo, hi) {
			allLive = false
			break
		}
	}
	if allLive {
		return names, nil
	}
	for _, n := range names {
		if x.liveIn(n, lo, hi) {
			live = append(live, n)
		} else {
			stale = append(stale, n)
		}
	}
	return live, stale
}

// span is the part of a block one storage occupies.
type span struct {
	lo, hi      uint64
	state       engine.BlockState
	live, stale []string
}

// occupied returns the spans of a block's tensors, by address, merged where
// they overlap (views of one storage).
func occupied(b *engine.BlockView, where tensorIndex) []span {
	out := make([]span, 0, len(b.Tensors))
	lo, hi := b.Addr, b.Addr+uint64(b.Size)
	for _, n := range b.Tensors {
		t, ok := where.get(n)
		if !ok || t.Bytes <= 0 {
			return nil // unknown extent: draw the block whole
		}
		// A rebound name may have a live tensor elsewhere and a stale
		// one here: each tensor of the name counts where it lies.
		for _, t := range where.all(n) {
			s, e := max(t.Ptr, lo), min(t.Ptr+uint64(max(t.Bytes, 0)), hi)
			if s >= e {
				continue
			}
			sp := span{lo: s, hi: e, state: engine.BlockLiveInvisible, live: []string{n}}
			if t.State != engine.TensorLive {
				sp.state, sp.live, sp.stale = engine.BlockStale, nil, []string{n}
			}
			out = append(out, sp)
		}
	}
	if len(out) < 2 {
		return out
	}
	slices.SortFunc(out, func(a, b span) int {
		if c := cmp.Compare(a.lo, b.lo); c != 0 {
			return c
		}
		return cmp.Compare(spanName(a), spanName(b))
	})
	merged := out[:1]
	for _, sp := range out[1:] {
		if k := len(merged) - 1; sp.lo < merged[k].hi {
			m := &merged[k]
			m.hi = max(m.hi, sp.hi)
			m.live = append(slices.Clip(m.live), sp.live...)
			m.stale = append(slices.Clip(m.stale), sp.stale...)
			if sp.state == engine.BlockLiveInvisible {
				m.state = sp.state
			}
			continue
		}
		merged = append(merged, sp)
	}
	return merged
}

func spanName(s span) string {
	if len(s.live) > 0 {
		return s.live[0]
	}
	if len(s.stale) > 0 {
		return s.stale[0]
	}
	return ""
}

// tensorIndex finds a state's tensors by name. It maps to positions in
// State.Tensors rather than copies, so that building it for tens of
// thousands of tensors stays cheap.
type tensorIndex struct {
	st  *engine.State
	pos map[string]int32
	// more lists, for the few names that several tensors carry (a name
	// rebound while the old tensor is kept stale), every one of them.
	more map[string][]int32
}

// all returns every tensor named n (usually one).
func (x tensorIndex) all(n string) []*engine.TensorView {
	i, ok := x.pos[n]
	if !ok {
		return nil
	}
	if js := x.more[n]; len(js) > 0 {
		out := make([]*engine.TensorView, len(js))
		for k, j := range js {
			out[k] = &x.st.Tensors[j]
		}
		return out
	}
	return []*engine.TensorView{&x.st.Tensors[i]}
}

// liveIn reports whether a live tensor named n overlaps [lo, hi); a name
// the state does not know counts as live (the engine lists live names).
func (x tensorIndex) liveIn(n string, lo, hi uint64) bool {
	i, ok := x.pos[n]
	if !ok {
		return true
	}
	overlaps := func(t *engine.TensorView) bool {
		return t.State == engine.TensorLive && t.Ptr < hi && t.Ptr+uint64(max(t.Bytes, 1)) > lo
	}
	if overlaps(&x.st.Tensors[i]) {
		return true
	}
	for _, j := range x.more[n] {
		if overlaps(&x.st.Tensors[j]) {
			return true
		}
	}
	return false
}

// get returns the tensor named n.
func (x tensorIndex) get(n string) (*engine.TensorView, bool) {
	i, ok := x.pos[n]
	if !ok {
		return nil, false
	}
	return &x.st.Tensors[i], true
}

// lazyIndex is what the panes need of a state's tensors, found in one
// pass when first asked and kept for the state (a state holds tens of
// thousands of tensors, and each step brings a new one): the names of its
// stale tensors (few, and enough for most blocks), the names bound to
// parameters (a call's arguments fold them), the live tensors of several
// names (the only ones a silent overwrite can show in); the full index by
// name on first need.
type lazyIndex struct {
	st     *engine.State
	stale  map[string]bool
	params map[string]bool
	multi  []int // indexes in st.Tensors, in order (sessions.MayShare)
	full   *tensorIndex
}

func newLazyIndex(st *engine.State) *lazyIndex {
	l := &lazyIndex{st: st, stale: map[string]bool{}, params: map[string]bool{}}
	if st == nil {
		return l
	}
	for i := range st.Tensors {
		t := &st.Tensors[i]
		if t.State != engine.TensorLive {
			for _, n := range t.Names {
				l.stale[n] = true
			}
		}
		if t.Owner == "param" {
			for _, n := range t.Names {
				l.params[n] = true
			}
		}
		if sessions.MayShare(t) {
			l.multi = append(l.multi, i)
		}
	}
	return l
}

// index is the full index, built once.
func (l *lazyIndex) index() tensorIndex {
	if l.full == nil {
		x := tensorsByName(l.st)
		l.full = &x
	}
	return *l.full
}

// tensorsByName indexes a state's tensors by each of their names; a live
// tensor wins over a stale one of the same name. Most names belong to one
// tensor, so the pass stores each name once, blind (one hash a name: the
// index is built afresh at each step of a state of tens of thousands of
// tensors); a name met again is noted, and a second pass gathers every
// tensor of the noted names, only when there are any.
func tensorsByName(st *engine.State) tensorIndex {
	if st == nil {
		return tensorIndex{st: &engine.State{}, pos: map[string]int32{}}
	}
	m := make(map[string]int32, len(st.Tensors))
	var again []string
	for i := range st.Tensors {
		for _, n := range st.Tensors[i].Names {
			k := len(m)
			m[n] = int32(i)
			if len(m) == k {
				again = append(again, n)
			}
		}
	}
	if len(again) == 0 {
		return tensorIndex{st: st, pos: m}
	}
	more := make(map[string][]int32, len(again))
	for _, n := range again {
		more[n] = nil
	}
	for i := range st.Tensors {
		for _, n := range st.Tensors[i].Names {
			if js, ok := more[n]; ok {
				more[n] = append(js, int32(i))
			}
		}
	}
	// The name's tensor is its first live one, else its last.
	for n, js := range more {
		at := js[len(js)-1]
		for _, j := range js {
			if st.Tensors[j].State == engine.TensorLive {
				at = j
				break
			}
		}
		m[n] = at
	}
	return tensorIndex{st: st, pos: m, more: more}
}

// segment lays out one segment: a header, its pieces drawn to scale (each
// at least one cell) wrapped at the width, the checkpoint markers, and the
// names of the pieces that hold something.
func (p *poolPane) segment(sg *engine.SegmentView, where func() *lazyIndex, w int) {
	kind := "large"
	if sg.Small {
		kind = "small"
	}
	p.flow(w, "", run{runDim, "seg " + hex(sg.Addr)}, run{runDim, human(sg.Size) + " " + kind}, run{runDim, fmt.Sprintf("%d blocks", len(sg.Blocks))})
	ps := pieces(sg, where)
	width := max(w-1, 8)
	var bar, marks cells
	barW, anyChanged := 0, false
	flush := func() {
		if barW == 0 {
			return
		}
		p.add(bar.line()...)
		if anyChanged {
			p.add(marks.line()...)
		}
		bar, marks, barW, anyChanged = bar[:0], marks[:0], 0, false
	}
	// Every piece gets one cell and the cells left over are shared in
	// proportion to size, so that a segment fits one row whenever it has no
	// more pieces than cells; beyond that it wraps, one cell a piece.
	size := max(sg.Size, 1)
	extra := int64(max(width-len(ps), 0))
	for _, pc := range ps {
		n := 1 + int(pc.size*extra/size)
		for n > 0 {
			take := min(n, width-barW)
			bar = bar.add(int(pc.state), glyph(pc.state), take)
			if pc.changed {
				marks = marks.add(runChanged, changedGlyph, take)
				anyChanged = true
			} else {
				marks = marks.add(runPlain, " ", take)
			}
			barW += take
			n -= take
			if barW == width {
				flush()
			}
		}
	}
	flush()
	p.names(ps, w)
}

// names lists the pieces that hold something, at most three lines a
// segment.
func (p *poolPane) names(ps []piece, w int) {
	const maxLines = 3
	used, lines, shown, total := 1, 0, 0, 0
	line := poolLine{{runPlain, " "}}
	for _, pc := range ps {
		if pc.state == engine.BlockFree && !pc.changed {
			continue
		}
		label := pc.label()
		if pc.state == engine.BlockFree && label == "" {
			continue // free space inside a split block
		}
		total++
		if lines >= maxLines {
			continue
		}
		item := fmt.Sprintf("%s %s %s", glyph(pc.state), orDefault(label, "?"), human(pc.size))
		if pc.changed {
			item += changedGlyph
		}
		n := len([]rune(item)) + 2
		if used+n > w && used > 1 {
			p.add(line...)
			lines++
			line, used = poolLine{{runPlain, " "}}, 1
			if lines >= maxLines {
				continue
			}
		}
		line = append(line, run{int(pc.state), item}, run{runPlain, "  "})
		used += n
		shown++
	}
	if lines < maxLines && used > 1 {
		p.add(line...)
	}
	if total > shown {
		p.add(run{runDim, fmt.Sprintf("  … %d more blocks", total-shown)})
	}
}

func glyph(s engine.BlockState) string {
	if int(s) < len(blockGlyphs) {
		return blockGlyphs[s]
	}
	return "?"
}

// cells is a row of a segment's bar being built: runs of one glyph, so
// that a row costs one string per run, not one per cell.
type cells []cellRun

type cellRun struct {
	style int
	glyph string
	n     int
}

// add appends n cells of glyph, extending the last run when it matches.
func (c cells) add(style int, glyph string, n int) cells {
	if k := len(c); k > 0 && c[k-1].style == style && c[k-1].glyph == glyph {
		c[k-1].n += n
		return c
	}
	return append(c, cellRun{style, glyph, n})
}

// line turns the row into a pool line, indented by one cell.
func (c cells) line() poolLine {
	l := make(poolLine, 0, len(c)+1)
	l = append(l, run{runPlain, " "})
	for _, r := range c {
		l = append(l, run{r.style, strings.Repeat(r.glyph, r.n)})
	}
	return l
}

// draw styles the visible lines.
func (p *poolPane) draw(s *Styles, h int) []string {
	p.offset = max(p.offset, 0)
	p.cursor = p.offset
	lines := p.window(h)
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		var b strings.Builder
		for _, r := range l {
			b.WriteString(p.styled(s, r))
		}
		out = append(out, b.String())
	}
	return out
}

// Bounds of the pool's memo of styled runs.
const (
	memoText = 64   // bytes: longer runs are styled each time
	memoRuns = 4096 // runs kept before the memo starts again
)

// styled is a run styled. A pool's bars are rows of the same few glyph
// runs, the same at every frame and most steps, and lipgloss styles each
// anew (most of a step's drawing of 50,000 blocks): the short runs are
// kept, by style and text, for the styles they were made with.
func (p *poolPane) styled(s *Styles, r run) string {
	if len(r.text) > memoText {
		return styled(runStyle(*s, r.style), r.text)
	}
	if p.memo == nil || p.memoOf != s || len(p.memo) >= memoRuns {
		p.memo, p.memoOf = make(map[run]string, 64), s
	}
	out, ok := p.memo[r]
	if !ok {
		out = styled(runStyle(*s, r.style), r.text)
		p.memo[r] = out
	}
	return out
}

func runStyle(s Styles, style int) lipgloss.Style {
	switch {
	case style >= 0 && style < len(s.Block):
		return s.Block[style]
	case style == runChanged:
		return s.Changed
	case style == runDim:
		return s.Dim
	case style == runBold:
		return s.Bold
	case style == runWarn:
		return s.Warn
	}
	return s.Normal
}

// wrap breaks text into lines of at most w cells at spaces. A word
// longer than a line (a file's path, whose line number comes last: what
// a cut would lose) is broken too, after the last '/' that fits in the
// line (else at the width).
func wrap(text string, w int) []string {
	if w < 8 {
		w = 8
	}
	var out []string
	var line []rune
	for _, word := range strings.Fields(text) {
		rw := []rune(word)
		if len(line) > 0 && len(line)+1+len(rw) > w {
			out = append(out, string(line))
			line = nil
		}
		for len(line) == 0 && len(rw) > w {
			cut := w
			for i := w - 1; i >= 1; i-- {
				if rw[i] == '/' {
					cut = i + 1
					break
				}
			}
			out = append(out, string(rw[:cut]))
			rw = rw[cut:]
		}
		if len(line) > 0 {
			line = append(line, ' ')
		}
		line = append(line, rw...)
	}
	if len(line) > 0 {
		out = append(out, string(line))
	}
	return out
}

// The pool as a component: the memory timeline (M) on top when it is on.

func (p *poolPane) title(c *paneCtx) string {
	if st := c.snap.state; st != nil && c.dev < len(st.Devices) {
		return fmt.Sprintf("%s · dev %d", paneTitles[panePool], c.dev)
	}
	return paneTitles[panePool]
}

func (p *poolPane) view(c *paneCtx, w, h int, _ bool) []string {
	p.layout(c.snap.state, c.dev, w, c.snap.tensors)
	if !c.mem.on {
		return p.draw(c.styles, h)
	}
	lineOf := func(pos int) int {
		if pos <= 0 || pos > c.recs.len() {
			return 0
		}
		return c.recs.line(pos - 1)
	}
	chart := c.mem.lines(*c.styles, c.recs.len(), c.snap.pos, c.snap.executed, c.dev, w, lineOf)
	chart = chart[:min(len(chart), max(h-2, 0))]
	return append(chart, p.draw(c.styles, max(h-len(chart), 0))...)
}

func (p *poolPane) keys(*KeyMap) []key.Binding { return nil }

func (p *poolPane) onKey(*paneCtx, tea.KeyPressMsg) (tea.Cmd, bool) { return nil, false }

func (p *poolPane) scrollBy(_ *paneCtx, d int) { textScroll(&p.scroll, d) }

// plain is every line of the pool at width w, without styles.
func (p *poolPane) plain(c *paneCtx, w int) []string {
	p.layout(c.snap.state, c.dev, w, c.snap.tensors)
	var lines []string
	for _, l := range p.allLines() {
		var b strings.Builder
		for _, r := range l {
			b.WriteString(r.text)
		}
		lines = append(lines, b.String())
	}
	return lines
}

func (p *poolPane) text(c *paneCtx, w int) paneText    { return linesText(p.plain(c, w)) }
func (p *poolPane) selection(c *paneCtx, w int) string { return selectionOf(p.plain(c, w)) }
func (p *poolPane) at() int                            { return p.offset }
func (p *poolPane) show(_ *paneCtx, i int)             { p.offset, p.cursor = i, i }
