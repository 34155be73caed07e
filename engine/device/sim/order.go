package sim

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/cgtviz/cgtviz/engine/device"
)

// This file checks the order of the two streams. The simulated device runs
// every launch when it is made, so it would give right values for an
// engine that forgot a WaitStream; a GPU runs the two streams' work in
// either order unless one waits for the other, and such an engine reads
// whatever was there before (engine's TestRunStreamMatchesRun read zeros
// on the H200 twice in 87 runs for want of one: a warmup's output copied
// out of the pool on the default stream while the side stream could still
// be writing it). Here the race is an error, every time.
//
// Each stream keeps the memory it touched since the other stream last
// waited for it (pending). An access on stream s to memory that the other
// stream wrote, or a write to memory it read, while that access is still
// pending, is a *StreamOrderError. WaitStream(s, o) orders o's pending
// accesses before everything s does next; host copies and Synchronize
// order both streams' (the CUDA device's host copies wait for both
// streams); Restore and Undo replace the contents the accesses were to.

// StreamOrderError is a launch or copy on one stream that touches memory
// the other stream touched (one of the two writing) with no wait of the
// first stream for the other since: on a GPU the two may run in either
// order.
type StreamOrderError struct {
	Stream device.Stream // the stream of the access that found the race
	Op     string        // what it ran: a kernel's name, "copy"
	Addr   device.Ptr    // the first byte both touch
	Write  bool          // the access writes there
	// Other is what the other stream ran there, and whether it wrote.
	Other      string
	OtherWrite bool
}

func (e *StreamOrderError) Error() string {
	verb := func(w bool) string {
		if w {
			return "writes"
		}
		return "reads"
	}
	return fmt.Sprintf("stream order: %s on stream %d %s 0x%x, which %s on stream %d %s, and stream %d has not waited for stream %d since (WaitStream): on a GPU the two may run in either order",
		e.Op, e.Stream, verb(e.Write), uint64(e.Addr), e.Other, 1-e.Stream, verb(e.OtherWrite), e.Stream, 1-e.Stream)
}

// ErrStreamOrder is what every *StreamOrderError matches with errors.Is.
var ErrStreamOrder = errors.New("stream order")

// Is makes errors.Is(err, ErrStreamOrder) true.
func (e *StreamOrderError) Is(target error) bool { return target == ErrStreamOrder }

// access is a byte range one stream touched: [lo, hi).
type access struct {
	lo, hi device.Ptr
	write  bool
	op     string
}

// compactAt is the length at which a stream's pending accesses are merged
// (a long run on one stream, with no wait, touching the same memory again
// and again): merging overlapping ranges of one kind loses nothing the
// check asks (does a range meet any of them).
const compactAt = 1 << 12

type streamOrder struct {
	pending [numStreams][]access
	// limit is the length at which a stream's accesses are merged next:
	// twice what the last merge left (distinct ranges do not merge), so
	// that merging costs O(log n) an access, amortized.
	limit [numStreams]int
}

// touch checks what a planned operation on s accesses (check), then adds
// it to s's pending accesses (note): a plan writes p.out and reads p.a and
// p.b (noSpan entries touch nothing).
func (d *Device) touch(s device.Stream, op string, p *plan) error {
	if err := d.check(s, op, p); err != nil {
		return err
	}
	d.note(s, op, p)
	return nil
}

// check is touch's test against the other stream's pending accesses.
func (d *Device) check(s device.Stream, op string, p *plan) error {
	other := d.order.pending[1-s]
	if len(other) == 0 {
		return nil
	}
	if err := d.race(s, op, p.out, true, other); err != nil {
		return err
	}
	if err := d.race(s, op, p.a, false, other); err != nil {
		return err
	}
	return d.race(s, op, p.b, false, other)
}

// note is touch's record of the accesses as s's pending ones.
func (d *Device) note(s device.Stream, op string, p *plan) {
	d.noteSpan(s, op, p.out, true)
	d.noteSpan(s, op, p.a, false)
	d.noteSpan(s, op, p.b, false)
}

func (d *Device) noteSpan(s device.Stream, op string, sp span, write bool) {
	if sp.seg >= 0 {
		d.order.add(s, d.accessOf(sp, write, op))
	}
}

func (d *Device) accessOf(sp span, write bool, op string) access {
	lo := d.segs[sp.seg].addr + device.Ptr(sp.off*4)
	return access{lo: lo, hi: lo + device.Ptr(sp.n*4), write: write, op: op}
}

// race returns the error for sp (written when write) against the first
// pending access of the other stream it conflicts with: one of two
// overlapping accesses writes.
func (d *Device) race(s device.Stream, op string, sp span, write bool, other []access) error {
	if sp.seg < 0 {
		return nil
	}
	a := d.accessOf(sp, write, op)
	for _, b := range other {
		if (a.write || b.write) && a.lo < b.hi && b.lo < a.hi {
			return &StreamOrderError{Stream: s, Op: op, Addr: max(a.lo, b.lo), Write: write, Other: b.op, OtherWrite: b.write}
		}
	}
	return nil
}

// recent is how many of a stream's last pending accesses a new one is
// looked for among before it is added: a loop launching over the same
// buffers (each launch two reads and a write) adds nothing after its first
// launches.
const recent = 8

func (o *streamOrder) add(s device.Stream, a access) {
	p := o.pending[s]
	for i := len(p) - 1; i >= max(0, len(p)-recent); i-- {
		if p[i].lo == a.lo && p[i].hi == a.hi && p[i].write == a.write {
			return
		}
	}
	p = append(p, a)
	if len(p) >= max(compactAt, o.limit[s]) {
		p = compact(p)
		o.limit[s] = 2 * len(p)
	}
	o.pending[s] = p
}

// compact merges the overlapping or adjacent ranges of each kind (reads,
// writes); a merged range keeps the first op's name.
func compact(p []access) []access {
	slices.SortFunc(p, func(x, y access) int {
		// writes first, then by address
		return cmp.Or(-cmp.Compare(b2i(x.write), b2i(y.write)), cmp.Compare(x.lo, y.lo))
	})
	out := p[:0]
	for _, a := range p {
		if n := len(out); n > 0 && out[n-1].write == a.write && a.lo <= out[n-1].hi {
			out[n-1].hi = max(out[n-1].hi, a.hi)
			continue
		}
		out = append(out, a)
	}
	return out
}

// waited orders other's pending accesses before what s does next
// (WaitStream(s, other)).
func (o *streamOrder) waited(other device.Stream) {
	o.pending[other], o.limit[other] = o.pending[other][:0], 0
}

// fence orders every pending access of both streams before all later work.
func (o *streamOrder) fence() {
	for s := range o.pending {
		o.pending[s], o.limit[s] = o.pending[s][:0], 0
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
