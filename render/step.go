package render

import (
	"fmt"
	"strconv"

	"github.com/cgtviz/cgtviz/engine"
)

// SetStep fills the step fields of o from s, the step that led to the state
// being drawn. A nil step, a failed one or one that ran no graph clears
// the highlight but keeps the caption.
func (o *TreeOptions) SetStep(s *engine.Step) {
	o.StepAction, o.StepNode, o.StepDevice = StepNone, -1, 0
	o.StepCheckpoint, o.StepCheckpointNode = false, -1
	o.StepText, o.StepLine = "", 0
	if s == nil {
		return
	}
	o.StepLine = s.Line
	o.StepText = fmt.Sprintf("line %d: %s", s.Line, s.Op)
	if s.Fn != "" {
		o.StepText += " " + s.Fn
	}
	if s.Err != nil {
		o.StepText += " (error)"
		return
	}
	o.StepDevice = s.Device
	switch s.Action {
	case engine.ActionRecord:
		o.StepAction, o.StepNode = StepRecorded, s.Node
	case engine.ActionReplay:
		o.StepAction, o.StepNode = StepReplayed, s.Node
	case engine.ActionWarmup:
		o.StepAction = StepWarmed
	}
	if s.Action != engine.ActionNone {
		o.StepText += ": " + string(s.Action)
		if s.Node >= 0 {
			o.StepText += " #" + strconv.Itoa(s.Node)
		}
	}
	if s.Checkpoint {
		o.StepCheckpoint = true
		for _, ev := range s.Events {
			if ev.Kind == engine.EvCheckpoint && ev.Delta != nil {
				o.StepCheckpointNode = ev.Delta.Node
			}
		}
		if o.StepAction == StepNone && o.StepCheckpointNode >= 0 {
			o.StepAction, o.StepNode = StepCheckpointed, o.StepCheckpointNode
		}
		o.StepText += " after a checkpoint"
	}
}
