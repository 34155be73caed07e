package alloc

import (
	"math/rand/v2"
	"testing"
)

// TestPtrMap checks the table against the built-in map over random puts
// and deletes, with clustered keys (block addresses) to stress probing.
func TestPtrMap(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var m ptrMap
	ref := map[Ptr]*block{}
	blocks := make([]block, 64)
	for step := 0; step < 200_000; step++ {
		p := Ptr(1+r.IntN(5000)) * 512
		if r.IntN(3) == 0 {
			m.del(p)
			delete(ref, p)
		} else {
			b := &blocks[r.IntN(len(blocks))]
			m.put(p, b)
			ref[p] = b
		}
		if step%1000 == 0 || step > 199_000 {
			if m.len() != len(ref) {
				t.Fatalf("step %d: %d entries, want %d", step, m.len(), len(ref))
			}
			for k, v := range ref {
				if m.get(k) != v {
					t.Fatalf("step %d: get %#x wrong", step, uint64(k))
				}
			}
			n := 0
			m.each(func(k Ptr, v *block) {
				n++
				if ref[k] != v {
					t.Fatalf("step %d: each gave %#x", step, uint64(k))
				}
			})
			if n != len(ref) {
				t.Fatalf("each visited %d", n)
			}
		}
		if got := m.get(Ptr(5001+r.IntN(100)) * 512); got != nil {
			t.Fatal("absent key found")
		}
	}
}
