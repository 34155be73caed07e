package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/x/term"
)

// progressEvery is how often the progress bar is redrawn.
const progressEvery = 200 * time.Millisecond

// progressWidth is the width of the bar itself, in cells.
const progressWidth = 30

// offsetter is what the bar follows: a read's position in its input and
// the input's size (-1 when unknown, a pipe). *traces.Input is one.
type offsetter interface {
	Offset() int64
	Size() int64
}

// isTerminal reports whether w is a terminal. A progress bar goes to
// stderr only when it is one: piped or redirected, it would be noise in a
// log.
var isTerminal = func(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(f.Fd())
}

// startProgress draws a progress bar of a long read on stderr, when stderr
// is a terminal and stdout is not (text going to the same screen would be
// torn by the bar's redraws); it returns the function that stops it and
// clears its line. Nothing is drawn for the first redraw period, so short
// runs never flash a bar.
func startProgress(stdout, stderr io.Writer, label string, in offsetter) (stop func()) {
	if !isTerminal(stderr) || isTerminal(stdout) {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		start := time.Now()
		drawn := false
		for {
			select {
			case <-done:
				if drawn {
					fmt.Fprint(stderr, "\r\x1b[K")
				}
				return
			case <-t.C:
				fmt.Fprint(stderr, "\r\x1b[K"+progressLine(label, in.Offset(), in.Size(), time.Since(start)))
				drawn = true
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			wg.Wait()
		})
	}
}

// progressLine is one frame of the bar: "run [=====>    ] 42% 17.1/41.1 MB
// 12.0 MB/s", or, when the size is unknown, the bytes read and the rate.
func progressLine(label string, off, size int64, elapsed time.Duration) string {
	rate := ""
	if s := elapsed.Seconds(); s > 0 {
		rate = fmt.Sprintf(" %.1f MB/s", float64(off)/1e6/s)
	}
	if size <= 0 {
		return fmt.Sprintf("%s %.1f MB read%s", label, float64(off)/1e6, rate)
	}
	frac := min(float64(off)/float64(size), 1)
	n := int(frac * progressWidth)
	bar := strings.Repeat("=", n)
	if n < progressWidth {
		bar += ">" + strings.Repeat(" ", progressWidth-n-1)
	}
	return fmt.Sprintf("%s [%s] %3.0f%% %.1f/%.1f MB%s", label, bar, frac*100, float64(off)/1e6, float64(size)/1e6, rate)
}
