package engine

import (
	"slices"
	"unsafe"

	"github.com/cgtviz/cgtviz/traces"
)

// defCache is a direct-mapped cache of the defs by name in front of
// Engine.defs, for the call path. A trace read from a file hands out the
// records of a repeated line with one copy of its strings (the reader's
// memo), so the slot of a call's function name is chosen by the address
// of the name's bytes, and a hit compares the name with the slot's by that
// address and length (Go's string comparison compares the addresses
// first): a hit reads one slot, never the name's bytes, nor the def. The
// map's probe, and a slot chosen by a hash of the bytes as this cache was
// before, read the name's bytes and the def besides, each a cache miss in
// a program of ten thousand functions called in turn. A name met at
// another address (a trace built in memory, a line the memo no longer
// holds) misses and is looked up in the map, so the answer never depends
// on the cache. A slot holds the name it was filled with, which keeps
// those bytes alive: the address cannot be reused for another name while
// the slot has it. What a call checks of its def before its dispatch
// (its arity, its number, whether it names static inputs) is in the slot.
//
// It holds defs, which never change once made; the undo of a def record
// empties it (forget: a generation, so that an undo costs no clearing of
// the slots, and a rollback is rare).
type defCache struct {
	slots []defSlot
	shift uint   // 64 - log2(len(slots))
	gen   uint16 // a slot of another generation is empty
	// byLine are slots by the call record's traces.Record.LineKey, in
	// front of slots: the reader numbers its lines in the order they
	// first came, so a loop over ten thousand functions reads these one
	// after the other (the processor fetches them ahead), where slots,
	// by the name's address, is a random one each call. Grown to the
	// largest key met, at most the reader's memo.
	byLine []defSlot
}

// defSlot is 40 bytes, so that most slots lie in one cache line; the
// slots are twice as many as the defs, so that few names share one.
type defSlot struct {
	name                   string
	d                      *defn
	idx, nParams, nReturns int32
	gen                    uint16
	hasStatic              bool
}

// defRef is a def as a call finds it: the def and what the call reads of
// it before its dispatch, so that a hit reads nothing of the def itself.
// The counts fit in 32 bits: a def's parameters and results are names on
// one line of at most traces.MaxLineBytes, and the defs are records, at
// most traces.MaxRecords.
type defRef struct {
	d                      *defn
	idx, nParams, nReturns int32
	hasStatic              bool
}

func refOf(d *defn) defRef {
	return defRef{d: d, idx: int32(d.idx), nParams: int32(d.nParams), nReturns: int32(d.nReturns), hasStatic: d.static != nil}
}

// defCacheMax bounds the slots (40 bytes each): 2.6 MB at most.
const defCacheMax = 1 << 16

// slot returns the slot of name's address: Fibonacci hashing of the
// address, whose low bits an allocator's alignment makes constant.
func (c *defCache) slot(name string) *defSlot {
	p := uint64(uintptr(unsafe.Pointer(unsafe.StringData(name))))
	return &c.slots[(p*0x9E3779B97F4A7C15)>>c.shift]
}

// byLineMax bounds byLine: the reader's memo numbers at most 16,384
// lines (traces.Record.LineKey), and a bigger key is looked up by address.
const byLineMax = 1 << 14

// defOf returns the def that rec calls (ref.d nil when there is none).
func (e *Engine) defOf(rec *traces.Record) defRef {
	k := rec.LineKey()
	if k == 0 || k > byLineMax || rec.Fn == "" {
		return e.def(rec.Fn)
	}
	c := &e.defCache
	if k < len(c.byLine) {
		if s := &c.byLine[k]; s.gen == c.gen && s.name == rec.Fn {
			return defRef{d: s.d, idx: s.idx, nParams: s.nParams, nReturns: s.nReturns, hasStatic: s.hasStatic}
		}
	}
	r := e.def(rec.Fn)
	if r.d == nil {
		return r
	}
	if k >= len(c.byLine) {
		n := min(byLineMax, 2*k) + 1
		c.byLine = slices.Grow(c.byLine, n-len(c.byLine))[:n]
	}
	c.byLine[k] = defSlot{name: rec.Fn, d: r.d, idx: r.idx, nParams: r.nParams, nReturns: r.nReturns, gen: c.gen, hasStatic: r.hasStatic}
	return r
}

// def returns the def named name (ref.d nil when there is none).
func (e *Engine) def(name string) defRef {
	c := &e.defCache
	if len(c.slots) > 0 && name != "" { // an empty slot's name is ""
		if s := c.slot(name); s.gen == c.gen && s.name == name {
			return defRef{d: s.d, idx: s.idx, nParams: s.nParams, nReturns: s.nReturns, hasStatic: s.hasStatic}
		}
	}
	d := e.defs[name]
	if d == nil {
		return defRef{}
	}
	r := refOf(d)
	// Twice the defs' count, so that few collide; remade (empty) as
	// they grow.
	if want := 2 * len(e.defs); len(c.slots) < want && len(c.slots) < defCacheMax {
		n, bits := 64, uint(6)
		for n < want && n < defCacheMax {
			n, bits = 2*n, bits+1
		}
		c.slots, c.shift = make([]defSlot, n), 64-bits
	}
	*c.slot(name) = defSlot{name: name, d: d, idx: r.idx, nParams: r.nParams, nReturns: r.nReturns, gen: c.gen, hasStatic: r.hasStatic}
	return r
}

// forget empties the cache (a def is being undone, under a name whose
// slots, one per address the name came at, the cache cannot find).
func (c *defCache) forget() {
	c.gen++
	if c.gen == 0 {
		// Wrapped: slots of generation 0 would come back.
		clear(c.slots)
		clear(c.byLine)
	}
}
