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

func (s *freeSet) insert(b *block) {
	b.left, b.right = nil, nil
	b.prio = priority(b.ptr)
	b.inFree = true
	s.root = treapInsert(s.root, b)
	s.n++
}

func treapInsert(root, b *block) *block {
	if root == nil {
		return b
	}
	if less(b, root) {
		root.left = treapInsert(root.left, b)
		if root.left.prio > root.prio {
			l := root.left
			root.left, l.right = l.right, root
			return l
		}
		return root
	}
	root.right = treapInsert(root.right, b)
	if root.right.prio > root.prio {
		r := root.right
		root.right, r.left = r.left, root
		return r
	}
	return root
}

func (s *freeSet) remove(b *block) {
	s.root = treapRemove(s.root, b)
	b.left, b.right = nil, nil
	b.inFree = false
	s.n--
}

func treapRemove(root, b *block) *block {
	if root == b {
		return treapMerge(b.left, b.right)
	}
	if less(b, root) {
		root.left = treapRemove(root.left, b)
	} else {
		root.right = treapRemove(root.right, b)
	}
	return root
}

func treapMerge(x, y *block) *block {
	switch {
	case x == nil:
		return y
	case y == nil:
		return x
	case x.prio > y.prio:
		x.right = treapMerge(x.right, y)
		return x
	default:
		y.left = treapMerge(x, y.left)
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
