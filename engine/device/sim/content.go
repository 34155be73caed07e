package sim

import (
	"math"
	"slices"

	"github.com/cgtviz/cgtviz/traces"
)

// This file holds what the segments contain. A segment's contents are a
// sorted list of extents of symbolic content, so that a device of real
// size (tens of gigabytes of parameters) costs host memory by what the
// trace made, not by its bytes: a fill or a rand init of 4 GiB is one
// extent, and values are computed (held as []float32) only where the work
// stays under the limits below. Elsewhere a kernel's output is unknown,
// and reading it is device.ErrValuesUnknown rather than invented numbers.
// docs/real-size.md says which values are computed and why.

// The value limits. A kernel computes its output's values when every input
// value is known and its work is within them; otherwise its output becomes
// unknown (a fill stays a fill at any size, and an elementwise kernel of
// fills is folded into a fill). They are set above every size the tests
// and recorded programs hold values at (the device suite sums 10^6
// elements and adds 1.6 x 10^6; a recorded trace reproduces values of
// tensors up to 64 elements), and low enough that a real model's weights
// (10^7 elements a matrix and more) are not computed.
const (
	// MaxValueElems is the most elements a kernel computes: its output's,
	// or for sum its input's.
	MaxValueElems = 1 << 21
	// MaxMatmulMACs is the most multiply-adds a matmul computes.
	MaxMatmulMACs = 1 << 27
	// DefaultValueBytes is the default of Options.ValueBytes: room for
	// every value the tests and recorded programs compute (the device
	// suite holds about 32 MiB on one device), and a bound on what a real
	// model's small tensors cost the host.
	DefaultValueBytes int64 = 64 << 20
	// InitValueElems is the most elements of a rand or arange init that
	// are computed when it is made (within ValueBytes); a larger one is an
	// extent whose values are computed where they are read.
	InitValueElems = 1 << 16
)

// contentKind is what an extent holds.
type contentKind uint8

const (
	// kindFill: every element is v. (A fill of +0 is not kept: a gap
	// between extents reads as zeros.)
	kindFill contentKind = iota + 1
	// kindRand: element off+i is traces.Rand(seed, first+i).
	kindRand
	// kindArange: element off+i is float32(first+i).
	kindArange
	// kindData: the elements are data.
	kindData
	// kindUnknown: the values were not computed.
	kindUnknown
)

// extent is the content of elements [off, end) of a segment.
type extent struct {
	off, end int64
	kind     contentKind
	v        float32
	seed     int64
	first    int64
	// data holds end-off elements (kindData). An array is written in place
	// only while gen equals the device's generation: a snapshot, a clone
	// or a mark shares it otherwise, and a write makes a new one.
	data []float32
	gen  uint64
}

// extentBytes is what one extent costs in a copied list, for SnapshotBytes.
const extentBytes = 80

// cut is x restricted to [lo, hi), which lies within it.
func (x extent) cut(lo, hi int64) extent {
	y := x
	y.off, y.end = lo, hi
	switch x.kind {
	case kindRand, kindArange:
		y.first = x.first + (lo - x.off)
	case kindData:
		y.data = x.data[lo-x.off : hi-x.off : hi-x.off]
	}
	return y
}

