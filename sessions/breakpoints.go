package sessions

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/traces"
)

// AnyNode in Breakpoint.Node stops on a replay of any node.
const AnyNode = -1

// Breakpoint stops Continue and ReverseContinue on a record. Every field
// that is set must match (a zero field matches anything):
//   - Line: the record at this trace line;
//   - Fn: a call of this function;
//   - Kind: a record that raised an event of this kind (engine.EvRecord,
//     EvReplay, EvCheckpoint, EvEager, EvSkip, EvDealloc, EvError,
//     EvExpectFailed, ...), KindRerecord or KindOverwrite (overwrite.go);
//   - Node: with Kind EvReplay, the graph id replayed; AnyNode for any. It is
//     ignored (and normalized to AnyNode) for other kinds.
//
// A breakpoint stops just after the matching record ran, so that what it did
// (its events, the checkpoint's delta) is on screen.
type Breakpoint struct {
	Line int
	Fn   string
	Kind engine.EventKind
	Node int
}

// String describes the breakpoint: "line 12", "fn foo", "replay #2".
func (b Breakpoint) String() string {
	var parts []string
	if b.Line > 0 {
		parts = append(parts, fmt.Sprintf("line %d", b.Line))
	}
	if b.Fn != "" {
		parts = append(parts, "fn "+b.Fn)
	}
	if b.Kind != 0 {
		k := KindName(b.Kind)
		if b.Kind == engine.EvReplay && b.Node >= 0 {
			k += fmt.Sprintf(" #%d", b.Node)
		}
		parts = append(parts, k)
	}
	if len(parts) == 0 {
		return "(empty)"
	}
	return strings.Join(parts, " & ")
}

// normalize validates b and clears the fields that do not apply.
func (b Breakpoint) normalize() (Breakpoint, error) {
	if b.Line <= 0 && b.Fn == "" && b.Kind == 0 {
		return b, errors.New("breakpoint: give a line, a function or an event kind")
	}
	if b.Line < 0 {
		return b, fmt.Errorf("breakpoint: negative line %d", b.Line)
	}
	if b.Kind != 0 && !slices.Contains(BreakpointKinds(), b.Kind) {
		return b, fmt.Errorf("breakpoint: unknown event kind %d", b.Kind)
	}
	if b.Kind != engine.EvReplay || b.Node < 0 {
		b.Node = AnyNode
	}
	return b, nil
}

// matches reports whether the breakpoint stops on record rec with summary e.
func (b Breakpoint) matches(rec *traces.Record, e entry) bool {
	if b.Line > 0 && rec.Line != b.Line {
		return false
	}
	if b.Fn != "" && (rec.Op != traces.OpCall || rec.Fn != b.Fn) {
		return false
	}
	if b.Kind != 0 {
		if !e.kinds.Has(b.Kind) {
			return false
		}
		if b.Kind == engine.EvReplay && !e.replays(b.Node) {
			return false
		}
	}
	return true
}

// AddBreakpoint adds b; adding one that exists changes nothing.
func (s *Session) AddBreakpoint(b Breakpoint) error {
	b, err := b.normalize()
	if err != nil {
		return err
	}
	if !slices.Contains(s.bps, b) {
		s.bps = append(s.bps, b)
	}
	return nil
}

// RemoveBreakpoint removes b and reports whether it was there.
func (s *Session) RemoveBreakpoint(b Breakpoint) bool {
	b, err := b.normalize()
	if err != nil {
		return false
	}
	i := slices.Index(s.bps, b)
	if i < 0 {
		return false
	}
	s.bps = slices.Delete(s.bps, i, i+1)
	return true
}

// HasBreakpoint reports whether b is set.
func (s *Session) HasBreakpoint(b Breakpoint) bool {
	b, err := b.normalize()
	return err == nil && slices.Contains(s.bps, b)
}

// Breakpoints lists the breakpoints in the order they were added.
func (s *Session) Breakpoints() []Breakpoint { return slices.Clone(s.bps) }

// Hit says where Continue or ReverseContinue stopped.
type Hit struct {
	// Found is false when no breakpoint matched: the session went to the
	// end (Continue) or the start (ReverseContinue).
	Found bool
	// Index is the record that matched; the position is Index+1.
	Index      int
	Breakpoint Breakpoint
}

