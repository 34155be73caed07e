package alloc

import "github.com/cgtviz/cgtviz/engine/device"

// freeSet is a pool's set of free blocks ordered like PyTorch's
// BlockComparatorSize: by stream, then size, then address. It is an
// intrusive treap (the links live in the blocks), so inserting and erasing
// allocate nothing and lower_bound is O(log n). Priorities are a hash of the
// address, which keeps the shape, and so every result, deterministic.
type freeSet struct {
	root *block
	n    int
}

// less orders blocks by (stream, size, ptr).
func less(x, y *block) bool {
	if x.stream != y.stream {
		return x.stream < y.stream
	}
	if x.size != y.size {
		return x.size < y.size
	}
	return x.ptr < y.ptr
}

// keyLess reports whether b orders before the search key (stream, size, 0).
func keyLess(b *block, stream device.Stream, size int64) bool {
	if b.stream != stream {
		return b.stream < stream
	}
	return b.size < size
}

func priority(p device.Ptr) uint64 {
	k := uint64(p)*0x9E3779B97F4A7C15 + 0x2545F4914F6CDD1D
	k = (k ^ k>>30) * 0xBF58476D1CE4E5B9
	k = (k ^ k>>27) * 0x94D049BB133111EB
	return k ^ k>>31
}

// insert and remove save, through a's journal, each block whose fields
// they change (keepBlock): the block itself and those whose links change,
// expected O(1) of them; a.freeInsert and a.freeRemove save the pool.
func (s *freeSet) insert(a *Allocator, b *block) {
	a.keepBlock(b)
	b.left, b.right = nil, nil
	b.prio = priority(b.ptr)
	b.inFree = true
	s.root = treapInsert(a, s.root, b)
	s.n++
}

func treapInsert(a *Allocator, root, b *block) *block {
	if root == nil {
		return b
	}
	if less(b, root) {
		l := treapInsert(a, root.left, b)
		if l != root.left {
			a.keepBlock(root)
			root.left = l
		}
		if l.prio > root.prio {
			a.keepBlock(l)
			root.left, l.right = l.right, root
			return l
		}
		return root
	}
	r := treapInsert(a, root.right, b)
	if r != root.right {
		a.keepBlock(root)
		root.right = r
	}
	if r.prio > root.prio {
		a.keepBlock(r)
		root.right, r.left = r.left, root
		return r
	}
	return root
}

func (s *freeSet) remove(a *Allocator, b *block) {
	a.keepBlock(b)
	s.root = treapRemove(a, s.root, b)
	b.left, b.right = nil, nil
	b.inFree = false
	s.n--
}

func treapRemove(a *Allocator, root, b *block) *block {
	if root == b {
		return treapMerge(a, b.left, b.right)
	}
	if less(b, root) {
		if l := treapRemove(a, root.left, b); l != root.left {
			a.keepBlock(root)
			root.left = l
		}
	} else if r := treapRemove(a, root.right, b); r != root.right {
		a.keepBlock(root)
		root.right = r
	}
	return root
}

func treapMerge(a *Allocator, x, y *block) *block {
	switch {
	case x == nil:
		return y
	case y == nil:
		return x
	case x.prio > y.prio:
		if r := treapMerge(a, x.right, y); r != x.right {
			a.keepBlock(x)
			x.right = r
		}
		return x
	default:
		if l := treapMerge(a, x, y.left); l != y.left {
			a.keepBlock(y)
			y.left = l
		}
		return y
	}
}

// lowerBound returns the first block not ordered before (stream, size, 0),
// or nil.
func (s *freeSet) lowerBound(stream device.Stream, size int64) *block {
	var res *block
	for cur := s.root; cur != nil; {
		if keyLess(cur, stream, size) {
			cur = cur.right
		} else {
			res = cur
			cur = cur.left
		}
	}
	return res
}

// before returns the last block ordered before (stream, size, 0), or nil.
func (s *freeSet) before(stream device.Stream, size int64) *block {
	var res *block
	for cur := s.root; cur != nil; {
		if keyLess(cur, stream, size) {
			res = cur
			cur = cur.right
		} else {
			cur = cur.left
		}
	}
	return res
}

// predecessor returns the block ordered just before b, or nil.
func (s *freeSet) predecessor(b *block) *block {
	var res *block
	for cur := s.root; cur != nil; {
		if less(cur, b) {
			res = cur
			cur = cur.right
		} else {
			cur = cur.left
		}
	}
	return res
}

// each calls f on every block in order.
func (s *freeSet) each(f func(*block)) {
	var walk func(*block)
	walk = func(b *block) {
		if b == nil {
			return
		}
		walk(b.left)
		f(b)
		walk(b.right)
	}
	walk(s.root)
}
