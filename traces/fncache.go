package traces

import (
	"slices"
	"unsafe"
)

// fnCache finds a call's def in front of checker.funcs. A trace read from
// a file hands out the records of a repeated line with one copy of its
// strings (the reader's memo), so the slot of a call's function name is
// chosen by the address of the name's bytes, and a hit compares the name
// with the slot's by that address and length (Go's string comparison
// compares the addresses first): it reads one slot, never the name's
// bytes, where the map hashed them and probed its group, its slot and the
// key's bytes, each a cache miss in a program of ten thousand functions
// called in turn. A name met at another address (a line the memo no
// longer holds) compares by content in its own slot, or misses and is
// looked up in the map; so the answer never depends on the cache.
//
// Sets of two slots (the last name found first) keep two names whose
// addresses share a set from evicting each other at every call; the sets
// number twice the defs' count, rounded up to a power of two, and are
// remade empty as the defs grow. With 0.3 names a set, about 4% of the
// names share theirs with two others, which a round robin over all of
// them evicts at every call (12% with 0.6 a set, as half as many sets
// gave: measured at 10,000 defs, that was a tenth of the calls' time). A slot holds the name it
// was filled with, which keeps those bytes alive: the address cannot be
// reused for another name while the slot has it.
type fnCache struct {
	sets  []fnSet
	shift uint // 64 - log2(len(sets))
	// byLine are slots by the call's Record.LineKey, in front of sets:
	// the keys come in the order the lines first came, so a loop over
	// its functions reads these in order (fetched ahead by the
	// processor), where sets, by the name's address, is a random one.
	byLine []fnSlot
}

type fnSet [2]fnSlot

type fnSlot struct {
	name string
	idx  int32
}

// fnCacheMaxSets bounds the cache at 1.5 MB (48 bytes a set): 16,384
// defs get their 0.5 a set.
const fnCacheMaxSets = 1 << 15

// set returns the set of name's address: Fibonacci hashing of the
// address, whose low bits an allocator's alignment makes constant.
func (fc *fnCache) set(name string) *fnSet {
	p := uint64(uintptr(unsafe.Pointer(unsafe.StringData(name))))
	return &fc.sets[(p*0x9E3779B97F4A7C15)>>fc.shift]
}

// fnIndexOf returns the index in c.defs of the def that rec calls, or
// false when no def has that name. A def is never dropped nor renamed,
// so a slot that holds the record's name holds its def.
func (c *checker) fnIndexOf(rec *Record) (int32, bool) {
	k := int(rec.memoKey)
	if k == 0 || rec.Fn == "" {
		return c.fnIndex(rec.Fn)
	}
	fc := &c.fnCache
	if k < len(fc.byLine) && fc.byLine[k].name == rec.Fn {
		return fc.byLine[k].idx, true
	}
	i, ok := c.fnIndex(rec.Fn)
	if !ok {
		return 0, false
	}
	if k >= len(fc.byLine) {
		// memoKey is at most memoLines.
		n := min(memoLines, 2*k) + 1
		fc.byLine = slices.Grow(fc.byLine, n-len(fc.byLine))[:n]
	}
	fc.byLine[k] = fnSlot{name: rec.Fn, idx: i}
	return i, true
}

// fnIndex returns the index of the def named name in c.defs, or false
// when no def has that name.
func (c *checker) fnIndex(name string) (int32, bool) {
	fc := &c.fnCache
	if len(fc.sets) > 0 && name != "" { // an empty slot's name is ""
		s := fc.set(name)
		if s[0].name == name {
			return s[0].idx, true
		}
		if s[1].name == name {
			s[0], s[1] = s[1], s[0]
			return s[0].idx, true
		}
	}
	i, ok := c.funcs[name]
	if !ok {
		return 0, false
	}
	if want := 2 * len(c.defs); len(fc.sets) < want && len(fc.sets) < fnCacheMaxSets {
		n, bits := 16, uint(4)
		for n < want && n < fnCacheMaxSets {
			n, bits = 2*n, bits+1
		}
		fc.sets, fc.shift = make([]fnSet, n), 64-bits
	}
	s := fc.set(name)
	s[1], s[0] = s[0], fnSlot{name: name, idx: i}
	return i, true
}
