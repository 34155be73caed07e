package ui

import (
	"strings"
	"testing"
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
