package dynamo

import (
	"slices"

	"github.com/cgtviz/cgtviz/traces/ops"
)

// Cache is Dynamo's view of one code object (one def, or every def
// under Options.SharedCode): its compiled graphs (cache entries, each
// guarding the def it was compiled for) and the automatic-dynamic history
// of its arguments. A call runs through the newest graph whose guards accept it;
// when none does, Dynamo recompiles, and dims whose size ever changed become
// dynamic (automatic dynamic shapes), except sizes 0 and 1, which are
// always specialized. cudagraphify keys its FunctionIDs per compiled graph
// and int key, so after a switch to dynamic shapes even a shape seen
// before gets a new FunctionID (all checked against PyTorch 2.11).
type Cache struct {
	entries []*Entry // oldest first
	// frames are per argument, from the first compile on (by value, one
	// array for a def's arguments: a def's first compile, each def's in
	// a big program, made one object an argument).
	frames []argFrame
}

// argFrame is Dynamo's FrameStateSizeEntry for one argument of a def: the
// sizes its compiles saw, -1 where they differed. Dynamo keys it by the
// argument's source, not by rank: once a compile sees another rank the
// whole size becomes auto_dynamic (pgo.py's _merge_atom_tup), and every
// later compile makes all its dims dynamic.
type argFrame struct {
	seen    bool // a compile has seen the argument (else the rest is zero)
	dims    []int
	anyRank bool
}

// merge records the sizes of a new compile.
func (a *argFrame) merge(s []int) {
	switch {
	case a.anyRank:
	case len(a.dims) != len(s):
		a.anyRank, a.dims = true, nil
	default:
		for j, d := range s {
			if a.dims[j] != d {
				a.dims[j] = -1
			}
		}
	}
}

// dynamic reports whether dim j is compiled dynamic.
func (a *argFrame) dynamic(j int) bool { return a.anyRank || a.dims[j] < 0 }

// Entry is one compiled graph: its guards on shapes (-1: dynamic)
// and on the aliasing of its arguments, and the static inputs it was
// compiled with.
type Entry struct {
	// Gen numbers the graph among its code object's graphs, from 1:
	// cudagraphify keys FunctionIDs by it.
	Gen  int
	fn   string // the def: a closure's guards reject the other defs
	dims [][]int
	// alias is, per argument, the first earlier argument passed the same
	// tensor storage, or -1: Dynamo guards on duplicated inputs, so a call
	// aliasing its arguments differently needs another graph.
	alias []int
	// dtypes are guarded too: another dtype is another graph.
	dtypes []ops.DType
	// Static marks the inputs the graph was compiled to take as static
	// (parameters, static addresses).
	Static []bool
}

// accepts reports whether the graph's guards let the call through.
func (c *Entry) accepts(fn string, shapes [][]int, dtypes []ops.DType, alias []int) bool {
	if c.fn != fn || len(c.dims) != len(shapes) || !slices.Equal(c.alias, alias) || !sameDTypes(c.dtypes, dtypes) {
		return false
	}
	for i, s := range shapes {
		if len(s) != len(c.dims[i]) {
			return false
		}
		for j, d := range s {
			if c.dims[i][j] >= 0 && c.dims[i][j] != d {
				return false
			}
			// A dynamic dim is a symbol guarded >= 2: sizes 0 and 1 are
			// specialized, so they need a graph of their own.
			if c.dims[i][j] < 0 && d < 2 {
				return false
			}
		}
	}
	return true
}

// Lookup returns the newest compiled graph that accepts the call, or nil.
func (c *Cache) Lookup(fn string, shapes [][]int, dtypes []ops.DType, alias []int) *Entry {
	for i := len(c.entries) - 1; i >= 0; i-- {
		if c.entries[i].accepts(fn, shapes, dtypes, alias) {
			return c.entries[i]
		}
	}
	return nil
}

