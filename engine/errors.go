package engine

import (
	"errors"
	"fmt"

	"github.com/cgtviz/cgtviz/engine/alloc"
	"github.com/cgtviz/cgtviz/traces/ops"
)

// ErrorKind says what kind of failure a record met, so that a caller tests
// a kind instead of matching a message.
type ErrorKind uint8

// The kinds of a record's error.
const (
	// ErrRecord: the record cannot run as written (an unbound name, a
	// shape that does not fit, a device that failed, ...).
	ErrRecord ErrorKind = iota
	// ErrOverwritten: PyTorch's "accessing tensor output of CUDAGraphs that
	// has been overwritten by a subsequent run".
	ErrOverwritten
	// ErrOutOfMemory: the caching allocator could not satisfy a malloc
	// (PyTorch's torch.OutOfMemoryError).
	ErrOutOfMemory
	// ErrAssertion: PyTorch 2.11's AssertionError after the chained-call
	// failure (--handoff raise).
	ErrAssertion
	// ErrInvariant: Options.Check found the engine's invariants broken
	// after the record: a bug in cgtviz, not in the trace.
	ErrInvariant
	// ErrInternal: the engine panicked on the record: a bug in cgtviz.
	ErrInternal
)

var kindNames = [...]string{"record", "overwritten", "out of memory", "assertion", "invariant", "internal"}

// String names the kind.
func (k ErrorKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("ErrorKind(%d)", k)
}

// Error is the error of one record: where it is (file:line, the record),
// its kind and the cause.
type Error struct {
	Kind ErrorKind
	File string
	Line int
	// What names the record: "call foo", "read x", ...
	What string
	Err  error
}

// Error reads file:line: what: cause, the form every message of cgtviz has.
func (e *Error) Error() string {
	return fmt.Sprintf("%s:%d: %s: %v", e.File, e.Line, e.What, e.Err)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// OverwrittenError is PyTorch's error for a data access to an output that a
// later generation freed; Msg is PyTorch's message with the stack trace
// of the record that made the tensor.
type OverwrittenError struct{ Msg string }

func (e *OverwrittenError) Error() string { return e.Msg }

// overwrittenMsg is PyTorch 2.11's message, with the trace line that
// produced the tensor as its stack trace.
func overwrittenMsg(stack string) string {
	if stack == "" {
		stack = "[Could not find stack trace]"
	}
	return "Error: accessing tensor output of CUDAGraphs that has been overwritten by a subsequent run. Stack trace: " +
		stack + ". To prevent overwriting, clone the tensor outside of torch.compile() or call torch.compiler.cudagraph_mark_step_begin() before each model invocation."
}

// keptError is an error raised after the record changed the engine, where
// PyTorch 2.11 keeps the change (HandoffRaise): Apply reports it without
// rolling back. It is returned as it is, never wrapped: Apply finds it with
// a type assertion, which, unlike errors.As, costs no allocation on the
// replay path.
type keptError struct {
	err error
	// action is the step's action, when the error leaves one ("" for none).
	action Action
}

func (k *keptError) Error() string { return k.err.Error() }
func (k *keptError) Unwrap() error { return k.err }

// raisedError is an error PyTorch raised inside CUDAGraphTreeManager.run:
// inside one of its entry points (run_eager, record_function, execute_node)
// or before any (action eager). Its step says which action, and for a
// replay which node, raised, as the recorder's expect does (manager.raiseIn).
// Returned as it is, the record fails and is rolled back; wrapped in a
// keptError (HandoffRaise), what PyTorch 2.11 changed before it raised stays.
type raisedError struct {
	err              error
	action           Action
	node, parent     int
	nodeFn, parentFn string
}

func (e *raisedError) Error() string { return e.err.Error() }
func (e *raisedError) Unwrap() error { return e.err }

// pytorchRaised reports whether err is one PyTorch itself raises while a
// function runs (out of memory, the overwritten error), as opposed to a
// failure of cgtviz's device or of the trace, which never leaves PyTorch's
// state behind.
func pytorchRaised(err error) bool {
	var (
		ow  *OverwrittenError
		oom *alloc.OutOfMemoryError
	)
	return errors.As(err, &ow) || errors.As(err, &oom)
}

// assertionError is PyTorch 2.11's AssertionError (dealloc_current_path_weakrefs).
type assertionError struct{ msg string }

func (e *assertionError) Error() string { return e.msg }

// invariantError wraps a broken invariant found by Options.Check.
type invariantError struct{ err error }

func (e *invariantError) Error() string { return "invariant violated: " + e.err.Error() }
func (e *invariantError) Unwrap() error { return e.err }

// internalError is a recovered panic.
type internalError struct{ p any }

func (e *internalError) Error() string { return fmt.Sprintf("internal error: %v", e.p) }

// kindOf classifies a record's failure.
func kindOf(err error) ErrorKind {
	var (
		ow  *OverwrittenError
		oom *alloc.OutOfMemoryError
		as  *assertionError
		inv *invariantError
		in  *internalError
	)
	switch {
	case errors.As(err, &in):
		return ErrInternal
	case errors.As(err, &inv):
		return ErrInvariant
	case errors.As(err, &as):
		return ErrAssertion
	case errors.As(err, &ow):
		return ErrOverwritten
	case errors.As(err, &oom):
		return ErrOutOfMemory
	}
	return ErrRecord
}

// unmodelledError: the values of a dtype other than float32 are not
// computed (the memory they take is).
type unmodelledError struct {
	name string
	dt   ops.DType
}

func (e *unmodelledError) Error() string {
	return fmt.Sprintf("tensor %q is %s: cgtviz computes float32 values only (the bytes it takes are exact)", e.name, e.dt)
}
