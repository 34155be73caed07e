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
		note := ev.Origin.NoteAt(ev.Fn, ev.Kind, ev.Cause)
		switch {
		case ev.Cause == CauseNewRoot && note != "":
			msg += fmt.Sprintf(" (new root: %s)", note)
		case ev.Cause == CauseNewRoot:
			msg += " (new root)"
		case note != "":
			msg += fmt.Sprintf(" (child of graph %d: %s; %s)", ev.Parent, ev.Cause, note)
		default:
			msg += fmt.Sprintf(" (child of graph %d: %s)", ev.Parent, ev.Cause)
		}
	case EvWarmup:
		msg = ev.Text()
		if note := ev.Origin.NoteAt(ev.Fn, ev.Kind, ev.Cause); note != "" {
			msg += " (" + note + ")"
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

// Note says in a few words what a warmup (kind EvWarmup) or a recording
// (EvRecord, with its cause) of function fn is beyond its cause, from the
// facts of o; "" where they add nothing. The --log lines and the report
// use it, so the two say the same; it holds no ": ", which the report
// keeps for a re-record's reason, and no line, so that the report can
// count the recordings it explains alike (NoteAt names the line).
//
//   - a backward: "the backward of MLP_0 (#0)";
//   - a call in the same invocation as the call before it on the path:
//     "a graph after a graph break in Gate_0, in the same invocation"
//     (Dynamo's resume function);
//   - a new root that is the function's first recording: "a new compiled
//     graph of f (compile 2) for input shape [40,40], dynamic shapes", or
//     "input shape [2,2], a new size of the dynamic compiled graph 2 of f"
//     (cudagraphify's FunctionID per size), or, for a def's first graph,
//     "the first recording of f, for input shape [4]"; a warmup says the
//     first two only.
func (o *Origin) Note(fn string, kind EventKind, cause RecordCause) string {
	return o.note(fn, kind, cause, false)
}

// NoteAt is Note with the line of the call it names: "a graph after a
// graph break in Gate_0, in the same invocation as line 19".
func (o *Origin) NoteAt(fn string, kind EventKind, cause RecordCause) string {
	return o.note(fn, kind, cause, true)
}

func (o *Origin) note(fn string, kind EventKind, cause RecordCause, line bool) string {
	switch {
	case o == nil:
		return ""
	case o.Backward && o.Forward != "":
		if o.ForwardNode >= 0 {
			return fmt.Sprintf("the backward of %s (#%d)", o.Forward, o.ForwardNode)
		}
		return "the backward of " + o.Forward
	case !o.Backward && o.Prev != nil && o.Prev.SameInvocation:
		s := "a graph after a graph break in " + o.Prev.Fn + ", in the same invocation"
		if line {
			s += fmt.Sprintf(" as line %d", o.Prev.Line)
		}
		return s
	case !o.First || kind == EvRecord && cause != CauseNewRoot:
		return ""
	case o.Size > 1 && o.Graph != "":
		return fmt.Sprintf("%s, size %d of the dynamic compiled graph of %s", inputShapes(o.Shapes), o.Size, o.Graph)
	case o.Size > 1:
		// The same compiled graph (dynamic: a symbol where the sizes
		// differ), recorded again for this size.
		return fmt.Sprintf("%s, a new size of the dynamic compiled graph %d of %s", inputShapes(o.Shapes), o.Compile, fn)
	case o.Compile > 1 || o.Dynamic:
		s := fmt.Sprintf("a new compiled graph of %s (compile %d)", fn, o.Compile)
		if len(o.Shapes) > 0 {
			s += " for " + inputShapes(o.Shapes)
		}
		if o.Dynamic {
			s += ", dynamic shapes"
		}
		return s
	case kind == EvRecord:
		s := "the first recording of " + fn
		if len(o.Shapes) > 0 {
			s += ", for " + inputShapes(o.Shapes)
		}
		return s
	}
	return ""
}

// inputShapes is "input shape [4]", or "input shapes [4], [2,3]".
func inputShapes(shapes [][]int) string {
	if len(shapes) == 1 {
		return "input shape " + ShapesText(shapes)
	}
	return "input shapes " + ShapesText(shapes)
}

// ShapesText is shapes as "[1,9,64]", several joined by ", ": the words
// of the log, and of the UI, which says the same facts.
func ShapesText(shapes [][]int) string {
	var b strings.Builder
	for i, s := range shapes {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('[')
		for j, d := range s {
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprint(&b, d)
		}
		b.WriteByte(']')
	}
	return b.String()
}
