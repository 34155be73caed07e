package engine

import "iter"

// idTable holds the tensors or the storages by ID (dense, from 1, never
// reused) in pages of 1<<idPageBits: a lookup is two indexed reads, where
// a map of ten thousand cached outputs cost a probe of its groups for
// every output a replay hands back. A page whose objects all left the
// table is dropped, so the table holds pages for the objects in it,
// however many were ever made.
type idTable[T any] struct {
	pages []*idPage[T]
	n     int
}

const idPageBits = 8

type idPage[T any] struct {
	n int // entries set
	e [1 << idPageBits]*T
}

// get returns the entry of id, nil when there is none.
func (t *idTable[T]) get(id int) *T {
	p := uint(id) >> idPageBits
	if p >= uint(len(t.pages)) {
		return nil
	}
	pg := t.pages[p]
	if pg == nil {
		return nil
	}
	return pg.e[uint(id)&(1<<idPageBits-1)]
}

// set makes v (not nil) the entry of id (positive).
func (t *idTable[T]) set(id int, v *T) {
	p := uint(id) >> idPageBits
	for uint(len(t.pages)) <= p {
		t.pages = append(t.pages, nil)
	}
	pg := t.pages[p]
	if pg == nil {
		pg = &idPage[T]{}
		t.pages[p] = pg
	}
	slot := &pg.e[uint(id)&(1<<idPageBits-1)]
	if *slot == nil {
		pg.n++
		t.n++
	}
	*slot = v
}

// del removes the entry of id, if any.
func (t *idTable[T]) del(id int) {
	p := uint(id) >> idPageBits
	if p >= uint(len(t.pages)) || t.pages[p] == nil {
		return
	}
	pg := t.pages[p]
	slot := &pg.e[uint(id)&(1<<idPageBits-1)]
	if *slot == nil {
		return
	}
	*slot = nil
	pg.n--
	t.n--
	if pg.n == 0 {
		t.pages[p] = nil
	}
}

// len is the number of entries.
func (t *idTable[T]) len() int { return t.n }

// all yields the entries in ID order.
func (t *idTable[T]) all() iter.Seq2[int, *T] {
	return func(yield func(int, *T) bool) {
		for p, pg := range t.pages {
			if pg == nil {
				continue
			}
			for i, v := range pg.e {
				if v != nil && !yield(p<<idPageBits|i, v) {
					return
				}
			}
		}
	}
}
