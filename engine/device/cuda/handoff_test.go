package cuda

import (
	"runtime"
	"testing"
)

// BenchmarkLockedHandoff measures the design Device does not use: one
// goroutine locked to its OS thread that runs every device call, sent to it
// over a channel. Each op is one round trip with an empty call, the cost
// such a design would add to every launch.
func BenchmarkLockedHandoff(b *testing.B) {
	requests := make(chan func())
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for f := range requests {
			f()
			done <- struct{}{}
		}
	}()
	defer close(requests)
	calls := 0
	call := func() { calls++ }
	for b.Loop() {
		requests <- call
		<-done
	}
	if calls == 0 {
		b.Fatal("the locked goroutine ran no call")
	}
}
