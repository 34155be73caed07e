package ui

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cgtviz/cgtviz/engine"
)

// A diff compares the state at a marked position (v) with the state shown
// now (V): the nodes recorded between them, the pool blocks that appeared,
// went or changed state, and the tensors born and died. States are
// immutable snapshots, so the mark keeps its state as it was.

// diffMark is the position v marked.
type diffMark struct {
	pos   int
	state *engine.State
}

// markDiff marks the shown position as the diff's base.
func (m *Model) markDiff() {
	if m.snap.state == nil {
		m.setMsg("", errors.New("diff: no state to mark"))
		return
	}
	m.diffBase = &diffMark{pos: m.snap.pos, state: m.snap.state}
	m.setMsg(fmt.Sprintf("diff: marked %s; move, then V shows what changed since", m.where(m.snap.pos)), nil)
}

// showDiff opens the diff between the mark and the shown position.
func (m *Model) showDiff() {
	if m.diffBase == nil {
		m.setMsg("", errors.New("diff: mark a position first (v)"))
		return
	}
	if m.snap.state == nil {
		m.setMsg("", errors.New("diff: no state here"))
		return
	}
	title := fmt.Sprintf("diff %s → %s (esc closes)", m.where(m.diffBase.pos), m.where(m.snap.pos))
	m.openOverlay(popup{title: title, lines: diffLines(m.diffBase.state, m.snap.state)})
}

// blockKey names a block across states: its device, pool and address.
type blockKey struct {
	dev  int
	pool string
	addr uint64
}

type blockAt struct {
	key blockKey
	b   *engine.BlockView
}

func blocksOf(st *engine.State) map[blockKey]*engine.BlockView {
	out := map[blockKey]*engine.BlockView{}
	for d := range st.Devices {
		ds := &st.Devices[d]
		for _, pl := range []struct {
			name string
			pv   *engine.PoolView
		}{{"graph", &ds.Pool}, {"default", &ds.Default}} {
			for i := range pl.pv.Segments {
				sg := &pl.pv.Segments[i]
				for j := range sg.Blocks {
					b := &sg.Blocks[j]
					out[blockKey{d, pl.name, b.Addr}] = b
				}
			}
		}
	}
	return out
}

func sortedBlocks(m map[blockKey]*engine.BlockView, keep func(blockKey, *engine.BlockView) bool) []blockAt {
	var out []blockAt
	for k, b := range m {
		if keep(k, b) {
			out = append(out, blockAt{k, b})
		}
	}
	slices.SortFunc(out, func(a, b blockAt) int {
		return cmp.Or(cmp.Compare(a.key.dev, b.key.dev), cmp.Compare(a.key.pool, b.key.pool), cmp.Compare(a.key.addr, b.key.addr))
	})
	return out
}

func stateName(s engine.BlockState) string {
	switch s {
	case engine.BlockFree:
		return "free"
	case engine.BlockAllocated:
		return "allocated"
	case engine.BlockLiveInvisible:
		return "live-invisible"
	case engine.BlockStale:
		return "stale"
	case engine.BlockUnowned:
		return "unowned"
	}
	return "?"
}

func blockText(k blockKey, b *engine.BlockView) string {
	s := fmt.Sprintf("dev %d %s %s %s %s %s", k.dev, k.pool, hex(k.addr), human(b.Size), glyph(b.State), stateName(b.State))
	if len(b.Tensors) > 0 {
		s += " (" + joinNames(b.Tensors) + ")"
	}
	return s
}

