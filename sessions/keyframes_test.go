package sessions

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/engine/device/sim"
	"github.com/cgtviz/cgtviz/traces/gen"
)

// sized is a simulated device that says each snapshot costs a fixed number
// of bytes, so that the byte cap's arithmetic can be checked exactly; its
// clones say the same.
type sized struct {
	*sim.Device
	bytes int64
}

func (d sized) SnapshotBytes() int64 { return d.bytes }

func (d sized) CloneDevice() (device.Device, error) {
	c, err := d.Device.CloneDevice()
	if err != nil {
		return nil, err
	}
	return sized{c.(*sim.Device), d.bytes}, nil
}

func sizedDevices(bytes int64) func(int) ([]device.Device, error) {
	return func(n int) ([]device.Device, error) {
		out := make([]device.Device, n)
		for i, d := range sim.Devices(n) {
			out[i] = sized{d.(*sim.Device), bytes}
		}
		return out, nil
	}
}

// TestKeyframeBytes runs a trace to its end under byte budgets and checks
// that the keyframes (local ones included) stay under the budget, that they
// thin by spacing rather than vanish, and that going back still lands on
// the same state as a session without a cap.
func TestKeyframeBytes(t *testing.T) {
	const records = 600
	tr := replayTrace(records)
	ref, err := New(tr, Options{KeyframeBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		per, budget int64
		// minFrames and maxFrames bound the keyframes kept at the end.
		minFrames, maxFrames int
	}{
		{per: 1 << 20, budget: -1, minFrames: records / DefaultKeyframeEvery, maxFrames: records/DefaultKeyframeEvery + 1},
		{per: 1 << 20, budget: 10 << 20, minFrames: 5, maxFrames: 10},
		{per: 1 << 20, budget: 3 << 20, minFrames: 2, maxFrames: 3},
		{per: 1 << 20, budget: 1 << 20, minFrames: 1, maxFrames: 2},
		// A clone bigger than the whole budget: only the first keyframe.
		{per: 1 << 30, budget: 1 << 20, minFrames: 1, maxFrames: 1},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("per=%d/budget=%d", tt.per, tt.budget), func(t *testing.T) {
			s, err := New(tr, Options{NewDevices: sizedDevices(tt.per), KeyframeBytes: tt.budget})
			if err != nil {
				t.Fatal(err)
			}
			if !s.Cloneable() {
				t.Fatal("a sized sim device must clone")
			}
			check := func(when string) {
				t.Helper()
				held, budget := s.KeyframeBytes()
				if budget != tt.budget {
					t.Fatalf("budget %d, want %d", budget, tt.budget)
				}
				// Keyframe 0 is always kept: it is the only one allowed
				// past the budget.
				if tt.budget > 0 && held > max(tt.budget, tt.per+hostBytesBase) {
					t.Errorf("%s: keyframes hold %d bytes, budget %d", when, held, tt.budget)
				}
			}
			if err := s.Goto(s.Len()); err != nil {
				t.Fatal(err)
			}
			check("at the end")
			n, every := s.Keyframes()
			if n < tt.minFrames || n > tt.maxFrames {
				t.Errorf("%d keyframes every %d, want %d..%d", n, every, tt.minFrames, tt.maxFrames)
			}
			// Back from the end takes local keyframes: they count too.
			for range 40 {
				if err := s.Back(); err != nil {
					t.Fatal(err)
				}
				check("stepping back")
			}
			for _, p := range []int{0, 7, records / 2, records - 1, 3} {
				if err := s.Goto(p); err != nil {
					t.Fatal(err)
				}
				if err := ref.Goto(p); err != nil {
					t.Fatal(err)
				}
				if got, want := canonical(s.State()), canonical(ref.State()); !reflect.DeepEqual(got, want) {
					t.Fatalf("at %d the capped session differs from the uncapped one", p)
				}
				check(fmt.Sprintf("at %d", p))
			}
		})
	}
}

// TestKeyframeBytesBigTree: a keyframe copies the tree on the host, so
// under one byte budget a big tree keeps fewer keyframes than a small one,
// and what they hold stays under the budget.
func TestKeyframeBytesBigTree(t *testing.T) {
	const budget = 8 << 20
	kept := map[int]int{}
	for _, nodes := range []int{10, 1000} {
		tr := gen.TreeTrace(nodes, 200)
		s, err := New(tr, Options{KeyframeBytes: budget})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Goto(s.Len()); err != nil {
			t.Fatal(err)
		}
		if held, _ := s.KeyframeBytes(); held > budget {
			t.Errorf("%d nodes: keyframes hold %d bytes, budget %d", nodes, held, budget)
		}
		kept[nodes], _ = s.Keyframes()
	}
	if kept[1000] >= kept[10] || kept[1000] < 2 {
		t.Errorf("keyframes kept under %d bytes: %d at 10 nodes, %d at 1000; want fewer (but some) for the big tree", budget, kept[10], kept[1000])
	}
}
