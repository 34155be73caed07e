package engine

import (
	"fmt"
	"strings"
)

// LogLine renders an event as a TORCH_LOGS=cudagraphs line, prefixed with
// the trace location, or "" for events PyTorch does not log (tensor deaths).
// The texts are PyTorch 2.11's where it has one.
func LogLine(file string, ev Event) string {
	var msg string
	switch ev.Kind {
	case EvTensorDied, EvExpectFailed:
		return ""
	case EvRecord:
		msg = ev.Msg
		if ev.Rerecord {
			for _, f := range ev.Failures {
				if f.Status == StatusStaticInputIdxMismatch || f.Status == StatusCudagraphManagedIdxMismatch {
					msg += fmt.Sprintf("\nRe-recording function=%s, reason=%s", ev.Fn, f.Describe())
					break
				}
			}
		}
		switch ev.Cause {
		case CauseNewRoot:
			msg += " (new root)"
		default:
			msg += fmt.Sprintf(" (child of graph %d: %s)", ev.Parent, ev.Cause)
		}
	case EvCheckpoint:
		msg = ev.Msg
		if d := ev.Delta; d != nil {
			msg += fmt.Sprintf(" (restored graph %d's state: %d block(s) re-allocated for live tensors, %d freed)", d.Node, len(d.Reallocated), len(d.Freed))
		}
	case EvDealloc:
		msg = fmt.Sprintf("%s: %v", ev.Msg, ev.Tensors)
	default:
		msg = ev.Text()
	}
	if msg == "" {
		return ""
	}
	// Every line of a message of several (a re-record's reason, an error's
	// stack trace) carries the location, so that grep and an editor's
	// error list find each one.
	prefix := fmt.Sprintf("%s:%d: [__cudagraphs] ", file, ev.Line)
	return prefix + strings.ReplaceAll(msg, "\n", "\n"+prefix)
}