// Shapes are Dynamo's settings for the dims of a new graph.
type Shapes struct {
	// Automatic is torch._dynamo.config.automatic_dynamic_shapes: a dim
	// whose size changed between compiles becomes dynamic.
	Automatic bool
	// AssumeStatic is torch._dynamo.config.assume_static_by_default: off,
	// every dim is dynamic from the first compile.
	AssumeStatic bool
	// StaticInputsStatic keeps a static input (a static address) out of
	// automatic dynamic shapes: no history, static dims. Dynamo forces
	// static shapes only on nn.Parameters (force_parameter_static_shapes);
	// a tensor given to mark_static_address and passed as an argument gets
	// dynamic dims like any other (s37 on PyTorch 2.11, both oracles). Only
	// torch-oracle.py's one closure for every def behaves otherwise on
	// the random traces it ran (docs/oracle-differences.md), so the engine
	// sets this under Options.SharedCode alone.
	StaticInputsStatic bool
}

// DefaultShapes are PyTorch's defaults.
var DefaultShapes = Shapes{Automatic: true, AssumeStatic: true}

// Compile adds a compiled graph for shapes, with the static inputs of
// this call, after merging shapes into the arguments' history.
func (c *Cache) Compile(fn string, shapes [][]int, dtypes []ops.DType, alias []int, static []bool, how Shapes) *Entry {
	if len(c.frames) < len(shapes) {
		c.frames = slices.Grow(c.frames, len(shapes)-len(c.frames))
	}
	for i, s := range shapes {
		for len(c.frames) <= i {
			c.frames = append(c.frames, argFrame{})
		}
		switch {
		case static[i] && how.StaticInputsStatic:
		case !c.frames[i].seen:
			// The first compile that sees this argument position.
			c.frames[i] = argFrame{seen: true, dims: slices.Clone(s)}
		default:
			c.frames[i].merge(s)
		}
	}
	// Numbered across all of the code object's graphs: FunctionIDs are
	// keyed by it.
	ent := &Entry{Gen: len(c.entries) + 1, fn: fn, dims: cloneDims(shapes), alias: slices.Clone(alias), dtypes: slices.Clone(dtypes), Static: slices.Clone(static)}
	for i, s := range shapes {
		if static[i] && how.StaticInputsStatic {
			continue
		}
		for j, d := range s {
			// Sizes 0 and 1 are specialized even in a dynamic graph.
			dyn := !how.AssumeStatic || (how.Automatic && c.frames[i].dynamic(j))
			if dyn && d > 1 {
				ent.dims[i][j] = -1
			}
		}
	}
	c.entries = append(c.entries, ent)
	return ent
}

// Dynamic reports whether the graph has a dynamic dim (symbolic shapes).
func (e *Entry) Dynamic() bool {
	for _, d := range e.dims {
		if slices.Contains(d, -1) {
			return true
		}
	}
	return false
}

// Clone returns an independent copy of the cache.
func (c *Cache) Clone() *Cache {
	n := &Cache{}
	for _, e := range c.entries {
		n.entries = append(n.entries, &Entry{Gen: e.Gen, fn: e.fn, dims: cloneDims(e.dims), alias: e.alias, dtypes: e.dtypes, Static: e.Static})
	}
	if len(c.frames) > 0 {
		n.frames = make([]argFrame, len(c.frames))
	}
	for i, a := range c.frames {
		n.frames[i] = argFrame{seen: a.seen, dims: slices.Clone(a.dims), anyRank: a.anyRank}
	}
	return n
}

func cloneDims(d [][]int) [][]int {
	if len(d) == 0 {
		return nil
	}
	// Two allocations, the rows and one array they share (each capped,
	// so that an append to one copies), instead of one a row and the
	// outer slice's growths: a compile at each new FunctionID clones its
	// shapes.
	n := 0
	for _, x := range d {
		n += len(x)
	}
	out := make([][]int, len(d))
	flat := make([]int, 0, n)
	for i, x := range d {
		if len(x) == 0 {
			out[i] = slices.Clone(x) // nil or empty, as x, without an allocation
			continue
		}
		start := len(flat)
		flat = append(flat, x...)
		out[i] = flat[start:len(flat):len(flat)]
	}
	return out
}

// Len is the number of graphs compiled so far: what Dynamo's recompile
// limit counts.
func (c *Cache) Len() int { return len(c.entries) }

// sameDTypes compares dtypes, nil meaning every argument float32.
func sameDTypes(a, b []ops.DType) bool {
	for i := range max(len(a), len(b)) {
		var x, y ops.DType
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return false
		}
	}
	return true
}