// match returns the first breakpoint that stops on record i.
func (s *Session) match(i int) (Breakpoint, bool) {
	if len(s.bps) == 0 {
		return Breakpoint{}, false
	}
	rec, err := s.src.Record(i)
	if err != nil {
		return Breakpoint{}, false
	}
	return s.matchRec(i, rec)
}

// matchRec is match with record i read.
func (s *Session) matchRec(i int, rec *traces.Record) (Breakpoint, bool) {
	e := s.hist.at(i)
	for _, b := range s.bps {
		if b.Kind == KindOverwrite {
			// Not in the history's kinds: read from the state after i.
			k := b
			k.Kind = 0
			if (k.Line > 0 || k.Fn != "") && !k.matches(rec, e) {
				continue
			}
			if ok, err := s.overwriteAt(i); err == nil && ok {
				return b, true
			}
			continue
		}
		if b.matches(rec, e) {
			return b, true
		}
	}
	return Breakpoint{}, false
}

// Continue runs forward until a record that matches a breakpoint has run,
// or to the end of the trace. Records already executed are searched in the
// history without running them; then the engine runs live.
func (s *Session) Continue() (Hit, error) {
	for i := s.pos; i < s.hist.len(); i++ {
		if b, ok := s.match(i); ok {
			return Hit{Found: true, Index: i, Breakpoint: b}, s.Goto(i + 1)
		}
	}
	if err := s.Goto(max(s.pos, s.hist.len())); err != nil {
		return Hit{}, err
	}
	defer s.startAhead(s.pos, s.src.Len())()
	// As a long Goto, the records run with reused Steps (where to it
	// stops is not known ahead: only the Step it stops on is kept) and
	// are matched as read for the engine, not read again.
	var last *engine.Step
	defer func() {
		if last != nil {
			s.cacheStep(s.pos-1, ownStep(last))
		}
	}()
	for from := s.pos; s.pos < s.src.Len(); {
		if err := s.watched(s.pos-from, 0); err != nil {
			return Hit{}, err
		}
		st, rec, err := s.run(false)
		if err != nil {
			return Hit{}, err
		}
		last = st
		if len(s.bps) == 0 {
			continue
		}
		if b, ok := s.matchRec(s.pos-1, rec); ok {
			return Hit{Found: true, Index: s.pos - 1, Breakpoint: b}, nil
		}
	}
	return Hit{}, nil
}

// ownStep is a copy of a reused Step (Engine.ReuseSteps) that stays as
// it is: its events are the buffer's, the slices of each event its own.
func ownStep(st *engine.Step) *engine.Step {
	c := *st
	c.Events = slices.Clone(st.Events)
	return &c
}

// ReverseContinue moves back to just after the latest earlier record that
// matches a breakpoint (the record just run, at Pos-1, is not considered,
// so repeated calls keep going back), or to the start.
func (s *Session) ReverseContinue() (Hit, error) {
	for i := min(s.pos, s.hist.len()) - 2; i >= 0; i-- {
		if b, ok := s.match(i); ok {
			return Hit{Found: true, Index: i, Breakpoint: b}, s.Goto(i + 1)
		}
	}
	return Hit{}, s.Goto(0)
}

// Bookmark is a named position.
type Bookmark struct {
	Name string
	Pos  int
}

// Bookmark names the current position; an existing name moves.
func (s *Session) Bookmark(name string) error {
	name = strings.TrimSpace(name)
	if name == "" {
		return errors.New("bookmark: empty name")
	}
	return s.setBookmark(name, s.pos)
}

func (s *Session) setBookmark(name string, pos int) error {
	if n := s.src.Len(); pos < 0 || pos > n {
		return fmt.Errorf("bookmark %q: position %d out of range 0..%d", name, pos, n)
	}
	for i := range s.marks {
		if s.marks[i].Name == name {
			s.marks[i].Pos = pos
			return nil
		}
	}
	s.marks = append(s.marks, Bookmark{Name: name, Pos: pos})
	return nil
}

// Bookmarks lists the bookmarks by position, then name.
func (s *Session) Bookmarks() []Bookmark {
	out := slices.Clone(s.marks)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Pos != out[j].Pos {
			return out[i].Pos < out[j].Pos
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// GotoBookmark moves to the named bookmark.
func (s *Session) GotoBookmark(name string) error {
	for _, m := range s.marks {
		if m.Name == name {
			return s.Goto(m.Pos)
		}
	}
	return fmt.Errorf("bookmark %q: no such bookmark", name)
}
