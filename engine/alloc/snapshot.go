package alloc

import (
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/cgtviz/cgtviz/engine/alloc/pickle"
)

// WriteSnapshot writes the allocators' state and event logs as a memory
// snapshot in PyTorch's format (torch.cuda.memory._dump_snapshot): a pickle
// of {"segments", "device_traces", "allocator_settings"} that
// pytorch.org/memory_viz and `python -m torch.cuda._memory_viz` open. There
// is one allocator per device; device_traces has an entry for every device
// ordinal up to the largest. Frames carry the trace line and description
// of each event ({"filename": "trace", "line": L, "name": what}); time_us is
// the entry's sequence number. Checkpoint markers are left out. When the
// bounded log dropped entries, the kept suffix still undoes to a valid
// earlier state: the blocks it never allocated show as allocated from the
// start.
func WriteSnapshot(w io.Writer, allocs []*Allocator) error {
	e := pickle.NewEncoder()
	writeSnapshot(e, allocs)
	_, err := e.WriteTo(w)
	if err != nil {
		return fmt.Errorf("write memory snapshot: %w", err)
	}
	return nil
}

func writeSnapshot(e *pickle.Encoder, allocs []*Allocator) {
	sorted := slices.Clone(allocs)
	slices.SortStableFunc(sorted, func(x, y *Allocator) int { return x.device - y.device })
	e.BeginDict()
	e.String("segments")
	e.BeginList()
	for _, a := range sorted {
		for _, s := range a.segs {
			writeSegment(e, a.device, viewSegment(s))
		}
	}
	e.EndList()

	e.String("device_traces")
	e.BeginList()
	ndev := 0
	for _, a := range sorted {
		ndev = max(ndev, a.device+1)
	}
	for d := 0; d < ndev; d++ {
		e.BeginList()
		for _, a := range sorted {
			if a.device == d {
				writeTrace(e, a)
			}
		}
		e.EndList()
	}
	e.EndList()

	e.String("allocator_settings")
	var opts Options
	if len(sorted) > 0 {
		opts = sorted[0].opts
	}
	writeSettings(e, opts)
	e.EndDict()
}

func writeFrames(e *pickle.Encoder, line int, what string) {
	e.BeginList()
	if line != 0 || what != "" {
		e.BeginDict()
		e.String("filename")
		e.String("trace")
		e.String("line")
		e.Int(int64(line))
		e.String("name")
		e.String(what)
		e.EndDict()
	}
	e.EndList()
}

func writePoolID(e *pickle.Encoder, id PoolID) {
	e.BeginTuple()
	e.Int(id.First)
	e.Int(id.Second)
	e.EndTuple()
}

func writeSegment(e *pickle.Encoder, dev int, s Segment) {
	e.BeginDict()
	e.String("device")
	e.Int(int64(dev))
	e.String("address")
	e.Uint(uint64(s.Addr))
	e.String("total_size")
	e.Int(s.Size)
	e.String("allocated_size")
	e.Int(s.AllocatedSize())
	e.String("active_size")
	e.Int(s.AllocatedSize())
	e.String("requested_size")
	e.Int(s.RequestedSize())
	e.String("stream")
	e.Int(int64(s.Stream))
	e.String("segment_type")
	if s.Small {
		e.String("small")
	} else {
		e.String("large")
	}
	e.String("segment_pool_id")
	writePoolID(e, s.Pool)
	e.String("is_expandable")
	e.Bool(false)
	e.String("frames")
	writeFrames(e, s.Line, s.What)
	e.String("blocks")
	e.BeginList()
	for _, b := range s.Blocks {
		e.BeginDict()
		e.String("address")
		e.Uint(uint64(b.Addr))
		e.String("size")
		e.Int(b.Size)
		e.String("requested_size")
		e.Int(b.RequestedSize)
		e.String("state")
		if b.Allocated {
			e.String("active_allocated")
			e.String("frames")
			writeFrames(e, b.Line, b.What)
		} else {
			e.String("inactive")
			e.String("frames")
			writeFrames(e, 0, "")
		}
		e.EndDict()
	}
	e.EndList()
	e.EndDict()
}

// snapshotTrace returns the entries a snapshot shows: the kept log less
// checkpoint markers, starting after a free_completed whose free_requested
// was dropped.
func snapshotTrace(a *Allocator) []TraceEntry {
	t := a.Trace()
	out := t[:0:0]
	for i, en := range t {
		if en.Action == ActionCheckpoint {
			continue
		}
		if len(out) == 0 && en.Action == ActionFreeCompleted && (i == 0 || t[i-1].Action != ActionFreeRequested) {
			continue
		}
		out = append(out, en)
	}
	return out
}

func writeTrace(e *pickle.Encoder, a *Allocator) {
	for _, en := range snapshotTrace(a) {
		e.BeginDict()
		e.String("action")
		e.String(string(en.Action))
		if en.Action == ActionOOM {
			e.String("device_free")
			e.Int(en.DeviceFree)
		} else {
			e.String("addr")
			e.Uint(uint64(en.Addr))
		}
		e.String("size")
		e.Int(en.Size)
		e.String("stream")
		e.Int(int64(en.Stream))
		e.String("time_us")
		e.Int(en.Seq)
		e.String("frames")
		writeFrames(e, en.Line, en.What)
		e.EndDict()
	}
}

func writeSettings(e *pickle.Encoder, o Options) {
	e.BeginDict()
	e.String("PYTORCH_CUDA_ALLOC_CONF")
	e.String(o.Conf())
	e.String("max_split_size")
	if o.MaxSplitSize > 0 {
		e.Int(o.MaxSplitSize)
	} else {
		e.Int(-1)
	}
	e.String("garbage_collection_threshold")
	e.Float(0)
	e.String("expandable_segments")
	e.Bool(false)
	e.String("release_lock_on_cudamalloc")
	e.Bool(false)
	e.String("roundup_power2_divisions")
	e.BeginDict()
	for i, d := range o.RoundupPower2Divisions {
		e.String(strconv.FormatInt(int64(1)<<i, 10))
		e.Int(int64(d))
	}
	e.EndDict()
	e.EndDict()
}

// Conf renders the options as a PYTORCH_CUDA_ALLOC_CONF string.
func (o Options) Conf() string {
	s := ""
	if o.MaxSplitSize > 0 {
		s = fmt.Sprintf("max_split_size_mb:%d", o.MaxSplitSize>>20)
	}
	var divs []string
	for i, d := range o.RoundupPower2Divisions {
		if d > 1 {
			divs = append(divs, fmt.Sprintf("%dMB:%d", int64(1)<<(20+i)>>20, d))
		}
	}
	if len(divs) > 0 {
		if s != "" {
			s += ","
		}
		s += "roundup_power2_divisions:["
		for i, d := range divs {
			if i > 0 {
				s += ","
			}
			s += d
		}
		s += "]"
	}
	return s
}
