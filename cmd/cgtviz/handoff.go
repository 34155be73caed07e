package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/traces"
)

// handoffHelp documents -handoff, which run, export, snapshot and the TUI
// share.
const handoffHelp = "`rule` for a live output handed to the next compiled call across a generation: " +
	"preserve (keep it, as PyTorch's fix after 2.11 does), raise (free it and raise the overwritten error, as PyTorch 2.11 does; the tree stays as 2.11 leaves it) " +
	"or version (the rule of the PyTorch that recorded the trace, as its header's meta names it: raise up to 2.12, preserve from 2.13 and for a trace that names none)"

// handoffFlag is -handoff as a flag.Value. Its default is
// engine.HandoffByVersion.
type handoffFlag struct{ h *engine.Handoff }

func (f handoffFlag) String() string {
	if f.h == nil {
		return engine.HandoffByVersion.String()
	}
	return f.h.String()
}

func (f handoffFlag) Set(s string) error {
	h, err := engine.ParseHandoff(s)
	if err != nil {
		return err
	}
	*f.h = h
	return nil
}

// addHandoffFlag defines -handoff on fs, by default the recording
// PyTorch's rule.
func addHandoffFlag(fs *flag.FlagSet) *engine.Handoff {
	h := new(engine.Handoff)
	*h = engine.HandoffByVersion
	fs.Var(handoffFlag{h}, "handoff", handoffHelp)
	return h
}

// resolveHandoffFlag returns the rule a run of a trace with header h
// follows under the flag's value, and the line that says so in run's
// report: "" where nothing needs saying (cgtviz's default rule for a trace
// that names no PyTorch version, or preserve asked for).
func resolveHandoffFlag(choice engine.Handoff, h traces.Header) (engine.Handoff, string) {
	switch choice {
	case engine.HandoffRaise:
		return choice, "handoff: raise (PyTorch 2.11: an output handed to the next call across a generation is freed)"
	case engine.HandoffByVersion:
		rule, v := engine.HandoffFor(h)
		switch {
		case v == "":
			return rule, ""
		case rule == engine.HandoffRaise:
			return rule, fmt.Sprintf("handoff: raise, the rule of torch %s that recorded the trace (an output handed to the next call across a generation is freed; --handoff preserve for PyTorch's later fix)", v)
		default:
			return rule, fmt.Sprintf("handoff: preserve, the rule of torch %s that recorded the trace (an output handed to the next call across a generation is kept)", v)
		}
	}
	return choice, ""
}

// versionNote is the line run's report gives a trace recorded on a
// PyTorch other than 2.11, whose decisions cgtviz models (issue 33 item
// 7): "" for 2.11.x and for a trace that names no version. rule is the
// --handoff asked for (HandoffByVersion: the recording version's rule).
func versionNote(choice engine.Handoff, h traces.Header) string {
	rule, v := engine.HandoffFor(h)
	if v == "" || isTorch211(v) {
		return ""
	}
	follows := fmt.Sprintf("the handoff rule follows %s: %s", v, rule)
	if choice != engine.HandoffByVersion {
		follows = fmt.Sprintf("the handoff rule is --handoff's: %s", choice)
	}
	return fmt.Sprintf("note: recorded on torch %s; cgtviz models 2.11's decisions (%s)", v, follows)
}

// isTorch211 reports whether a version (as engine.HandoffFor gives it:
// plain) is 2.11 ("2.11", "2.11.0+cu130", "2.11rc1").
func isTorch211(v string) bool {
	rest, ok := strings.CutPrefix(v, "2.11")
	return ok && (rest == "" || rest[0] < '0' || rest[0] > '9')
}
