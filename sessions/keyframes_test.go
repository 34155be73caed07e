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

// TestLocalFrames walks back from the end of a trace whose keyframe
// interval is split into localPerInterval local keyframes: at most
// localKeep of them are held, each within localKeep local spacings of the
// position; every back lands on the state of a session that only ever
// went forward; and a jump to another interval drops them (KeyframeBytes
// falls back to the keyframes' own) where one inside it keeps them.
func TestLocalFrames(t *testing.T) {
	const records, every = 2000, 512
	tr := replayTrace(records)
	tests := []struct {
		name  string
		backs int
		// jump is where to go after the backs; -1: nowhere.
		jump int
		// wantLocal is how many local keyframes are held at the end.
		wantLocal int
	}{
		{"one back", 1, -1, localKeep},
		{"walk back past the kept frames", localKeep*every/localPerInterval + 20, -1, localKeep},
		{"a jump to another interval", 5, 100, 0},
		{"a jump inside the interval", 5, records - 40, localKeep},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(tr, Options{KeyframeEvery: every, MaxKeyframes: 1000, KeyframeBytes: -1})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Goto(s.Len()); err != nil {
				t.Fatal(err)
			}
			kfHeld, _ := s.KeyframeBytes()
			step := max(s.kf.every/localPerInterval, 1)
			for k := range tt.backs {
				if err := s.Back(); err != nil {
					t.Fatal(err)
				}
				if n := len(s.local.list); n > localKeep {
					t.Fatalf("back %d: %d local keyframes held, want at most %d", k, n, localKeep)
				}
				for _, f := range s.local.list {
					if f.pos > s.pos+localKeep*step || f.pos <= s.pos-localKeep*step {
						t.Fatalf("back %d at %d: a local keyframe at %d, more than %d records away", k, s.pos, f.pos, localKeep*step)
					}
				}
				ref, err := New(tr, Options{KeyframeBytes: -1})
				if err != nil {
					t.Fatal(err)
				}
				if err := ref.Goto(s.pos); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(canonical(s.State()), canonical(ref.State())) {
					t.Fatalf("back %d: at %d the state differs from a forward run's", k, s.pos)
				}
			}
			if tt.jump >= 0 {
				if err := s.Goto(tt.jump); err != nil {
					t.Fatal(err)
				}
			}
			if n := len(s.local.list); n != tt.wantLocal {
				t.Errorf("%d local keyframes at the end, want %d", n, tt.wantLocal)
			}
			held, _ := s.KeyframeBytes()
			if tt.wantLocal == 0 && held != kfHeld {
				t.Errorf("keyframes hold %d bytes after the jump, want the %d of the keyframes alone", held, kfHeld)
			}
		})
	}
}

// TestOnGrow: the session tells Options.OnGrow the tree's nodes as it
// grows, each time by an eighth and at least 64 more than the last, never
// more often, ending within that of the tree's size; going back and
// forward again over executed records tells nothing more.
func TestOnGrow(t *testing.T) {
	for _, nodes := range []int{10, 100, 1000} {
		t.Run(fmt.Sprint(nodes), func(t *testing.T) {
			var told []int
			s, err := New(gen.TreeTrace(nodes, nodes), Options{OnGrow: func(n int) { told = append(told, n) }})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Goto(s.Len()); err != nil {
				t.Fatal(err)
			}
			last := 0
			for _, n := range told {
				if n < last+max(last/8, 64) {
					t.Errorf("told %d after %d: want at least %d", n, last, last+max(last/8, 64))
				}
				last = n
			}
			if got := s.State().Counters.Recordings; got != nodes {
				t.Fatalf("%d nodes recorded, want %d", got, nodes)
			}
			if nodes-last >= max(last/8, 64) {
				t.Errorf("last told %d of %d nodes: want within %d", last, nodes, max(last/8, 64))
			}
			if nodes >= 64 && len(told) == 0 {
				t.Errorf("never told of %d nodes", nodes)
			}
			n := len(told)
			if err := s.Goto(s.Len() / 3); err != nil {
				t.Fatal(err)
			}
			if err := s.Goto(s.Len()); err != nil {
				t.Fatal(err)
			}
			if len(told) != n {
				t.Errorf("going back and forward again told %v more", told[n:])
			}
		})
	}
}
