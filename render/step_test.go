package render

import (
	"errors"
	"testing"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/traces"
)

func TestSetStep(t *testing.T) {
	ckpt := []engine.Event{{Kind: engine.EvCheckpoint, Node: 0, Delta: &engine.CheckpointView{Node: 0}}}
	tests := []struct {
		name string
		step *engine.Step
		want TreeOptions
	}{
		{"nil", nil, TreeOptions{StepNode: -1, StepCheckpointNode: -1}},
		{"replay", &engine.Step{Index: 22, Line: 23, Op: traces.OpCall, Fn: "foo", Action: engine.ActionReplay, Node: 0, Parent: -1},
			TreeOptions{StepAction: StepReplayed, StepNode: 0, StepCheckpointNode: -1, StepLine: 23, StepText: "line 23: call foo: replay #0"}},
		{"record after checkpoint", &engine.Step{Index: 30, Line: 32, Op: traces.OpCall, Fn: "fee", Device: 1, Action: engine.ActionRecord, Node: 2, Parent: 0, Checkpoint: true, Events: ckpt},
			TreeOptions{StepAction: StepRecorded, StepDevice: 1, StepNode: 2, StepCheckpoint: true, StepCheckpointNode: 0, StepLine: 32, StepText: "line 32: call fee: record #2 after a checkpoint"}},
		{"warmup", &engine.Step{Index: 5, Line: 7, Op: traces.OpCall, Fn: "foo", Action: engine.ActionWarmup, Node: -1, Parent: -1},
			TreeOptions{StepAction: StepWarmed, StepNode: -1, StepCheckpointNode: -1, StepLine: 7, StepText: "line 7: call foo: warmup"}},
		{"checkpoint without graph", &engine.Step{Index: 8, Line: 9, Op: traces.OpCall, Fn: "foo", Action: engine.ActionEager, Node: -1, Parent: -1, Checkpoint: true, Events: ckpt},
			TreeOptions{StepAction: StepCheckpointed, StepNode: 0, StepCheckpoint: true, StepCheckpointNode: 0, StepLine: 9, StepText: "line 9: call foo: eager after a checkpoint"}},
		{"error", &engine.Step{Index: 3, Line: 4, Op: traces.OpRead, Node: -1, Parent: -1, Err: &engine.Error{File: "t", Line: 4, What: "read", Err: errors.New("stale")}},
			TreeOptions{StepNode: -1, StepCheckpointNode: -1, StepLine: 4, StepText: "line 4: read (error)"}},
		{"non-call", &engine.Step{Index: 1, Line: 5, Op: traces.OpStep, Node: -1, Parent: -1},
			TreeOptions{StepNode: -1, StepCheckpointNode: -1, StepLine: 5, StepText: "line 5: step"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Fields SetStep does not own must survive it.
			got := TreeOptions{RankDir: "LR", StepAction: StepReplayed, StepNode: 7}
			got.SetStep(tc.step)
			tc.want.RankDir = "LR"
			if got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}
