package ui

import (
	"fmt"
	"sync/atomic"
	"time"
)

// moveProgress is what a long move tells the status line while it runs:
// the session's watcher (sessions.MoveWatcher) stores how far it has got
// from the move's goroutine, and View reads it from the UI's; Esc sets
// cancel, which the watcher hands back to the session.
type moveProgress struct {
	start       time.Time
	done, total atomic.Int64
	cancel      atomic.Bool
}

func newMoveProgress() *moveProgress { return &moveProgress{start: time.Now()} }

// watch is the session's MoveWatcher.
func (p *moveProgress) watch(done, total int) bool {
	p.done.Store(int64(done))
	p.total.Store(int64(total))
	return !p.cancel.Load()
}

// moveTickMsg redraws the status line while a move runs.
type moveTickMsg struct{ p *moveProgress }

// moveTick is how often the progress of a move is redrawn.
const moveTick = 250 * time.Millisecond

// text is the status line's word for the move: "running…" until it has
// run a first batch of records, then how many, how fast and how long is
// left (when the move knows its end), and how to stop it.
func (p *moveProgress) text() string {
	if p == nil {
		return "running…"
	}
	done, total := p.done.Load(), p.total.Load()
	if done == 0 {
		return "running…"
	}
	el := time.Since(p.start).Seconds()
	rate := float64(done) / max(el, 1e-3)
	s := fmt.Sprintf("running: %s", count(done))
	if total > 0 {
		s += fmt.Sprintf(" of %s records · %s/s · %s left", count(total), count(int64(rate)), eta(float64(total-done)/rate))
	} else {
		s += fmt.Sprintf(" records · %s/s", count(int64(rate)))
	}
	if p.cancel.Load() {
		return s + " · stopping…"
	}
	return s + " · esc stops"
}

// count writes a record count short: 950, 12.3k, 4.56M.
func count(n int64) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.2fM", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%.0fk", float64(n)/1e3)
	case n >= 1_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

// eta writes seconds left: "12 s", "3 min 20 s".
func eta(sec float64) string {
	if sec < 60 {
		return fmt.Sprintf("%d s", int(sec+0.5))
	}
	return fmt.Sprintf("%d min %02d s", int(sec)/60, int(sec)%60)
}
