package engine

import "fmt"

// Values returns the values of the tensor bound to name, as the read op
// does: a deallocated output raises the overwritten error.
func (e *Engine) Values(name string) ([]float32, error) { return e.readValues(name) }

// RawValues returns what the memory of the tensor bound to name holds now,
// even when the tensor was deallocated: it shows that later replays really
// overwrote it. A debugger's peek, never what a program could do.
func (e *Engine) RawValues(name string) ([]float32, error) {
	t, st, err := e.tt.lookup(name)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return nil, fmt.Errorf("tensor %q has no storage", name)
	}
	return e.tensorValues("peek", name, t, st)
}

// Names returns the names bound now, sorted.
func (e *Engine) Names() []string {
	out := make([]string, 0, len(e.tt.names))
	for n := range e.tt.names {
		out = append(out, n)
	}
	sortStrings(out)
	return out
}
