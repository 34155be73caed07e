package engine

import "github.com/cgtviz/cgtviz/traces"

// call is one call record on its way through a device's tree manager: what
// PyTorch's CUDAGraphTreeManager._run receives (the function and its
// inputs), plus the record it came from, for messages and events, and the
// Step it fills in.
type call struct {
	f    *Function
	args []*Tensor
	rec  *traces.Record
	step *Step
}

// line is the trace line of the call.
func (c *call) line() int { return c.rec.Line }

// emit adds an event of the current record.
func (m *manager) emit(ev Event) { m.eng.emit(ev) }
