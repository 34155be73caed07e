package engine

import (
	"fmt"
	"maps"

	"github.com/cgtviz/cgtviz/traces"
)

// A forward graph returns the tensors its backward needs; in a replay
// those are cached outputs (the same tensor object every replay), and
// AOTAutograd keeps them only in the autograd graph. PyTorch judges a
// cached output by its Python references (get_output_refcount), which
// autograd's do not count, so the tree counts the saved tensor dead while
// autograd still holds it and later hands it to the backward. A `saved`
// record says so: it binds a name to the cached output that the dead name
// `of` last stood for.
//
// deadCached remembers, for each cached output tensor that died under a
// name, that last name (and the way back), so it stays as small as the
// tree's cached outputs however long the trace.
type deadCached struct {
	byName   map[string]int // name -> tensor id
	byTensor map[int]string // tensor id -> name
}

// noteDeadCached remembers name's tensor before a del unbinds it, when it
// is a cached output whose last name this is.
func (e *Engine) noteDeadCached(name string) {
	id, ok := e.tt.names[name]
	if !ok {
		return
	}
	t := e.tt.tensors[id]
	if t == nil || !t.Cached || t.Names != 1 {
		return
	}
	d := &e.deadCached
	if d.byName == nil {
		d.byName, d.byTensor = map[string]int{}, map[int]string{}
	}
	old, had := d.byTensor[id]
	d.byTensor[id] = name
	d.byName[name] = id
	if had {
		delete(d.byName, old)
	}
	e.onUndo(func() {
		delete(d.byName, name)
		if had {
			d.byTensor[id] = old
			d.byName[old] = id
		} else {
			delete(d.byTensor, id)
		}
	})
}

// applySaved binds rec.Name to the cached output rec.Of last named.
func (e *Engine) applySaved(rec *traces.Record) error {
	if _, bound := e.tt.names[rec.Of]; bound {
		return fmt.Errorf("%q is bound: a saved record names a dead output", rec.Of)
	}
	id, ok := e.deadCached.byName[rec.Of]
	t := e.tt.tensors[id]
	if !ok || t == nil || !t.Cached {
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

func (d deadCached) clone() deadCached {
	if d.byName == nil {
		return d
	}
	return deadCached{byName: maps.Clone(d.byName), byTensor: maps.Clone(d.byTensor)}
}
