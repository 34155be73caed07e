package engine

import (
	"fmt"

	"github.com/cgtviz/cgtviz/traces"
)

// A forward graph returns the tensors its backward needs; in a replay
// those are cached outputs (the same tensor object every replay), and
// AOTAutograd keeps them only in the autograd graph. PyTorch judges a
// cached output by its Python references (get_output_refcount), which
// autograd's do not count, so the tree counts the saved tensor dead while
// autograd still holds it and later hands it to the backward. A `saved`
// record says so: it binds a name to the cached output that the dead name
// `of` last stood for (Tensor.deadName, set by the del).

// noteDeadCached records on name's tensor, before a del unbinds it, the
// name it dies under, when it is a cached output whose last name this is.
func (e *Engine) noteDeadCached(name string) {
	t := e.tt.tensors.get(e.tt.names[name])
	if t == nil || !t.Cached || t.Names != 1 || t.deadName == name {
		return
	}
	e.tt.keepT(t)
	t.deadName = name
}

// applySaved binds rec.Name to the cached output rec.Of last named: one
// the tree still holds (a node's cache), dead to the tree.
func (e *Engine) applySaved(rec *traces.Record) error {
	if _, bound := e.tt.names[rec.Of]; bound {
		return fmt.Errorf("%q is bound: a saved record names a dead output", rec.Of)
	}
	t := e.deadCachedOutput(rec.Of)
	if t == nil {
		return fmt.Errorf("%q is not a cached output of a replay that the tree still holds (only such an output can be dead to the tree while autograd keeps it)", rec.Of)
	}
	e.markHeavy()
	e.tt.hold(t)
	err := e.tt.bind(rec.Name, t)
	if rerr := e.tt.release(t); err == nil {
		err = rerr
	}
	return err
}

// deadCachedOutput is the cached output of a node, on any device, that
// died under name and is dead still. Saved records are one a backward's
// saved tensor at most, so a walk over the nodes' caches costs less than
// keeping an index up to date at every death.
func (e *Engine) deadCachedOutput(name string) *Tensor {
	for _, ds := range e.devs {
		for _, n := range ds.m.nodes {
			for _, id := range n.Cached {
				if t := e.tt.tensors.get(id); t != nil && t.Cached && t.deadName == name && !t.live() {
					return t
				}
			}
		}
	}
	return nil
}
