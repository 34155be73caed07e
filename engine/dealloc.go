package engine

import (
	"fmt"
	"strconv"

	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/traces"
)

// This file frees the outputs of an ended generation
// (dealloc_current_path_weakrefs) and, by default, moves the ones handed to
// the next call out of the pool first.

// deallocCurrentPath is dealloc_current_path_weakrefs: every live output of
// the path is freed now and marked, so that any later access raises the
// overwritten error. Live outputs that the incoming call takes as inputs
// are first moved out of the pool (PyTorch's fix after 2.11; see README).
func (m *manager) deallocCurrentPath(c *call) error {
	if w := m.failedWarmupOnPath(); w != nil {
		// PyTorch 2.11 asserts, for every node of the path, that it holds
		// a weak reference per output: a warmup whose run raised holds
		// none, so the path can never end through a new generation.
		// Kept, not rolled back: what the call did before (Dynamo's
		// compile, its FunctionID, the generation hook) stays, as in 2.11.
		// It raises in _run before any entry point: the call is eager, as
		// cgtrace writes it.
		return &keptError{action: ActionEager, err: &assertionError{fmt.Sprintf("AssertionError: the current path holds warmup %d, whose run raised at line %d (PyTorch 2.11: assert len(node.tensor_weakrefs) == len(node.stack_traces) in dealloc_current_path_weakrefs); every new generation fails here until the path's outputs are all dead",
			w.ID, w.Line)}}
	}
	m.sh.snapshot()
	// The path's live outputs, and those a backward handed out: gradients,
	// which the autograd engine keeps as .grad and adds the next
	// backward's to. An access to one after its generation ended is
	// gradient accumulation across a mark_step (pytorch#169545), and its
	// error says so (shared.staleErr).
	var live []int
	var grads map[int]bool
	m.forPathOutputs(func(fn, sid int) {
		live = append(live, sid)
		if m.funcs[fn].Mode == traces.ModeBackward {
			if grads == nil {
				grads = map[int]bool{}
			}
			grads[sid] = true
		}
	})
	if len(live) == 0 {
		return nil
	}
	liveSet := map[int]bool{}
	for _, sid := range live {
		liveSet[sid] = true
	}
	// Preserve inputs of the incoming call (not under HandoffRaise, where
	// they are freed with the rest and the call raises).
	var kept []string
	var keptPtrs []uint64
	for _, t := range c.args {
		if m.sh.handoff == HandoffRaise || !liveSet[t.Storage] {
			continue
		}
		old := m.sh.tt.storages.get(t.Storage)
		if old == nil {
			continue
		}
		moved, err := m.moveOutOfPool(old, c)
		if err != nil {
			return err
		}
		delete(liveSet, old.ID)
		kept = append(kept, m.sh.tt.nameOfStorage(moved.ID))
		keptPtrs = append(keptPtrs, uint64(old.Ptr))
	}
	if len(kept) > 0 {
		m.emit(Event{Kind: EvPreserve, Line: c.rec.Line, Device: m.ds.index, Node: -1, Parent: -1, Tensors: kept, Ptrs: keptPtrs,
			Msg: "live outputs passed to the next call were moved out of the graph pool before the path was freed"})
	}
	// Sized at once: a name and a pointer a live output at most.
	names := make([]string, 0, len(live))
	ptrs := make([]uint64, 0, len(live))
	seen := map[device.Ptr]bool{}
	for _, sid := range live {
		if !liveSet[sid] {
			continue
		}
		s := m.sh.tt.storages.get(sid)
		if s == nil || s.Refs == 0 || seen[s.Ptr] {
			continue
		}
		seen[s.Ptr] = true
		m.sh.tt.keepS(s)
		// Its message is made when an access raises (shared.staleErr):
		// every generation marks its outputs, few are touched again.
		s.Stale, s.StaleLine, s.StaleFn, s.StaleGrad = true, c.rec.Line, c.rec.Fn, grads[sid]
		if s.Owned {
			s.Owned = false
			m.ds.alloc.SetContext(c.rec.Line, "dealloc previous generation")
			if err := m.ds.alloc.Free(s.Ptr); err != nil {
				return fmt.Errorf("free output of the previous generation at %#x: %w", s.Ptr, err)
			}
		}
		n := m.sh.tt.nameOfStorage(sid)
		if n == "" {
			n = s.What
		}
		names = append(names, n)
		ptrs = append(ptrs, uint64(s.Ptr))
	}
	if len(names) > 0 {
		m.emit(Event{Kind: EvDealloc, Line: c.rec.Line, Device: m.ds.index, Node: -1, Parent: -1, Tensors: names, Ptrs: ptrs,
			Msg: freedMsg(len(names))})
	}
	return nil
}

// failedWarmupOnPath returns a warmup node of the current path whose run
// raised (HandoffRaise), or nil.
func (m *manager) failedWarmupOnPath() *WarmupNode {
	w := m.curWarmup()
	if w == nil {
		return nil
	}
	chain, _ := m.warmupChain(w)
	for _, x := range chain {
		if x.Failed {
			return x
		}
	}
	return nil
}

// moveOutOfPool copies a live pool storage into a new default-pool storage
// and points every tensor viewing it there.
func (m *manager) moveOutOfPool(old *Storage, c *call) (*Storage, error) {
	ds := m.ds
	ds.alloc.SetContext(c.line(), "preserve "+old.What)
	ns, err := m.sh.allocStorage(ds, old.Bytes, device.DefaultStream, poolDefault, old.Line, old.What)
	if err != nil {
		return nil, err
	}
	if old.Bytes > 0 {
		if err := ds.dev.CopyDtoD(device.DefaultStream, ns.Ptr, old.Ptr, words(old.Bytes)); err != nil {
			return nil, err
		}
	}
	for _, t := range m.sh.tt.tensors.all() {
		if t.Storage == old.ID {
			m.sh.tt.keepT(t)
			t.Storage = ns.ID
			if t.live() {
				ns.Refs++
			}
		}
	}
	m.sh.tt.keepS(old)
	old.Refs = 0
	if old.Owned {
		old.Owned = false
		if err := ds.alloc.Free(old.Ptr); err != nil {
			return nil, err
		}
	}
	if old.Pins == 0 {
		m.sh.tt.dropStorage(old.ID)
	}
	return ns, nil
}

// freedMsg is the dealloc event's message for n outputs; the usual one
// output's is a constant, not a string made at every generation.
func freedMsg(n int) string {
	const rest = " output(s) of the previous generation; reading them now raises the overwritten error"
	if n == 1 {
		return "freed 1" + rest
	}
	return "freed " + strconv.Itoa(n) + rest
}
