package opaque

import (
	"slices"
	"sync/atomic"

	"github.com/cgtviz/cgtviz/engine/device"
)

// Range is the bytes [Lo, Hi) of device memory; Lo >= Hi is empty.
type Range struct{ Lo, Hi device.Ptr }

func (r Range) empty() bool { return r.Lo >= r.Hi }

// span is the range of n float32 values at p.
func span(p device.Ptr, n int64) Range {
	if n <= 0 {
		return Range{}
	}
	return Range{p, p + device.Ptr(n)*4}
}

// Op is one launch's or copy's effect on which bytes are modelled: Out is
// written from In (empty ranges for no operand). An opaque op makes Out
// not modelled, and so does an op with any input byte not modelled;
// otherwise Out becomes modelled where the op writes every byte of it
// (Whole), and is left as it was where it does not (a strided write that
// skips elements of its extent: those keep what they held).
type Op struct {
	Out    Range
	In     [2]Range
	Opaque bool
	Whole  bool
	// Copy marks a copy (CopyOp): an executable graph's input copy is
	// found by it when pointed at a new source (WithCopy).
	Copy bool
}

// LaunchOp is l's effect: its operands as device.LaunchOperands counts
// them, each input by the bytes it may read. A launch no device runs has
// none; the caller calls this only for a launch it ran or captured.
func LaunchOp(l *device.Launch) Op {
	o, err := device.LaunchOperands(l)
	if err != nil {
		return Op{}
	}
	return Op{Out: span(l.Out, o.Out), In: [2]Range{span(l.A, o.A), span(l.B, o.B)}, Opaque: l.Opaque, Whole: o.OutWhole}
}

// CopyOp is the effect of a copy of n float32 values from src to dst.
func CopyOp(dst, src device.Ptr, n int64) Op {
	return Op{Out: span(dst, n), In: [2]Range{span(src, n)}, Whole: true, Copy: true}
}

// stamps gives every change of every Set a number of its own, so that a
// Program can tell a set it has run on unchanged from any other (clones
// copy their set's number with its ranges, and are then the same set).
var stamps atomic.Uint64

// Set is the bytes of a device that are not modelled, as sorted disjoint
// ranges. The zero Set holds none. Its methods cost nothing but a length
// check while it holds none, the GPU's usual state.
type Set struct {
	r     []Range
	stamp uint64
}

// Empty reports whether every byte is modelled.
func (s *Set) Empty() bool { return len(s.r) == 0 }

// Clone returns an independent copy (a snapshot's or a clone's).
func (s *Set) Clone() Set { return Set{r: slices.Clone(s.r), stamp: s.stamp} }

// Known reports whether every byte of the n float32 values at p is
// modelled.
func (s *Set) Known(p device.Ptr, n int64) bool {
	return len(s.r) == 0 || !s.overlaps(span(p, n))
}

// Written marks the n float32 values at p modelled: the host wrote them
// (a copy from the host, an init), or they were freed.
func (s *Set) Written(p device.Ptr, n int64) {
	if len(s.r) != 0 {
		s.remove(span(p, n))
	}
}

// Apply runs one op's effect.
func (s *Set) Apply(op *Op) {
	switch {
	case op.Out.empty():
	case op.Opaque || (len(s.r) != 0 && (s.overlaps(op.In[0]) || s.overlaps(op.In[1]))):
		s.add(op.Out)
	case op.Whole && len(s.r) != 0:
		s.remove(op.Out)
	}
}

// first returns the index of the first range that ends after p.
func (s *Set) first(p device.Ptr) int {
	i, _ := slices.BinarySearchFunc(s.r, p, func(r Range, p device.Ptr) int {
		if r.Hi <= p {
			return -1
		}
		return 1
	})
	return i
}

func (s *Set) overlaps(x Range) bool {
	if x.empty() || len(s.r) == 0 {
		return false
	}
	i := s.first(x.Lo)
	return i < len(s.r) && s.r[i].Lo < x.Hi
}

