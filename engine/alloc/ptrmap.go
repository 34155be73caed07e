package alloc

// ptrMap maps the address of every allocated block to the block
// (PyTorch's allocated_blocks). It is an open-addressing table with linear
// probing and backward-shift deletion: the malloc/free hot path does three
// lookups in it, and the built-in map costs more than everything else
// there.
type ptrMap struct {
	slots []ptrSlot
	n     int
	shift uint8 // 64 - log2(len(slots))
}

type ptrSlot struct {
	key Ptr // 0: empty (no block starts at address 0)
	val *block
}

func (m *ptrMap) home(p Ptr) int {
	return int((uint64(p) * 0x9E3779B97F4A7C15) >> m.shift)
}

func (m *ptrMap) get(p Ptr) *block {
	if m.n == 0 {
		return nil
	}
	mask := len(m.slots) - 1
	for i := m.home(p); ; i = (i + 1) & mask {
		s := &m.slots[i]
		if s.key == p {
			return s.val
		}
		if s.key == 0 {
			return nil
		}
	}
}

func (m *ptrMap) put(p Ptr, b *block) {
	if (m.n+1)*4 > len(m.slots)*3 {
		m.grow()
	}
	mask := len(m.slots) - 1
	for i := m.home(p); ; i = (i + 1) & mask {
		s := &m.slots[i]
		if s.key == p {
			s.val = b
			return
		}
		if s.key == 0 {
			s.key, s.val = p, b
			m.n++
			return
		}
	}
}

func (m *ptrMap) grow() {
	old := m.slots
	size := max(16, 2*len(old))
	m.slots = make([]ptrSlot, size)
	m.shift = uint8(64 - log2(size))
	m.n = 0
	for _, s := range old {
		if s.key != 0 {
			m.put(s.key, s.val)
		}
	}
}

func log2(n int) int {
	k := 0
	for 1<<k < n {
		k++
	}
	return k
}

func (m *ptrMap) del(p Ptr) {
	if m.n == 0 {
		return
	}
	mask := len(m.slots) - 1
	i := m.home(p)
	for {
		if m.slots[i].key == p {
			break
		}
		if m.slots[i].key == 0 {
			return
		}
		i = (i + 1) & mask
	}
	// Shift back the entries that probed past the hole.
	for j := (i + 1) & mask; m.slots[j].key != 0; j = (j + 1) & mask {
		h := m.home(m.slots[j].key)
		// Move j into i when its home is not in the cyclic range (i, j].
		if (j > i && (h <= i || h > j)) || (j < i && h <= i && h > j) {
			m.slots[i] = m.slots[j]
			i = j
		}
	}
	m.slots[i] = ptrSlot{}
	m.n--
}

func (m *ptrMap) len() int { return m.n }

// each calls f on every entry, in table order.
func (m *ptrMap) each(f func(Ptr, *block)) {
	for _, s := range m.slots {
		if s.key != 0 {
			f(s.key, s.val)
		}
	}
}
