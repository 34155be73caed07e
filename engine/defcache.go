package engine

import "hash/maphash"

// defCache is a direct-mapped cache of the defs by name in front of
// Engine.defs, for the call path. A trace read from a file hands out the
// records of a repeated line with one copy of its strings (the reader's
// memo), so a call's name and the slot's share their bytes and the
// comparison reads neither: a hit touches the slot and the def, where the
// map's probe touched its group, its slot and the key's bytes too, each a
// miss in a program of ten thousand functions called in turn. Names that
// share nothing still compare equal by content; a miss falls back to the
// map. It holds defs, which never change once made; the def record's undo
// drops its slot.
type defCache struct {
	slots []defSlot
}

type defSlot struct {
	name string
	d    *defn
}

// defSeed hashes the names of every engine's cache: the slot of a name
// needs no secret, only a spread.
var defSeed = maphash.MakeSeed()

// defCacheMax bounds the slots (24 bytes each): 1.5 MB at most.
const defCacheMax = 1 << 16

func (c *defCache) slot(name string) *defSlot {
	return &c.slots[maphash.String(defSeed, name)&uint64(len(c.slots)-1)]
}

// def returns the def named name, nil when there is none.
func (e *Engine) def(name string) *defn {
	c := &e.defCache
	if len(c.slots) > 0 {
		if s := c.slot(name); s.d != nil && s.name == name {
			return s.d
		}
	}
	d := e.defs[name]
	if d == nil {
		return nil
	}
	// Twice the defs' count, so that few collide; remade (empty) as
	// they grow.
	if want := 2 * len(e.defs); len(c.slots) < want && len(c.slots) < defCacheMax {
		n := 64
		for n < want && n < defCacheMax {
			n *= 2
		}
		c.slots = make([]defSlot, n)
	}
	*c.slot(name) = defSlot{name: name, d: d}
	return d
}

// forget drops name's slot (its def is being undone).
func (c *defCache) forget(name string) {
	if len(c.slots) == 0 {
		return
	}
	if s := c.slot(name); s.name == name {
		*s = defSlot{}
	}
}
