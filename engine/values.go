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
	out := make([]float32, numElems(t.Shape))
	if len(out) == 0 {
		return out, nil
	}
	if err := e.devs[st.Dev].dev.CopyDtoH(out, st.Ptr); err != nil {
		return nil, fmt.Errorf("peek %s: %w", name, err)
	}
	return out, nil
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
