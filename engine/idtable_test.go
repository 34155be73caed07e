package engine

import (
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestIDTable drives an idTable and a map with the same random sets and
// deletes (IDs spread over several pages, some pages emptied) and checks
// that the table answers as the map does, yields its entries in ID order,
// and keeps no page without an entry.
func TestIDTable(t *testing.T) {
	for _, c := range []struct {
		name    string
		ids     int // IDs drawn from 1..ids
		ops     int
		delRate float64
	}{
		{"one page", 200, 2000, 0.3},
		{"many pages", 5000, 20000, 0.5},
		{"mostly deleted", 3000, 20000, 0.9},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, uint64(c.ids)))
			var tab idTable[int]
			want := map[int]*int{}
			for i := 0; i < c.ops; i++ {
				id := 1 + r.IntN(c.ids)
				if r.Float64() < c.delRate {
					tab.del(id)
					delete(want, id)
				} else {
					v := i
					tab.set(id, &v)
					want[id] = &v
				}
			}
			if tab.len() != len(want) {
				t.Fatalf("len %d, want %d", tab.len(), len(want))
			}
			for id := -3; id <= c.ids+1000; id++ {
				if got := tab.get(id); got != want[id] {
					t.Fatalf("get(%d) = %p, want %p", id, got, want[id])
				}
			}
			var ids []int
			for id, v := range tab.all() {
				if want[id] != v {
					t.Fatalf("all yields %d: %p, want %p", id, v, want[id])
				}
				ids = append(ids, id)
			}
			if w := slices.Sorted(maps.Keys(want)); !slices.Equal(ids, w) {
				t.Fatalf("all yields %d IDs out of order or missing, want %d", len(ids), len(w))
			}
			for p, pg := range tab.pages {
				if pg != nil && pg.n == 0 {
					t.Fatalf("page %d is kept with no entry", p)
				}
			}
		})
	}
}
