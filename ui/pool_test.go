package ui

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/cgtviz/cgtviz/engine"
)

// TestPoolListsLiveHolders opens the two cases: a block lists the
// live tensors that hold it, and the stale names apart, marked stale.
func TestPoolListsLiveHolders(t *testing.T) {
	cases := []struct {
		name, trace, line string
		want, not         []string
	}{
		// s07 line 6: a was freed by the new generation, c now holds its block.
		{"s07-line6", "../examples/s07-chain-handoff.cgt.jsonl", "6",
			[]string{"█ c (stale: a) 512 B"}, []string{"a,c", "c,a"}},
		// s08 line 16: out2 is stale, out4 and out5 hold the block.
		{"s08-line16", "../examples/s08-overwritten-errors.cgt.jsonl", "16",
			[]string{"out4,out5 (stale: out2) 16 B", "× stale: out 16 B"}, []string{"out2,out4", "▒ out2"}},
		// After torch._dynamo.reset(): the old tree's pool still holds old,
		// which no manager will record over.
		{"reset-line14", "../engine/testdata/reset-one-device.cgt.jsonl", "14",
			[]string{"graph pool of a dropped tree (0,1)", "1 live-invisible", "records into this pool any more"},
			[]string{"checkpoints the pool first"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := newModel(t, c.trace, 120, 40, Options{})
			command(t, m, "line "+c.line)
			press(t, m, "2")
			got := screenText(m)
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("the pool lacks %q:\n%s", w, got)
				}
			}
			for _, w := range c.not {
				if strings.Contains(got, w) {
					t.Errorf("the pool shows %q (a dead name as a holder):\n%s", w, got)
				}
			}
			checkGolden(t, "pool-"+c.name+"-120x40", got)
		})
	}
}

// TestTensorsByName: a name's tensor is its first live one, else its
// last; every tensor of a name several carry is listed, in order; the
// index of a state without repeated names lists none.
func TestTensorsByName(t *testing.T) {
	live, stale := engine.TensorLive, engine.TensorStale
	st := &engine.State{Tensors: []engine.TensorView{
		{Names: []string{"a"}, State: stale},      // 0
		{Names: []string{"a", "b"}, State: live},  // 1
		{Names: []string{"a"}, State: live},       // 2
		{Names: []string{"c"}, State: stale},      // 3
		{Names: []string{"c"}, State: stale},      // 4
		{Names: []string{"d", "d"}, State: stale}, // 5: one tensor, the name twice
		{Names: []string{"e"}, State: live},       // 6
		{Names: []string{"e"}, State: stale},      // 7
	}}
	x := tensorsByName(st)
	wantPos := map[string]int32{"a": 1, "b": 1, "c": 4, "d": 5, "e": 6}
	wantMore := map[string][]int32{"a": {0, 1, 2}, "c": {3, 4}, "d": {5, 5}, "e": {6, 7}}
	if !maps.Equal(x.pos, wantPos) {
		t.Errorf("pos = %v, want %v", x.pos, wantPos)
	}
	if !maps.EqualFunc(x.more, wantMore, slices.Equal) {
		t.Errorf("more = %v, want %v", x.more, wantMore)
	}
	if ts := x.all("a"); len(ts) != 3 || ts[2] != &st.Tensors[2] {
		t.Errorf("all(a) = %v", ts)
	}
	if x.liveIn("c", 0, 1<<40) || !x.liveIn("e", 0, 1<<40) {
		t.Error("c has no live tensor, e has one")
	}
	one := tensorsByName(&engine.State{Tensors: st.Tensors[6:7]})
	if len(one.more) != 0 || one.pos["e"] != 0 {
		t.Errorf("one tensor: %+v", one)
	}
	if empty := tensorsByName(nil); len(empty.pos) != 0 || len(empty.all("a")) != 0 {
		t.Errorf("no state: %+v", empty)
	}
}

// TestWrapBreaksLongWords: wrap keeps words whole where they fit, and
// breaks one longer than a line (a path, after the last '/' that fits,
// else at the width) so that its end, the line number, is shown.
func TestWrapBreaksLongWords(t *testing.T) {
	cases := []struct {
		text string
		w    int
		want []string
	}{
		{"read a at x", 10, []string{"read a at", "x"}},
		{"at /work/main/traces/programs/train_mistakes.py:40 (in <module>)", 24,
			[]string{"at", "/work/main/traces/", "programs/", "train_mistakes.py:40 (in", "<module>)"}},
		{"abcdefghijklmnopqrstuvwxyz", 10, []string{"abcdefghij", "klmnopqrst", "uvwxyz"}},
		{"a/bcdefghijklmnop", 10, []string{"a/", "bcdefghijk", "lmnop"}},
		{"", 10, nil},
	}
	for _, c := range cases {
		got := wrap(c.text, c.w)
		if !slices.Equal(got, c.want) {
			t.Errorf("wrap(%q, %d) = %q, want %q", c.text, c.w, got, c.want)
		}
		for _, l := range got {
			if n := len([]rune(l)); n > c.w {
				t.Errorf("wrap(%q, %d): line %q is %d wide", c.text, c.w, l, n)
			}
		}
	}
}
