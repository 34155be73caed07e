package engine

import (
	"fmt"

	"github.com/cgtviz/cgtviz/engine/alloc"
	"github.com/cgtviz/cgtviz/traces"
)

// applyReset is a reset record: reset_cudagraph_trees() (torch._dynamo.reset()
// calls it) when the record names no device, or one device's
// TreeManagerContainer letting its manager go when the last of its compiled
// functions died. Either way the device's CUDAGraphTreeManager is shut down
// (shutdown: every node's cached tensors dropped, the graphs and the roots
// gone) and the next call on the device makes a new one: a new private
// pool, no functions, no nodes, the checkpoint counter at 0 and Dynamo's
// compile state of the device's functions gone. reset_cudagraph_trees also
// sets MarkStepBox.mark_step_counter to 0, and torch._dynamo.reset() clears
// GenerationTracker.generation.
//
// Tensors the old tree made stay what they are: memory in the old pool,
// owned by the program, unknown to the new manager (PyTorch's new manager
// never sees the old one's path either).
func (e *Engine) applyReset(rec *traces.Record) error {
	devs := e.devs
	if rec.OneDevice {
		ds, err := e.dev(rec.Device)
		if err != nil {
			return err
		}
		devs = []*devState{ds}
	}
	// Everything that can fail comes before the first change.
	e.markHeavy()
	pools := make([]alloc.PoolID, len(devs))
	for i, ds := range devs {
		p, err := newGraphPool(ds.alloc)
		if err != nil {
			return fmt.Errorf("reset: device %d: %w", ds.index, err)
		}
		pools[i] = p
	}
	for i, ds := range devs {
		old := ds.m
		graphs := len(old.nodes)
		for _, n := range old.nodes {
			old.keepNode(n)
			old.dropCachedTensors(n)
		}
		e.onUndo(func() { ds.m = old })
		ds.m = newManager(&e.shared, ds, pools[i])
		why := "torch._dynamo.reset(): reset_cudagraph_trees() shut the tree manager down"
		if rec.OneDevice {
			why = "the tree manager ended (the last of its compiled functions died)"
		}
		e.emit(Event{Kind: EvReset, Line: rec.Line, Node: -1, Parent: -1, Device: ds.index,
			Msg: fmt.Sprintf("device %d: %s; its tree of %d graph(s) is gone and the next call starts a new tree in a new private pool", ds.index, why, graphs)})
	}
	if !rec.OneDevice {
		// genTracker is the engine's count of invocations, not Dynamo's
		// value: it keeps growing, and the next call is a new invocation
		// whatever number the program's next call carries.
		e.markStep = 0
		e.hasInvocation = false
	}
	return nil
}
