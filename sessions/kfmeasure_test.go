package sessions

import (
	"runtime"
	"testing"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/traces"
	"github.com/cgtviz/cgtviz/traces/gen"
)

// TestKeyframeCostMeasured checks the byte budget's accounting against
// what keyframes hold: it runs a session to the end of a trace, then
// drops every keyframe but the first, and takes the heap freed as what
// they cost. The count (keyframeCost, summed) must be at least that, or
// the cap would let memory past it, and at most a few times it, or the
// cap would thin keyframes (and slow going back) for memory never used.
// The trees grow and then replay, so the live engine's replays have made
// the keyframes copies of their own (what a keyframe costs at the end of
// a run, not right after its clone).
func TestKeyframeCostMeasured(t *testing.T) {
	tests := []struct {
		name  string
		tr    *traces.Trace
		every int
	}{
		{"one node, replays", replayTrace(4000), 256},
		{"100 nodes", gen.TreeTrace(100, 2000), 256},
		{"1000 nodes", gen.TreeTrace(1000, 4000), 1024},
		{"3000 nodes", gen.TreeTrace(3000, 6000), 2048},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(tt.tr, Options{KeyframeEvery: tt.every, MaxKeyframes: 1 << 20, KeyframeBytes: -1})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Goto(s.Len()); err != nil {
				t.Fatal(err)
			}
			s.local.drop(0)
			s.steps, s.stepOrder = map[int]*engine.Step{}, nil
			var counted int64
			for _, f := range s.kf.list[1:] {
				counted += f.bytes
			}
			with := heap()
			kept := s.kf.list[0]
			clear(s.kf.list)
			s.kf.list = append(s.kf.list[:0], kept)
			without := heap()
			runtime.KeepAlive(s)
			measured := int64(with) - int64(without)
			n := s.Len() / tt.every
			t.Logf("%d keyframes: counted %.0f KB, measured %.0f KB a keyframe (%.2fx)", n, float64(counted)/float64(n)/1024, float64(measured)/float64(n)/1024, float64(counted)/float64(measured))
			if counted < measured {
				t.Errorf("keyframes counted %d bytes, hold %d: the budget undercounts", counted, measured)
			}
			if counted > 3*measured {
				t.Errorf("keyframes counted %d bytes, hold %d: more than 3x", counted, measured)
			}
		})
	}
}
