package sessions

import "errors"

// ErrCanceled is what a move returns when its watcher asked it to stop
// (Esc on a long move in the UI). The session is left where the move had
// got to, a consistent position: every record before it ran.
var ErrCanceled = errors.New("move canceled")

// watchEvery is how many records a move runs between two calls of its
// watcher: often enough for a progress line, rarely enough to cost
// nothing (a call is a few nanoseconds; 4,096 records take milliseconds).
const watchEvery = 4096

// MoveWatcher is told, every watchEvery records a move runs, how many it
// has run and how many it means to (0 when it runs to a breakpoint and
// cannot tell); it returns false to cancel the move.
type MoveWatcher func(done, total int) bool

// Watch sets the watcher of the moves that follow (nil: none). It is read
// from the goroutine that uses the session.
func (s *Session) Watch(w MoveWatcher) { s.watch = w }

// watched calls the watcher every watchEvery records; n counts the
// records the move has run so far.
func (s *Session) watched(n, total int) error {
	if s.watch == nil || n%watchEvery != 0 || n == 0 {
		return nil
	}
	if !s.watch(n, total) {
		return ErrCanceled
	}
	return nil
}
