package alloc

import "slices"

// The journal: Mark, then Undo puts the allocator back as it was at the
// mark, at a cost in proportion to what changed since, where a Clone
// costs every block and segment (ten thousand blocks in a tree of ten
// thousand cached outputs). The engine marks before every record that may
// fail after it changed the allocator; the mallocs of a failed fallback
// are undone the same way.
//
// What it logs: the first value, since the mark, of each block, segment
// and private pool that existed at the mark (its stamp says it was saved
// in this epoch), every write to the pool map, the segment list, the
// allocated-block table and the spare list, and, at the mark itself, the
// allocator's own scalars (header). Objects made since the mark need no
// saving: once the logged objects are back, nothing reaches them. Every
// write to a field of a block, segment or private pool is preceded by
// keepBlock, keepSeg or keepPool; the free sets' links too (their treap
// writes only the links that change).
//
// Marks nest (a fallback's inside a record's): Undo goes back to its mark
// and leaves the earlier marks open; Commit ends the journal, keeping
// every change.

// Mark is a point of the journal that Undo can go back to. It is small
// (the allocator's own scalars, a few kilobytes of stats, are saved in
// the journal's stack of headers), so that keeping one costs nothing.
type Mark struct {
	pos journalPos
	// opened is true when the mark began the journal: undoing it ends
	// the journal.
	opened bool
}

type journalPos struct{ hdrs, blocks, segs, pools, poolMap, segList, ptrs, spare int }

// header is the allocator's own state, saved whole at each mark.
type header struct {
	small, large freeSet
	captures     []capture
	stats        Stats
	defaultStats Stats
	trace        traceLog
	ctx          context
	nextUID      int64
	released     []Ptr
}

type journal struct {
	on bool
	// epoch numbers the marks: an object whose stamp is epoch has its
	// value since the mark saved already, or was made since. 64 bits:
	// a wrapped epoch would take an old stamp for a save.
	epoch   uint64
	hdrs    []header // one a mark, in order
	blocks  []blockSave
	segs    []segSave
	pools   []poolSave
	poolMap []poolMapUndo
	segList []segListUndo
	ptrs    []ptrUndo
	spare   []spareUndo
}

type blockSave struct {
	p *block
	v block
}

type segSave struct {
	p *segment
	v segment
}

type poolSave struct {
	p *privatePool
	v privatePool
}

// poolMapUndo is a write to a.pools: pp is what id held (nil: nothing).
type poolMapUndo struct {
	id PoolID
	pp *privatePool
}

// segListUndo is the insert of seg into a.segs at i, or its delete
// from i.
type segListUndo struct {
	i      int
	seg    *segment
	insert bool
}

// ptrUndo is a write to a.allocated: b is what p held (nil: nothing).
type ptrUndo struct {
	p Ptr
	b *block
}

// spareUndo is a push of b onto a.spare (push) or its pop.
type spareUndo struct {
	b    *block
	push bool
}

// Mark opens a mark of the journal.
func (a *Allocator) Mark() Mark {
	j := &a.j
	m := Mark{opened: !j.on}
	j.on = true
	j.epoch++
	m.pos = journalPos{len(j.hdrs), len(j.blocks), len(j.segs), len(j.pools), len(j.poolMap), len(j.segList), len(j.ptrs), len(j.spare)}
	j.hdrs = append(j.hdrs, header{small: a.small.free, large: a.large.free, stats: a.stats, defaultStats: a.defaultStats,
		trace: a.trace.clone(), ctx: a.ctx, nextUID: a.nextUID, released: a.released})
	if len(a.captures) > 0 {
		j.hdrs[len(j.hdrs)-1].captures = slices.Clone(a.captures)
	}
	return m
}

// Commit ends the journal: every change since the first open mark stays.
// It costs nothing when no mark is open.
func (a *Allocator) Commit() {
	if !a.j.on {
		return
	}
	a.j.on = false
	a.j.truncate(journalPos{})
}

