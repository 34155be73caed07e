package sessions

import (
	"slices"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/traces"
)

// KindOverwrite is a pseudo event kind for breakpoints: a replay that
// handed back the cached output object an older name still holds, so that
// the older name's values changed silently (PyTorch's steady state raises
// no overwritten error there). The engine raises no event for it: it is
// read from the state after the replay (SharedOutputs), only for the
// records a breakpoint of this kind asks about.
const KindOverwrite engine.EventKind = 30

// SharedOutput is one silent overwrite: the names a call just bound (Mine)
// and the older names of the same tensor (Others), made at Line.
type SharedOutput struct {
	Mine, Others []string
	Line         int
}

// SharedOutputs finds the silent overwrites of a call record in the state
// just after it ran: a live tensor bound to one of the call's outputs and
// to an older name too.
func SharedOutputs(st *engine.State, rec *traces.Record) []SharedOutput {
	if !mayShare(st, rec) {
		return nil
	}
	var out []SharedOutput
	for i := range st.Tensors {
		out = sharedOutput(out, &st.Tensors[i], rec)
	}
	return out
}

// SharedOutputsAmong is SharedOutputs looking only at the tensors at the
// given indexes of st.Tensors, in increasing order: a caller that keeps the
// live tensors of several names (MayShare) finds the overwrites of a
// state of tens of thousands of tensors without a pass over them all.
// An index out of range is skipped; the rest are checked as SharedOutputs
// checks them, so extra candidates change nothing.
func SharedOutputsAmong(st *engine.State, rec *traces.Record, candidates []int) []SharedOutput {
	if !mayShare(st, rec) {
		return nil
	}
	var out []SharedOutput
	for _, i := range candidates {
		if i >= 0 && i < len(st.Tensors) {
			out = sharedOutput(out, &st.Tensors[i], rec)
		}
	}
	return out
}

// MayShare reports whether t may be one of SharedOutputs' finds: a live
// tensor with several names (rare).
func MayShare(t *engine.TensorView) bool {
	return len(t.Names) >= 2 && t.State == engine.TensorLive
}

// mayShare reports whether rec, run in st, can have overwritten: a call
// that binds outputs.
func mayShare(st *engine.State, rec *traces.Record) bool {
	return rec != nil && rec.Op == traces.OpCall && len(rec.Out) > 0 && st != nil
}

// sharedOutput appends t's silent overwrite by rec to out, if it is one.
func sharedOutput(out []SharedOutput, t *engine.TensorView, rec *traces.Record) []SharedOutput {
	if !MayShare(t) {
		return out
	}
	var so SharedOutput
	for _, n := range t.Names {
		if slices.Contains(rec.Out, n) {
			so.Mine = append(so.Mine, n)
		} else {
			so.Others = append(so.Others, n)
		}
	}
	if len(so.Mine) > 0 && len(so.Others) > 0 {
		so.Line = t.Line
		out = append(out, so)
	}
	return out
}

// overwriteAt reports whether record i, once run, silently overwrote a
// cached output an older name holds. Only a replay of a call that binds
// outputs can; for the others nothing runs. Finding out needs the state
// just after record i: the session moves there (Continue and
// ReverseContinue, its only callers, move on afterwards). Answers are
// kept, as executed records never change what they did.
func (s *Session) overwriteAt(i int) (bool, error) {
	if v, ok := s.overwrites[i]; ok {
		return v, nil
	}
	if i >= s.hist.len() || actionCodes[s.hist.at(i).action] != engine.ActionReplay {
		return false, nil
	}
	rec, err := s.src.Record(i)
	if err != nil || rec.Op != traces.OpCall || len(rec.Out) == 0 {
		return false, nil
	}
	if s.pos != i+1 {
		if err := s.Goto(i + 1); err != nil {
			return false, err
		}
	}
	v := len(SharedOutputs(s.State(), rec)) > 0
	if s.overwrites == nil {
		s.overwrites = map[int]bool{}
	}
	s.overwrites[i] = v
	return v, nil
}

// Overwrote reports what is known of record i's silent overwrite: whether
// it overwrote, and whether the session has checked (a breakpoint of kind
// KindOverwrite, or NoteOverwrite, asked).
func (s *Session) Overwrote(i int) (overwrote, known bool) {
	v, ok := s.overwrites[i]
	return v, ok
}

// NoteOverwrite records what the caller found of record i from the state
// just after it (the UI checks every step it shows).
func (s *Session) NoteOverwrite(i int, overwrote bool) {
	if s.overwrites == nil {
		s.overwrites = map[int]bool{}
	}
	s.overwrites[i] = overwrote
}

// OverwriteHits lists, in order, the records known to have overwritten
// silently (Overwrote true).
func (s *Session) OverwriteHits() []int {
	var out []int
	for i, v := range s.overwrites {
		if v {
			out = append(out, i)
		}
	}
	slices.Sort(out)
	return out
}
