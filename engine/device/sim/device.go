package sim

import (
	"errors"
	"fmt"

	"github.com/cgtviz/cgtviz/engine/device"
)

// The fake address space.
const (
	// BaseAddress is the first segment's address: a typical address of a
	// CUDA allocation on Linux, so that addresses in traces and the UI look
	// like the ones a GPU gives.
	BaseAddress device.Ptr = 0x7f0000000000
	// SegmentAlign is the alignment of every segment address, cudaMalloc's
	// 2 MiB granularity.
	SegmentAlign = 2 << 20
)

// Defaults of Options.
const (
	DefaultTotalBytes int64 = 80 << 30 // an 80 GiB GPU
	DefaultName             = "sim"
)

// numStreams is how many streams the device has: device.DefaultStream and
// device.SideStream.
const numStreams = 2

// Options configure New. Zero fields take the defaults.
type Options struct {
	// TotalBytes is the device's memory; MallocSegment fails with
	// device.ErrOutOfMemory beyond it. Default DefaultTotalBytes.
	TotalBytes int64
	// Name is what Name returns. Default DefaultName.
	Name string
	// ValueBytes bounds the values the device computes and holds at once
	// (content.go): a kernel whose output would take it over leaves its
	// output unknown. Default DefaultValueBytes.
	ValueBytes int64
}

// segment is one live allocation. Segments are values in Device.segs so
// that a snapshot copies them in one allocation.
type segment struct {
	addr device.Ptr
	size int64 // bytes asked for; the address space spends a multiple of SegmentAlign
	// ext is the contents (content.go): extents sorted by offset, gaps
	// reading as zeros. It is empty until the segment is first written,
	// so that reserving a large segment costs no Go memory.
	ext []extent
	// gen is the device generation that owns ext. When it differs from
	// Device.gen, ext is shared with a snapshot and is copied before it
	// is changed (copy-on-write).
	gen uint64
}

// capture is the capture state of one stream.
type capture struct {
	active bool
	// nodes are the launches recorded so far. A snapshot holds them with
	// capacity equal to length, so that an append after a Restore never
	// writes into an array another snapshot can see.
	nodes []node
}

// Device is the simulated device. Create it with New. Like every
// device.Device, it is used from one goroutine at a time; its snapshots may
// be read from any goroutine.
type Device struct {
	name  string
	total int64
	used  int64
	next  device.Ptr // the bump pointer: the next segment's address

	segs []segment // live segments, sorted by address
	last int       // index in segs of the last lookup's hit, a cache for the hot path

	gen uint64 // bumped by Snapshot and Restore; see segment.gen

	// dataElems counts the elements of the data extents of the live
	// segments, which valueBytes bounds (content.go).
	dataElems  int64
	valueBytes int64
	// bufA and bufB hold a kernel's inputs when they are not one data
	// extent each (content.go: values).
	bufA, bufB []float32
	// bufO holds the elements a strided kernel leaves in its output's
	// extent (strided.go).
	bufO []float32
	// pieces holds a copy's source extents (content.go: copySpan).
	pieces []extent
	// plans holds a graph launch's node plans from its checking pass to
	// its running pass (graph.go: LaunchGraph).
	plans []plan

	// txn is the open mark (journal.go), nil when none.
	txn *mark
	// spare is the snapshot of the last committed mark, for the next
	// Mark to fill.
	spare *snapshot

	graphs    table[graph] // by GraphHandle, copy-on-write (table.go)
	execs     table[exec]  // by ExecHandle
	nextGraph device.GraphHandle
	nextExec  device.ExecHandle

	capture [numStreams]capture
	// order is what each stream touched that the other has not waited
	// for (order.go).
	order streamOrder

	faults []pending
	calls  [numFaultOps]int
	// fired are the faults that fired. Restore keeps them (see fault), so
	// they are not part of a snapshot; Clone copies them.
	fired []pending

	closed bool
	// broken is set by a Restore given something that is not a snapshot of
	// this device: the caller no longer knows the state, so every later
	// call fails.
	broken error
}

var (
	_ device.Device        = (*Device)(nil)
	_ device.Snapshotter   = (*Device)(nil)
	_ device.Cloner        = (*Device)(nil)
	_ device.SnapshotSizer = (*Device)(nil)
	_ device.ValueKnower   = (*Device)(nil)
	_ device.Initializer   = (*Device)(nil)
)

var errClosed = errors.New("sim: device is closed")

// New returns a device with no segments and no graphs.
func New(opts Options) *Device {
	d := &Device{
		name:       opts.Name,
		total:      opts.TotalBytes,
		valueBytes: opts.ValueBytes,
		next:       BaseAddress,
		last:       -1,
		graphs:     newTable[graph](),
		execs:      newTable[exec](),
	}
	if d.name == "" {
		d.name = DefaultName
	}
	if d.total <= 0 {
		d.total = DefaultTotalBytes
	}
	if d.valueBytes <= 0 {
		d.valueBytes = DefaultValueBytes
	}
	return d
}

// Name returns the name from Options.
func (d *Device) Name() string { return d.name }

func (d *Device) alive() error {
	if d.broken != nil {
		return d.broken
	}
	if d.closed {
		return errClosed
	}
	return nil
}

func checkStream(s device.Stream) error {
	if s < 0 || s >= numStreams {
		return fmt.Errorf("stream %d does not exist (streams: 0, 1)", s)
	}
	return nil
}

// Synchronize has no work to wait for, but it is an error while a stream
// is capturing, as cudaDeviceSynchronize is (it would end the capture with
// cudaErrorStreamCaptureUnsupported): an engine that syncs mid-capture
// fails on the simulator as it would on a GPU.
func (d *Device) Synchronize() error {
	if err := d.alive(); err != nil {
		return err
	}
	for s := range d.capture {
		if d.capture[s].active {
			return fmt.Errorf("sim: synchronize: stream %d is capturing", s)
		}
	}
	d.order.fence()
	return nil
}

// Close releases every segment, graph and executable graph. Later calls
// fail, except Restore of a snapshot taken before Close.
func (d *Device) Close() error {
	if d.closed {
		return nil // closing twice is a no-op (device.Device)
	}
	if d.broken != nil {
		return d.broken
	}
	d.closed = true
	d.commit()
	d.segs = nil
	d.last = -1
	d.used = 0
	d.dataElems = 0
	d.graphs, d.execs = newTable[graph](), newTable[exec]()
	d.capture = [numStreams]capture{}
	d.order.fence()
	return nil
}
