package sim

import (
	"errors"
	"fmt"
	"slices"

	"github.com/cgtviz/cgtviz/engine/device"
)

// FaultOp is a kind of device call that InjectFault can make fail.
type FaultOp uint8

// The operations faults can be injected into.
const (
	FaultMalloc      FaultOp = iota // MallocSegment; fails as out of memory
	FaultLaunch                     // Launch, captured or not
	FaultCapture                    // BeginCapture, EndCapture and Instantiate, counted together
	FaultGraphLaunch                // LaunchGraph
	FaultCopy                       // CopyHtoD, CopyDtoH and CopyDtoD, counted together
	numFaultOps
)

var faultNames = [numFaultOps]string{
	FaultMalloc:      "malloc_segment",
	FaultLaunch:      "launch",
	FaultCapture:     "capture",
	FaultGraphLaunch: "graph_launch",
	FaultCopy:        "copy",
}

// String returns the name errors use: "malloc_segment", "launch",
// "capture", "graph_launch" or "copy".
func (op FaultOp) String() string {
	if op < numFaultOps {
		return faultNames[op]
	}
	return fmt.Sprintf("fault_op(%d)", uint8(op))
}

// ErrInjected is wrapped by every error that InjectFault caused, so that a
// test can tell an injected failure from a real one.
var ErrInjected = errors.New("injected fault")

// FaultError is the error of a call that failed because a fault was
// injected. It wraps ErrInjected, and for FaultMalloc also
// device.ErrOutOfMemory, because that is how a real allocation fails.
type FaultError struct {
	Op   FaultOp
	Call int // the call's number among the calls of Op, from 1
}

// Error says which op and which of its calls failed:
// "sim: injected fault: malloc_segment call 3 (out of memory)".
func (e *FaultError) Error() string {
	msg := fmt.Sprintf("sim: injected fault: %s call %d", e.Op, e.Call)
	if e.Op == FaultMalloc {
		msg += " (out of memory)"
	}
	return msg
}

// Unwrap returns ErrInjected, and device.ErrOutOfMemory for FaultMalloc.
func (e *FaultError) Unwrap() []error {
	if e.Op == FaultMalloc {
		return []error{ErrInjected, device.ErrOutOfMemory}
	}
	return []error{ErrInjected}
}

// pending is a fault that will fire at call number call of op.
type pending struct {
	op   FaultOp
	call int
}

// InjectFault makes the n-th future call of op fail (n = 1: the next one).
// The failing call changes nothing but the call counter: no memory, no
// handle, no capture state. Several faults may be pending, on the same op or
// different ones; injecting the same one twice is the same as once.
func (d *Device) InjectFault(op FaultOp, n int) error {
	if op >= numFaultOps {
		return fmt.Errorf("sim: inject_fault: unknown op %d", uint8(op))
	}
	if n < 1 {
		return fmt.Errorf("sim: inject_fault %s: call %d: must be 1 (the next call) or more", op, n)
	}
	f := pending{op: op, call: d.calls[op] + n}
	for _, g := range d.faults {
		if g == f {
			return nil
		}
	}
	d.faults = append(d.faults, f)
	return nil
}

// Calls returns how many calls of op were made so far, failed ones
// included (0 for an unknown op).
func (d *Device) Calls(op FaultOp) int {
	if op >= numFaultOps {
		return 0
	}
	return d.calls[op]
}

// fault counts a call of op and returns its injected error, if any. It is
// the first thing each counted method does after checking the device is
// open, so that the failure happens before any state changes.
//
// A fault fires once. Restoring a snapshot taken before it fired puts back
// the pending fault and the call counter, but not the firing: a failure is
// an event, not device state, and the engine restores a snapshot to undo a
// record that failed because of it. Were the fault re-armed, every retry
// would fail again and an injected transient failure would be permanent.
func (d *Device) fault(op FaultOp) error {
	d.calls[op]++
	for i, f := range d.faults {
		if f.op == op && f.call == d.calls[op] {
			// Remove it from a fresh slice: snapshots may share the old one.
			d.faults = append(d.faults[:i:i], d.faults[i+1:]...)
			if slices.Contains(d.fired, f) {
				return nil
			}
			d.fired = append(d.fired, f)
			return &FaultError{Op: op, Call: f.call}
		}
	}
	return nil
}
