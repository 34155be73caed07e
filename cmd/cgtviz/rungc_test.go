package main

import (
	"runtime/debug"
	"testing"
)

// TestSetRunGC checks the collector setting of a run: runGCPercent while
// it runs when $GOGC is unset, the user's $GOGC when it is set, and the
// setting before it put back after.
func TestSetRunGC(t *testing.T) {
	for _, tc := range []struct {
		env  string
		want int // during the run; -2: what it was before
	}{
		{"", runGCPercent},
		{"150", -2},
		{"off", -2},
	} {
		t.Run("GOGC="+tc.env, func(t *testing.T) {
			t.Setenv("GOGC", tc.env)
			before := debug.SetGCPercent(77)
			defer debug.SetGCPercent(before)
			restore := setRunGC()
			during := debug.SetGCPercent(-1)
			debug.SetGCPercent(during)
			want := tc.want
			if want == -2 {
				want = 77
			}
			if during != want {
				t.Errorf("during the run GOGC is %d, want %d", during, want)
			}
			restore()
			if after := debug.SetGCPercent(77); after != 77 {
				t.Errorf("after the run GOGC is %d, want 77 as before", after)
			}
		})
	}
}

// TestSetRunGCOverlapping checks two runs at once: the setting holds until
// the last ends, and what was before comes back then.
func TestSetRunGCOverlapping(t *testing.T) {
	t.Setenv("GOGC", "")
	before := debug.SetGCPercent(77)
	defer debug.SetGCPercent(before)
	a := setRunGC()
	b := setRunGC()
	a()
	now := debug.SetGCPercent(-1)
	debug.SetGCPercent(now)
	if now != runGCPercent {
		t.Errorf("with one run still going GOGC is %d, want %d", now, runGCPercent)
	}
	b()
	if after := debug.SetGCPercent(77); after != 77 {
		t.Errorf("after both runs GOGC is %d, want 77 as before", after)
	}
}
