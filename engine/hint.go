package engine

// This file holds what the manager keeps per position and FunctionID and
// per FunctionID, read by every call: non_cudagraph_managed_mutation_hint
// and the roots. PyTorch keeps them in dicts; here they are slices where
// the key is dense (FunctionIDs, node ids), since a program that calls ten
// thousand functions in turn made each of these lookups a miss in a big
// map. What they hold, and when it changes, is PyTorch's, but for the
// hints of functions that mutate no input: false wherever they are
// called, so manager.run neither reads nor stores them.

// hint is one entry of the mutation hint at no node: unknown (the
// function has not been called there), false or true.
type hint uint8

const (
	hintUnknown hint = iota
	hintFalse
	hintTrue
)

// rootsOf returns the root nodes of FunctionID fid.
func (m *manager) rootsOf(fid int) []int {
	if fid >= 0 && fid < len(m.roots) {
		return m.roots[fid]
	}
	return nil
}

// mutationHint is non_cudagraph_managed_mutation_hint[nid][fid]: whether
// fid runs eagerly at position nid (a graph node, a warmup node, or
// noNode), and whether the hint is known there at all.
func (m *manager) mutationHint(nid, fid int) (eager, known bool) {
	switch {
	case nid == noNode:
		if fid < 0 || fid >= len(m.rootHints) {
			return false, false
		}
		h := m.rootHints[fid]
		return h == hintTrue, h != hintUnknown
	case nid >= 0:
		if nid >= len(m.nodeHints) {
			return false, false
		}
		eager, known = m.nodeHints[nid][fid]
	default:
		eager, known = m.warmupHints[nid][fid]
	}
	return eager, known
}

// setMutationHint sets non_cudagraph_managed_mutation_hint[nid][fid],
// under the record's undo.
func (m *manager) setMutationHint(nid, fid int, eager bool) {
	switch {
	case nid == noNode:
		h := hintFalse
		if eager {
			h = hintTrue
		}
		setAt(m.sh, &m.rootHints, fid, h)
	case nid >= 0:
		var hints map[int]bool
		if nid < len(m.nodeHints) {
			hints = m.nodeHints[nid]
		}
		if hints == nil {
			hints = map[int]bool{}
			setAt(m.sh, &m.nodeHints, nid, hints)
		}
		setKey(m.sh, hints, fid, eager)
	default:
		// A warmup node's id (negative): few, and never reused.
		if m.warmupHints == nil {
			m.warmupHints = map[int]map[int]bool{}
		}
		hints := m.warmupHints[nid]
		if hints == nil {
			hints = map[int]bool{}
			m.warmupHints[nid] = hints
			m.sh.onUndo(func() { delete(m.warmupHints, nid) })
		}
		setKey(m.sh, hints, fid, eager)
	}
}
