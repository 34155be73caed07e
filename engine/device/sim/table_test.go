package sim

import "testing"

// TestTableCopyOnWrite checks that a shared table never sees the writes of
// the one it was shared from, nor the other way round, across chunks.
func TestTableCopyOnWrite(t *testing.T) {
	a := newTable[int]()
	v := func(n int) *int { return &n }
	for h := uint64(1); h <= 600; h++ {
		a.set(h, v(int(h)))
	}
	b := a.share()
	a.set(5, v(-5))     // first chunk, written after the share
	a.set(300, nil)     // second chunk, removed
	a.set(700, v(700))  // a new chunk
	b.set(599, v(-599)) // third chunk, written in the copy
	cases := []struct {
		tab  *table[int]
		h    uint64
		want int // 0: absent
	}{
		{&a, 5, -5}, {&b, 5, 5},
		{&a, 300, 0}, {&b, 300, 300},
		{&a, 700, 700}, {&b, 700, 0},
		{&a, 599, 599}, {&b, 599, -599},
		{&a, 1, 1}, {&b, 1, 1}, {&a, 0, 0}, {&a, 1 << 20, 0},
	}
	for _, c := range cases {
		got := 0
		if p := c.tab.get(c.h); p != nil {
			got = *p
		}
		if got != c.want {
			t.Errorf("handle %d: %d, want %d", c.h, got, c.want)
		}
	}
	n, last := 0, uint64(0)
	b.each(func(h uint64, _ *int) {
		if h <= last {
			t.Errorf("each went from %d to %d", last, h)
		}
		last = h
		n++
	})
	if n != 600 {
		t.Errorf("each visited %d entries, want 600", n)
	}
}
