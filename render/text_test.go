package render

import (
	"testing"

	"github.com/cgtviz/cgtviz/engine"
)

func TestTreeText(t *testing.T) {
	deep := bigState(7)
	twoRoots := handState()
	twoRoots.Devices[0].Roots = []int{0, 1}
	twoRoots.Devices[0].Nodes[0].Children = []int{2}
	twoRoots.Devices[0].Nodes[1].Parent = -1
	warmBelow := handState()
	warmBelow.Devices[0].Warmups = []engine.WarmupView{{ID: -1, Fn: "bar", Line: 40, Parent: 2}}
	warmBelow.Devices[0].CurrentWarmup = -1
	cycle := handState()
	cycle.Devices[0].Nodes[2].Children = []int{0}
	tests := []struct {
		name string
		st   *engine.State
		dev  int
		want string
	}{
		{"seed A shape", handState(), 0, "" +
			"#0 foo (replays 2) [path]\n" +
			"├─ #1 fee (replays 1)\n" +
			"└─ #2 fee (replays 0) [current]\n"},
		{"nested", deep, 0, "" +
			"#0 fn (replays 0) [path]\n" +
			"├─ #1 fnx (replays 1) [path]\n" +
			"│  ├─ #3 fnxxx (replays 3) [current]\n" +
			"│  └─ #4 fnxxxx (replays 4)\n" +
			"└─ #2 fnxx (replays 2)\n" +
			"   ├─ #5 fn (replays 5)\n" +
			"   └─ #6 fnx (replays 6)\n"},
		{"two roots", twoRoots, 0, "" +
			"#0 foo (replays 2) [path]\n" +
			"└─ #2 fee (replays 0) [current]\n" +
			"#1 fee (replays 1)\n"},
		{"warmup chain", warmState(), 0, "" +
			"~ warmup -1 foo (line 6)\n" +
			"└─ ~ warmup -2 fee (line 9) [current]\n"},
		{"warmup below a node", warmBelow, 0, "" +
			"#0 foo (replays 2) [path]\n" +
			"├─ #1 fee (replays 1)\n" +
			"└─ #2 fee (replays 0) [current]\n" +
			"   └─ ~ warmup -1 bar (line 40) [current]\n"},
		{"cycle drawn once", cycle, 0, "" +
			"#0 foo (replays 2) [path]\n" +
			"├─ #1 fee (replays 1)\n" +
			"└─ #2 fee (replays 0) [current]\n"},
		{"empty device", warmState(), 1, "(no graphs recorded)\n"},
		{"no device", handState(), 4, "(no device 4: the state has 1)\n"},
		{"nil state", nil, 0, "(no state)\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := TreeText(tc.st, tc.dev); got != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}
