package main

import (
	"flag"

	"github.com/cgtviz/cgtviz/engine"
)

// handoffHelp documents -handoff, which run, export, snapshot and the TUI
// share.
const handoffHelp = "`rule` for a live output handed to the next compiled call across a generation: " +
	"preserve (keep it, as PyTorch's fix after 2.11 does) or raise (free it and raise the overwritten error, as PyTorch 2.11 does; the tree stays as 2.11 leaves it)"

// handoffFlag is -handoff as a flag.Value.
type handoffFlag struct{ h *engine.Handoff }

func (f handoffFlag) String() string {
	if f.h == nil {
		return engine.HandoffPreserve.String()
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

// addHandoffFlag defines -handoff on fs.
func addHandoffFlag(fs *flag.FlagSet) *engine.Handoff {
	h := new(engine.Handoff)
	fs.Var(handoffFlag{h}, "handoff", handoffHelp)
	return h
}
