package alloc

import (
	"testing"
)

// TestTraceLogShare checks that logs sharing chunks never see each other's
// entries, whichever of them appends first and however far: the log that
// extends a shared last chunk in place (the engine's clone-then-go-on) and
// the one that must copy (a rollback to the clone).
func TestTraceLogShare(t *testing.T) {
	seqs := func(l *traceLog) []int64 {
		var out []int64
		for _, e := range l.entries() {
			out = append(out, int64(e.Size))
		}
		return out
	}
	add := func(l *traceLog, from, n int) {
		for i := 0; i < n; i++ {
			l.next().Size = int64(from + i)
		}
	}
	want := func(from, n int) []int64 {
		var out []int64
		for i := 0; i < n; i++ {
			out = append(out, int64(from+i))
		}
		return out
	}
	equal := func(a, b []int64) bool {
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if a[i] != b[i] {
				return false
			}
		}
		return true
	}
	for _, tc := range []struct {
		name              string
		before, orig, cln int
		max               int
	}{
		{"mid chunk", 10, 5, 7, 1000},
		{"at chunk end", chunkLen, 3, 4, 1000},
		{"original crosses chunks", 100, 3 * chunkLen, 20, 10000},
		{"clone crosses chunks", 100, 5, 3 * chunkLen, 10000},
		{"bounded, both drop chunks", 3 * chunkLen, 5 * chunkLen, 4 * chunkLen, 2 * chunkLen},
		{"nothing before", 0, 3, 3, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var orig traceLog
			orig.max = tc.max
			add(&orig, 0, tc.before)
			cln := orig.clone()
			// The original goes on first (in place), then the clone
			// (a copy), then the original again.
			add(&orig, 1_000_000, tc.orig)
			add(&cln, 2_000_000, tc.cln)
			add(&orig, 1_000_000+tc.orig, 1)
			wantOrig := append(want(0, tc.before), want(1_000_000, tc.orig+1)...)
			wantCln := append(want(0, tc.before), want(2_000_000, tc.cln)...)
			gotOrig, gotCln := seqs(&orig), seqs(&cln)
			if tc.before+tc.orig+1 <= tc.max && !equal(gotOrig, wantOrig) {
				t.Errorf("original: got %d entries %v..., want %d", len(gotOrig), head(gotOrig), len(wantOrig))
			}
			if tc.before+tc.cln <= tc.max && !equal(gotCln, wantCln) {
				t.Errorf("clone: got %d entries %v..., want %d", len(gotCln), head(gotCln), len(wantCln))
			}
			// Bounded logs keep the newest entries, in order, and only
			// their own.
			if !isSuffix(gotOrig, wantOrig) {
				t.Errorf("original holds entries that are not its own newest: %v...", head(gotOrig))
			}
			if !isSuffix(gotCln, wantCln) {
				t.Errorf("clone holds entries that are not its own newest: %v...", head(gotCln))
			}
		})
	}
}

func head(s []int64) []int64 { return s[:min(len(s), 5)] }

func isSuffix(got, all []int64) bool {
	if len(got) > len(all) {
		return false
	}
	tail := all[len(all)-len(got):]
	for i := range got {
		if got[i] != tail[i] {
			return false
		}
	}
	return true
}
