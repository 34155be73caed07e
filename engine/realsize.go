package engine

import (
	"errors"
	"fmt"

	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/traces"
	"github.com/cgtviz/cgtviz/traces/ops"
)

// This file is what the engine does about tensors of real size
// (docs/real-size.md): it initialises them on the device when the device
// can (device.Initializer), so that a model's parameters are never
// generated on the host, and it reads values to the host only where the
// device holds them and they fit a bound, reading a view through its
// offset and strides.

// MaxHostValues is the most elements the engine reads to the host for one
// tensor (a read, an expect of values, a peek): 64 MiB of float32. A
// larger tensor's values are reported as not modelled rather than copied.
const MaxHostValues = 1 << 24

// ValuesUnknownError says that a tensor's values are not modelled: the
// simulated device did not compute them (device.ErrValuesUnknown), or
// there are more than MaxHostValues to read. A read record passes over
// it, as over a dtype whose values are not modelled; an expect of values
// fails with it; the TUI shows it in place of numbers.
type ValuesUnknownError struct {
	Name  string
	Elems int64
	// TooLarge is set when the values were not read for their number,
	// rather than because the device does not hold them.
	TooLarge bool
}

func (e *ValuesUnknownError) Error() string {
	if e.TooLarge {
		return fmt.Sprintf("tensor %q: values not modelled at this size (%d elements, over the %d the host reads)", e.Name, e.Elems, MaxHostValues)
	}
	return fmt.Sprintf("tensor %q: values not modelled at this size (the simulated device computes the values of small tensors and of what is computed from them; these come from larger ones: docs/real-size.md)", e.Name)
}

// Unwrap lets errors.Is find device.ErrValuesUnknown.
func (e *ValuesUnknownError) Unwrap() error { return device.ErrValuesUnknown }

// initTensor sets a new float32 tensor's values at p as its record says:
// literal values are copied from the host, anything else is made on the
// device when it is a device.Initializer, else generated here and copied.
func (e *Engine) initTensor(dev device.Device, p device.Ptr, rec *traces.Record) error {
	n := traces.NumElems(rec.Shape)
	if in, ok := dev.(device.Initializer); ok {
		switch rec.Init {
		case traces.InitZeros, "":
			return in.InitFill(p, n, 0)
		case traces.InitOnes:
			return in.InitFill(p, n, 1)
		case traces.InitRand:
			return in.InitRand(p, n, rec.Seed)
		case traces.InitArange:
			return in.InitArange(p, n)
		}
	}
	// The values go through one reused buffer: the device copies them
	// (CopyHtoD keeps nothing of src).
	vals, err := initValues(rec, e.scratch.vals)
	e.scratch.vals = vals
	if err != nil {
		return err
	}
	return dev.CopyHtoD(p, vals)
}

// tensorValues copies a tensor's values to the host, through its offset
// and strides (an expand reads its one element several times, a column
// of a matrix every row's element). what names the use in errors.
func (e *Engine) tensorValues(what, name string, t *Tensor, st *Storage) ([]float32, error) {
	n := numElems(t.Shape)
	if n == 0 {
		return []float32{}, nil
	}
	span := n // the elements of the storage the view reaches from its start
	if t.Strides != nil {
		x, err := ops.ViewExtent(t.Shape, t.Strides, 0)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", what, name, err)
		}
		span = x
	}
	if n > MaxHostValues || span > MaxHostValues {
		return nil, &ValuesUnknownError{Name: name, Elems: n, TooLarge: true}
	}
	dev := e.devs[st.Dev].dev
	p := st.Ptr + device.Ptr(t.Offset)
	if k, ok := dev.(device.ValueKnower); ok {
		known, err := k.ValuesKnown(p, span)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", what, name, err)
		}
		if !known {
			return nil, &ValuesUnknownError{Name: name, Elems: n}
		}
	}
	raw := make([]float32, span)
	if err := dev.CopyDtoH(raw, p); err != nil {
		if errors.Is(err, device.ErrValuesUnknown) {
			return nil, &ValuesUnknownError{Name: name, Elems: n}
		}
		return nil, fmt.Errorf("%s %s: %w", what, name, err)
	}
	if t.Strides == nil {
		return raw, nil
	}
	return gather(raw, t.Shape, t.Strides, n), nil
}

// gather reads the n elements of a view of shape and strides over raw, in
// row-major order.
func gather(raw []float32, shape []int, strides []int64, n int64) []float32 {
	out := make([]float32, 0, n)
	idx := make([]int, len(shape))
	for {
		var off int64
		for i, j := range idx {
			off += int64(j) * strides[i]
		}
		out = append(out, raw[off])
		d := len(shape) - 1
		for d >= 0 {
			idx[d]++
			if idx[d] < shape[d] {
				break
			}
			idx[d] = 0
			d--
		}
		if d < 0 {
			return out
		}
	}
}