// Undo puts the allocator back as it was at m, which must be open (taken
// since the last Commit and not undone). It returns the bases of the
// segments the allocator held and no longer does (those it got from the
// device since m): a caller whose device does not undo its own state
// gives them back to it.
func (a *Allocator) Undo(m Mark) (forgotten []Ptr) {
	j := &a.j
	if !j.on || m.pos.hdrs >= len(j.hdrs) {
		return nil
	}
	// The segments made since m that are still held, at their bases
	// now: a base in the list again after the undo is held by the
	// segment there, not forgotten.
	for _, u := range j.segList[m.pos.segList:] {
		if k, ok := a.searchSegs(u.seg.base); u.insert && ok && a.segs[k] == u.seg && !slices.Contains(forgotten, u.seg.base) {
			forgotten = append(forgotten, u.seg.base)
		}
	}
	for i := len(j.segList) - 1; i >= m.pos.segList; i-- {
		u := j.segList[i]
		if u.insert {
			a.segs = slices.Delete(a.segs, u.i, u.i+1)
		} else {
			a.segs = slices.Insert(a.segs, u.i, u.seg)
		}
	}
	for i := len(j.blocks) - 1; i >= m.pos.blocks; i-- {
		*j.blocks[i].p = j.blocks[i].v
	}
	for i := len(j.segs) - 1; i >= m.pos.segs; i-- {
		*j.segs[i].p = j.segs[i].v
	}
	for i := len(j.pools) - 1; i >= m.pos.pools; i-- {
		*j.pools[i].p = j.pools[i].v
	}
	forgotten = slices.DeleteFunc(forgotten, func(p Ptr) bool { _, ok := a.searchSegs(p); return ok })
	for i := len(j.poolMap) - 1; i >= m.pos.poolMap; i-- {
		u := j.poolMap[i]
		if u.pp != nil {
			a.pools[u.id] = u.pp
		} else {
			delete(a.pools, u.id)
		}
	}
	for i := len(j.ptrs) - 1; i >= m.pos.ptrs; i-- {
		u := j.ptrs[i]
		if u.b != nil {
			a.allocated.put(u.p, u.b)
		} else {
			a.allocated.del(u.p)
		}
	}
	for i := len(j.spare) - 1; i >= m.pos.spare; i-- {
		u := j.spare[i]
		if u.push {
			a.spare[len(a.spare)-1] = nil
			a.spare = a.spare[:len(a.spare)-1]
		} else {
			a.spare = append(a.spare, u.b)
		}
	}
	h := &j.hdrs[m.pos.hdrs]
	a.small.free, a.large.free = h.small, h.large
	a.captures = h.captures
	a.stats, a.defaultStats = h.stats, h.defaultStats
	a.trace = h.trace
	a.ctx, a.nextUID, a.released = h.ctx, h.nextUID, h.released
	j.truncate(m.pos)
	if m.opened {
		j.on = false
	}
	// Objects saved since m carry this epoch and are back to their
	// earlier values: a new epoch makes the next change save them again.
	j.epoch++
	return forgotten
}

// truncate drops the entries from p on, clearing them so that the reused
// slices pin nothing.
func (j *journal) truncate(p journalPos) {
	clear(j.hdrs[p.hdrs:])
	j.hdrs = j.hdrs[:p.hdrs]
	clear(j.blocks[p.blocks:])
	clear(j.segs[p.segs:])
	clear(j.pools[p.pools:])
	clear(j.poolMap[p.poolMap:])
	clear(j.segList[p.segList:])
	clear(j.ptrs[p.ptrs:])
	clear(j.spare[p.spare:])
	j.blocks, j.segs, j.pools = j.blocks[:p.blocks], j.segs[:p.segs], j.pools[:p.pools]
	j.poolMap, j.segList, j.ptrs, j.spare = j.poolMap[:p.poolMap], j.segList[:p.segList], j.ptrs[:p.ptrs], j.spare[:p.spare]
}

// keepBlock saves b before a change, once per epoch.
func (a *Allocator) keepBlock(b *block) {
	if !a.j.on || b.stamp == a.j.epoch {
		return
	}
	a.j.blocks = append(a.j.blocks, blockSave{b, *b})
	b.stamp = a.j.epoch
}

// keepSeg saves s before a change, once per epoch.
func (a *Allocator) keepSeg(s *segment) {
	if !a.j.on || s.stamp == a.j.epoch {
		return
	}
	a.j.segs = append(a.j.segs, segSave{s, *s})
	s.stamp = a.j.epoch
}

// keepPool saves the private pool of a block pool before a change to it
// (its stats, counts, free sets); the global pools are in the header.
func (a *Allocator) keepPool(p *blockPool) {
	pp := p.owner
	if !a.j.on || pp == nil || pp.stamp == a.j.epoch {
		return
	}
	a.j.pools = append(a.j.pools, poolSave{pp, *pp})
	pp.stamp = a.j.epoch
}

// stamp is the stamp of an object made now: made since the mark, it
// needs no saving.
func (a *Allocator) stamp() uint64 {
	if a.j.on {
		return a.j.epoch
	}
	return 0
}

func (a *Allocator) setPool(id PoolID, pp *privatePool) {
	if a.j.on {
		a.j.poolMap = append(a.j.poolMap, poolMapUndo{id, a.pools[id]})
	}
	a.pools[id] = pp
}

func (a *Allocator) deletePool(id PoolID) {
	if a.j.on {
		a.j.poolMap = append(a.j.poolMap, poolMapUndo{id, a.pools[id]})
	}
	delete(a.pools, id)
}

func (a *Allocator) insertSeg(i int, s *segment) {
	if a.j.on {
		a.j.segList = append(a.j.segList, segListUndo{i: i, seg: s, insert: true})
	}
	a.segs = slices.Insert(a.segs, i, s)
}

func (a *Allocator) deleteSeg(i int) {
	if a.j.on {
		a.j.segList = append(a.j.segList, segListUndo{i: i, seg: a.segs[i]})
	}
	a.segs = slices.Delete(a.segs, i, i+1)
}

func (a *Allocator) putAllocated(p Ptr, b *block) {
	if a.j.on {
		a.j.ptrs = append(a.j.ptrs, ptrUndo{p, a.allocated.get(p)})
	}
	a.allocated.put(p, b)
}

func (a *Allocator) delAllocated(p Ptr) {
	if a.j.on {
		a.j.ptrs = append(a.j.ptrs, ptrUndo{p, a.allocated.get(p)})
	}
	a.allocated.del(p)
}

// freeInsert and freeRemove change a pool's free set, saving the pool
// and the blocks whose links change.
func (a *Allocator) freeInsert(p *blockPool, b *block) {
	a.keepPool(p)
	p.free.insert(a, b)
}

func (a *Allocator) freeRemove(p *blockPool, b *block) {
	a.keepPool(p)
	p.free.remove(a, b)
}