// add puts x in the set, merging the ranges it touches.
func (s *Set) add(x Range) {
	if x.empty() {
		return
	}
	i := s.first(x.Lo)
	if i > 0 && s.r[i-1].Hi == x.Lo {
		i-- // a range ending where x begins merges with it
	}
	j := i
	for j < len(s.r) && s.r[j].Lo <= x.Hi {
		x.Lo, x.Hi = min(x.Lo, s.r[j].Lo), max(x.Hi, s.r[j].Hi)
		j++
	}
	if j == i+1 && s.r[i] == x {
		return // already held: no change, no new stamp
	}
	s.r = slices.Replace(s.r, i, j, x)
	s.stamp = stamps.Add(1)
}

// remove takes x out of the set, splitting a range it falls inside.
func (s *Set) remove(x Range) {
	if x.empty() {
		return
	}
	i := s.first(x.Lo)
	j := i
	for j < len(s.r) && s.r[j].Lo < x.Hi {
		j++
	}
	if i == j {
		return
	}
	var keep [2]Range
	n := 0
	if s.r[i].Lo < x.Lo {
		keep[n] = Range{s.r[i].Lo, x.Lo}
		n++
	}
	if s.r[j-1].Hi > x.Hi {
		keep[n] = Range{x.Hi, s.r[j-1].Hi}
		n++
	}
	s.r = slices.Replace(s.r, i, j, keep[:n]...)
	s.stamp = stamps.Add(1)
}

// Ranges returns the ranges not modelled, in address order (for tests and
// messages).
func (s *Set) Ranges() []Range { return slices.Clone(s.r) }

// Program is a captured graph's ops in capture order (the order the
// engine's graphs run them in: each node depends on the one before). It
// never changes once made; an Exec is one executable graph of it.
type Program struct {
	ops    []Op
	opaque bool
}

// NewProgram returns the program of ops (kept, not copied).
func NewProgram(ops []Op) *Program {
	p := &Program{ops: ops}
	for i := range ops {
		p.opaque = p.opaque || ops[i].Opaque
	}
	return p
}

// Exec is an executable graph's effect: its program, with the input
// copies that were pointed at new sources (device.Device's UpdateCopy).
// A replay applies the ops to the set; it skips them when they cannot
// change it: none is opaque and the set is empty, or the set is the one
// they last left unchanged.
type Exec struct {
	prog *Program
	src  map[device.Ptr]Range // a copy's source by its destination, where moved
	// stable is the stamp of a set the ops left unchanged. An Exec is
	// shared by snapshots, whose sets never share a stamp unless equal.
	stable atomic.Uint64
}

// Exec returns an executable graph of p, its copies reading what they
// were captured reading. A nil program gives a nil Exec, which changes
// nothing.
func (p *Program) Exec() *Exec {
	if p == nil {
		return nil
	}
	return &Exec{prog: p}
}

// WithCopy returns a copy of e whose copy writing dst reads the n values
// at src; e is unchanged, as snapshots may share it.
func (e *Exec) WithCopy(dst, src device.Ptr, n int64) *Exec {
	if e == nil {
		return nil
	}
	c := &Exec{prog: e.prog, src: make(map[device.Ptr]Range, len(e.src)+1)}
	for k, v := range e.src {
		c.src[k] = v
	}
	c.src[dst] = span(src, n)
	return c
}

// Run applies e's ops to s, as a replay of the graph does to memory.
func (s *Set) Run(e *Exec) {
	if e == nil || (len(s.r) == 0 && !e.prog.opaque) {
		return
	}
	before := s.stamp
	if before != 0 && e.stable.Load() == before {
		return
	}
	for i := range e.prog.ops {
		op := &e.prog.ops[i]
		if op.Copy && e.src != nil {
			if src, ok := e.src[op.Out.Lo]; ok {
				moved := *op
				moved.In[0] = src
				s.Apply(&moved)
				continue
			}
		}
		s.Apply(op)
	}
	if s.stamp == before {
		e.stable.Store(before)
	}
}