// diffLines lists what changed from state a to state b.
func diffLines(a, b *engine.State) []string {
	var out []string
	section := func(title string, items []string) {
		out = append(out, fmt.Sprintf("%s (%d)", title, len(items)))
		if len(items) == 0 {
			out = append(out, "    none")
		}
		for _, it := range items {
			out = append(out, "    "+it)
		}
	}
	ca, cb := a.Counters, b.Counters
	out = append(out, fmt.Sprintf("counters: recordings %+d · replays %+d · warmups %+d · checkpoints %+d · re-records %+d · eager %+d · errors %+d",
		cb.Recordings-ca.Recordings, cb.Replays-ca.Replays, cb.Warmups-ca.Warmups, cb.Checkpoints-ca.Checkpoints,
		cb.Rerecords-ca.Rerecords, cb.Eager-ca.Eager, cb.Errors-ca.Errors))

	// Nodes are never removed from a tree, only added; a later position
	// marked first shows them gone.
	had := map[nodeKey]bool{}
	for d := range a.Devices {
		for _, n := range a.Devices[d].Nodes {
			had[nodeKey{d, n.ID}] = true
		}
	}
	has := map[nodeKey]bool{}
	var added []string
	for d := range b.Devices {
		ds := &b.Devices[d]
		for _, n := range ds.Nodes {
			has[nodeKey{d, n.ID}] = true
			if had[nodeKey{d, n.ID}] {
				continue
			}
			rel := "root"
			if n.Parent >= 0 {
				rel = fmt.Sprintf("parent #%d", n.Parent)
			}
			added = append(added, fmt.Sprintf("dev %d #%d %s (%s), recorded at line %d: %s", d, n.ID, n.Fn, rel, n.RecordedAtLine, n.Cause))
		}
	}
	section("nodes added", added)
	var gone []string
	for d := range a.Devices {
		for _, n := range a.Devices[d].Nodes {
			if !has[nodeKey{d, n.ID}] {
				gone = append(gone, fmt.Sprintf("dev %d #%d %s", d, n.ID, n.Fn))
			}
		}
	}
	if len(gone) > 0 {
		section("nodes gone (the mark is later than here)", gone)
	}

	ba, bb := blocksOf(a), blocksOf(b)
	var changed []string
	for _, x := range sortedBlocks(bb, func(k blockKey, nb *engine.BlockView) bool {
		ob, ok := ba[k]
		return ok && (ob.State != nb.State || ob.Size != nb.Size || joinNames(ob.Tensors) != joinNames(nb.Tensors))
	}) {
		ob := ba[x.key]
		s := fmt.Sprintf("dev %d %s %s: %s %s %s → %s %s %s", x.key.dev, x.key.pool, hex(x.key.addr),
			glyph(ob.State), stateName(ob.State), human(ob.Size), glyph(x.b.State), stateName(x.b.State), human(x.b.Size))
		if o, n := joinNames(ob.Tensors), joinNames(x.b.Tensors); o != n {
			s += fmt.Sprintf(" · holders %s → %s", orDefault(o, "none"), orDefault(n, "none"))
		}
		changed = append(changed, s)
	}
	section("blocks changed", changed)
	var newB, goneB []string
	for _, x := range sortedBlocks(bb, func(k blockKey, _ *engine.BlockView) bool { return ba[k] == nil }) {
		newB = append(newB, blockText(x.key, x.b))
	}
	for _, x := range sortedBlocks(ba, func(k blockKey, _ *engine.BlockView) bool { return bb[k] == nil }) {
		goneB = append(goneB, blockText(x.key, x.b))
	}
	section("blocks new (a split or a new segment)", newB)
	section("blocks gone (merged or released)", goneB)

	ta := map[int]*engine.TensorView{}
	for i := range a.Tensors {
		ta[a.Tensors[i].ID] = &a.Tensors[i]
	}
	tb := map[int]bool{}
	var born, died []string
	for i := range b.Tensors {
		t := &b.Tensors[i]
		tb[t.ID] = true
		old := ta[t.ID]
		switch {
		case old == nil:
			born = append(born, fmt.Sprintf("%s %s %s pool at %s (%s)", tensorName(t), shape(t.Shape), t.Pool, hex(t.Ptr), t.Producer))
		case old.State == engine.TensorLive && t.State == engine.TensorStale:
			died = append(died, fmt.Sprintf("%s freed, now stale (reading it raises the overwritten error)", tensorName(t)))
		}
	}
	for i := range a.Tensors {
		t := &a.Tensors[i]
		if !tb[t.ID] {
			died = append(died, fmt.Sprintf("%s gone (%s)", tensorName(t), t.Producer))
		}
	}
	section("tensors born", born)
	section("tensors died", died)
	return out
}

func tensorName(t *engine.TensorView) string {
	if len(t.Names) == 0 {
		return fmt.Sprintf("<t%d>", t.ID)
	}
	return strings.Join(t.Names, ",")
}