// search returns the index of the first extent of s that ends after off.
func (s *segment) search(off int64) int {
	lo, hi := 0, len(s.ext)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if s.ext[mid].end <= off {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// known reports whether every value of sp is known.
func (d *Device) known(sp span) bool {
	if sp.seg < 0 {
		return true
	}
	s := &d.segs[sp.seg]
	end := sp.off + sp.n
	for i := s.search(sp.off); i < len(s.ext) && s.ext[i].off < end; i++ {
		if s.ext[i].kind == kindUnknown {
			return false
		}
	}
	return true
}

// values returns sp's values when every one is known and there are at most
// MaxValueElems of them: in place when one data extent holds them all (the
// hot path of a replay), else computed into *buf. The caller must not
// write through the result.
func (d *Device) values(sp span, buf *[]float32) ([]float32, bool) {
	if sp.seg < 0 {
		return nil, true
	}
	s := &d.segs[sp.seg]
	end := sp.off + sp.n
	if i := s.search(sp.off); i < len(s.ext) {
		if x := &s.ext[i]; x.kind == kindData && x.off <= sp.off && x.end >= end {
			return x.data[sp.off-x.off : end-x.off : end-x.off], true
		}
	}
	if sp.n > MaxValueElems || !d.known(sp) {
		return nil, false
	}
	if int64(cap(*buf)) < sp.n {
		*buf = make([]float32, sp.n)
	}
	out := (*buf)[:sp.n]
	d.materialise(s, sp.off, out)
	return out, true
}

// materialise computes the elements of s from off into out, which the
// caller has checked hold no unknown value.
func (d *Device) materialise(s *segment, off int64, out []float32) {
	end := off + int64(len(out))
	clear(out)
	for i := s.search(off); i < len(s.ext) && s.ext[i].off < end; i++ {
		x := &s.ext[i]
		lo, hi := max(x.off, off), min(x.end, end)
		dst := out[lo-off : hi-off]
		switch x.kind {
		case kindFill:
			for k := range dst {
				dst[k] = x.v
			}
		case kindRand:
			first := x.first + (lo - x.off)
			for k := range dst {
				dst[k] = traces.Rand(x.seed, first+int64(k))
			}
		case kindArange:
			first := x.first + (lo - x.off)
			for k := range dst {
				dst[k] = float32(first + int64(k))
			}
		case kindData:
			copy(dst, x.data[lo-x.off:hi-x.off])
		}
	}
}

// uniform reports whether every element of sp is one value, known without
// reading data (a gap or one fill extent), and which.
func (d *Device) uniform(sp span) (float32, bool) {
	if sp.seg < 0 {
		return 0, false
	}
	s := &d.segs[sp.seg]
	end := sp.off + sp.n
	i := s.search(sp.off)
	if i == len(s.ext) || s.ext[i].off >= end {
		return 0, true // a gap
	}
	x := &s.ext[i]
	if x.kind == kindFill && x.off <= sp.off && x.end >= end {
		return x.v, true
	}
	return 0, false
}

// inPlace returns sp's elements for writing in place, when one data extent
// that the device owns holds them all; else nil.
func (d *Device) inPlace(sp span) []float32 {
	s := &d.segs[sp.seg]
	if s.gen != d.gen {
		return nil
	}
	end := sp.off + sp.n
	if i := s.search(sp.off); i < len(s.ext) {
		if x := &s.ext[i]; x.kind == kindData && x.gen == d.gen && x.off <= sp.off && x.end >= end {
			return x.data[sp.off-x.off : end-x.off : end-x.off]
		}
	}
	return nil
}

// target returns sp's elements for a kernel to write all of: in place
// when possible, else a new array that becomes sp's extent. It returns
// nil when a new array would take the device's computed values over
// Options.ValueBytes (unless force: a host copy's values are the
// caller's, already in memory); the caller then marks sp unknown. Inputs
// must be read before: a new array replaces what sp held.
func (d *Device) target(sp span, force bool) []float32 {
	if sp.seg < 0 {
		return nil
	}
	if out := d.inPlace(sp); out != nil {
		return out
	}
	if !force && (d.dataElems-d.dataIn(sp)+sp.n)*4 > d.valueBytes {
		return nil
	}
	data := make([]float32, sp.n)
	d.set(sp, extent{kind: kindData, data: data, gen: d.gen})
	return data
}

// roomFor reports whether target(sp, false) would give an array: sp is
// written in place, or a new array stays within ValueBytes.
func (d *Device) roomFor(sp span) bool {
	if sp.seg < 0 || d.inPlace(sp) != nil {
		return true
	}
	return (d.dataElems-d.dataIn(sp)+sp.n)*4 <= d.valueBytes
}

// dataIn counts the data elements within sp.
func (d *Device) dataIn(sp span) int64 {
	s := &d.segs[sp.seg]
	end := sp.off + sp.n
	var n int64
	for i := s.search(sp.off); i < len(s.ext) && s.ext[i].off < end; i++ {
		if x := &s.ext[i]; x.kind == kindData {
			n += min(x.end, end) - max(x.off, sp.off)
		}
	}
	return n
}

// set makes x the content of sp (x's off and end are set here). A fill of
// +0 leaves a gap.
func (d *Device) set(sp span, x extent) {
	if sp.seg < 0 {
		return
	}
	s := &d.segs[sp.seg]
	off, end := sp.off, sp.off+sp.n
	x.off, x.end = off, end
	if s.gen != d.gen {
		s.ext = slices.Clone(s.ext)
		s.gen = d.gen
	}
	i := s.search(off)
	j := i
	for j < len(s.ext) && s.ext[j].off < end {
		j++
	}
	var repl [3]extent
	k := 0
	if i < j {
		if first := s.ext[i]; first.off < off {
			repl[k] = first.cut(first.off, off)
			k++
		}
		for m := i; m < j; m++ {
			if y := &s.ext[m]; y.kind == kindData {
				d.dataElems -= y.end - y.off
			}
		}
	}
	if !(x.kind == kindFill && math.Float32bits(x.v) == 0) {
		repl[k] = x
		k++
	}
	if i < j {
		if last := s.ext[j-1]; last.end > end {
			repl[k] = last.cut(end, last.end)
			k++
		}
	}
	for m := range k {
		if y := &repl[m]; y.kind == kindData {
			d.dataElems += y.end - y.off
		}
	}
	s.ext = slices.Replace(s.ext, i, j, repl[:k]...)
}

// fill writes v to every element of sp: in place when an owned data
// extent holds it and it is small, else as one fill extent.
func (d *Device) fill(sp span, v float32) {
	if sp.seg < 0 {
		return
	}
	if sp.n <= MaxValueElems {
		if out := d.inPlace(sp); out != nil {
			for i := range out {
				out[i] = v
			}
			return
		}
	}
	d.set(sp, extent{kind: kindFill, v: v})
}

// unknown marks sp's values unknown.
func (d *Device) unknown(sp span) {
	if sp.seg < 0 {
		return
	}
	d.set(sp, extent{kind: kindUnknown})
}

// copySpan copies src's contents to dst, as memmove does when they
// overlap: values in place when both are plain data, else extent by
// extent, so that a copy of a rand init or of unknown values costs what
// their extents do.
func (d *Device) copySpan(dst, src span) {
	if dst.seg < 0 {
		return
	}
	if out := d.inPlace(dst); out != nil {
		s := &d.segs[src.seg]
		if i := s.search(src.off); i < len(s.ext) {
			if x := &s.ext[i]; x.kind == kindData && x.off <= src.off && x.end >= src.off+src.n {
				copy(out, x.data[src.off-x.off:src.off+src.n-x.off])
				return
			}
		}
	}
	d.copyPieces(dst, src)
}

// copyPieces is copySpan extent by extent. It is a function of its own so
// that copySpan, which every replay's input copy runs, stays a few
// instructions long: the replay path's code outgrew the instruction cache,
// and its misses grew with it.
func (d *Device) copyPieces(dst, src span) {
	// The pieces of src, read before dst is written (they may overlap).
	s := &d.segs[src.seg]
	end := src.off + src.n
	pieces := d.pieces[:0]
	for i := s.search(src.off); i < len(s.ext) && s.ext[i].off < end; i++ {
		x := s.ext[i]
		pieces = append(pieces, x.cut(max(x.off, src.off), min(x.end, end)))
	}
	defer func() {
		clear(pieces) // (they may hold arrays the device no longer does)
		d.pieces = pieces[:0]
	}()
	d.set(dst, extent{kind: kindFill}) // the gaps: zeros
	shift := dst.off - src.off
	for _, p := range pieces {
		sp := span{seg: dst.seg, off: p.off + shift, n: p.end - p.off}
		if p.kind == kindData {
			// The array is copied: the source may be written in place.
			if out := d.target(sp, false); out != nil {
				copy(out, p.data)
			} else {
				d.unknown(sp)
			}
			continue
		}
		d.set(sp, p)
	}
}

// contentBytes is what a segment's contents cost in a snapshot that shares
// nothing with the device: its extents and the data they hold.
func (s *segment) contentBytes() int64 {
	n := int64(len(s.ext)) * extentBytes
	for i := range s.ext {
		n += int64(len(s.ext[i].data)) * 4
	}
	return n
}
