package sim

import (
	"slices"
	"testing"
)

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

// TestTableUndo checks that undo puts back every entry as it was at begin,
// across chunks, rewrites of one handle, removals, new chunks and a share
// in between (which must not see the undo), and that nothing is logged
// outside begin and end.
func TestTableUndo(t *testing.T) {
	v := func(n int) *int { return &n }
	read := func(tab *table[int], hs ...uint64) []int {
		var out []int
		for _, h := range hs {
			got := 0
			if p := tab.get(h); p != nil {
				got = *p
			}
			out = append(out, got)
		}
		return out
	}
	handles := []uint64{1, 5, 255, 256, 300, 599, 700, 1 << 12}
	cases := []struct {
		name   string
		writes func(a *table[int])
	}{
		{"nothing", func(a *table[int]) {}},
		{"one write", func(a *table[int]) { a.set(5, v(-5)) }},
		{"rewrites", func(a *table[int]) { a.set(5, v(-5)); a.set(5, v(-50)); a.set(5, nil) }},
		{"removal", func(a *table[int]) { a.set(300, nil) }},
		{"new chunks", func(a *table[int]) { a.set(700, v(700)); a.set(1<<12, v(9)) }},
		{"across chunks", func(a *table[int]) {
			for h := uint64(1); h <= 600; h += 7 {
				a.set(h, v(-int(h)))
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := newTable[int]()
			for h := uint64(1); h <= 600; h++ {
				a.set(h, v(int(h)))
			}
			if len(a.log) != 0 {
				t.Fatalf("%d writes logged with no mark", len(a.log))
			}
			before := read(&a, handles...)
			a.begin()
			c.writes(&a)
			shared := a.share()
			after := read(&shared, handles...)
			a.set(256, v(-256)) // after the share: still undone
			a.undo()
			if got := read(&a, handles...); !slices.Equal(got, before) {
				t.Errorf("after undo %v, want %v", got, before)
			}
			if got := read(&shared, handles...); !slices.Equal(got, after) {
				t.Errorf("the share saw the undo: %v, want %v", got, after)
			}
			a.set(1, v(11))
			if a.logging || len(a.log) != 0 {
				t.Errorf("logging after undo: %v, %d entries", a.logging, len(a.log))
			}
		})
	}
}
