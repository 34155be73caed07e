// Package unpickle reads back the pickles of engine/alloc/pickle, to test
// them: exactly the opcodes MemoryViz's unpickler accepts, nothing more, so
// a pickle it reads is one memory_viz reads.
package unpickle

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Dict is a decoded dict with string keys, in the order written.
type Dict struct {
	Keys []string
	Vals map[string]any
}

// Tuple is a decoded tuple (a list is []any).
type Tuple []any

type mark struct{}

// Decode reads one pickle: ints as int64 (uint64 above MaxInt64), floats
// as float64, str as string, bool, nil, []any, Tuple and *Dict.
func Decode(b []byte) (any, error) {
	var stack []any
	pos := 0
	need := func(n int) ([]byte, error) {
		if pos+n > len(b) {
			return nil, fmt.Errorf("offset %d: truncated", pos)
		}
		s := b[pos : pos+n]
		pos += n
		return s, nil
	}
	popMark := func() ([]any, error) {
		for i := len(stack) - 1; i >= 0; i-- {
			if _, ok := stack[i].(mark); ok {
				items := append([]any(nil), stack[i+1:]...)
				stack = stack[:i]
				return items, nil
			}
		}
		return nil, fmt.Errorf("offset %d: no mark", pos)
	}
	top := func() (any, error) {
		if len(stack) == 0 {
			return nil, fmt.Errorf("offset %d: empty stack", pos)
		}
		return stack[len(stack)-1], nil
	}
	for {
		opb, err := need(1)
		if err != nil {
			return nil, err
		}
		op := opb[0]
		switch op {
		case 0x80:
			v, err := need(1)
			if err != nil {
				return nil, err
			}
			if v[0] < 2 || v[0] > 4 {
				return nil, fmt.Errorf("unhandled version %d", v[0])
			}
		case '.':
			if len(stack) != 1 {
				return nil, fmt.Errorf("stop with %d values on the stack", len(stack))
			}
			if _, ok := stack[0].(mark); ok {
				return nil, fmt.Errorf("stop with a mark on the stack")
			}
			if pos != len(b) {
				return nil, fmt.Errorf("%d bytes after stop", len(b)-pos)
			}
			return stack[0], nil
		case '(':
			stack = append(stack, mark{})
		case '}':
			stack = append(stack, &Dict{Vals: map[string]any{}})
		case ']':
			stack = append(stack, []any{})
		case ')':
			stack = append(stack, Tuple{})
		case 'u':
			items, err := popMark()
			if err != nil {
				return nil, err
			}
			t, err := top()
			if err != nil {
				return nil, err
			}
			d, ok := t.(*Dict)
			if !ok || len(items)%2 != 0 {
				return nil, fmt.Errorf("offset %d: bad setitems", pos)
			}
			for i := 0; i < len(items); i += 2 {
				k, ok := items[i].(string)
				if !ok {
					return nil, fmt.Errorf("offset %d: key %v is not a string", pos, items[i])
				}
				if _, dup := d.Vals[k]; !dup {
					d.Keys = append(d.Keys, k)
				}
				d.Vals[k] = items[i+1]
			}
		case 'e':
			items, err := popMark()
			if err != nil {
				return nil, err
			}
			t, err := top()
			if err != nil {
				return nil, err
			}
			l, ok := t.([]any)
			if !ok {
				return nil, fmt.Errorf("offset %d: appends to a non-list", pos)
			}
			stack[len(stack)-1] = append(l, items...)
		case 't':
			items, err := popMark()
			if err != nil {
				return nil, err
			}
			stack = append(stack, Tuple(items))
		case 0x85, 0x86, 0x87:
			n := int(op-0x85) + 1
			if len(stack) < n {
				return nil, fmt.Errorf("offset %d: tuple of %d from %d values", pos, n, len(stack))
			}
			items := append(Tuple(nil), stack[len(stack)-n:]...)
			for _, it := range items {
				if _, ok := it.(mark); ok {
					return nil, fmt.Errorf("offset %d: mark in a tuple", pos)
				}
			}
			stack = append(stack[:len(stack)-n], items)
		case 'N':
			stack = append(stack, nil)
		case 0x88:
			stack = append(stack, true)
		case 0x89:
			stack = append(stack, false)
		case 'K':
			v, err := need(1)
			if err != nil {
				return nil, err
			}
			stack = append(stack, int64(v[0]))
		case 'M':
			v, err := need(2)
			if err != nil {
				return nil, err
			}
			stack = append(stack, int64(binary.LittleEndian.Uint16(v)))
		case 'J':
			v, err := need(4)
			if err != nil {
				return nil, err
			}
			stack = append(stack, int64(int32(binary.LittleEndian.Uint32(v))))
		case 0x8a:
			nb, err := need(1)
			if err != nil {
				return nil, err
			}
			v, err := need(int(nb[0]))
			if err != nil {
				return nil, err
			}
			x, err := long(v)
			if err != nil {
				return nil, err
			}
			stack = append(stack, x)
		case 'G':
			v, err := need(8)
			if err != nil {
				return nil, err
			}
			stack = append(stack, math.Float64frombits(binary.BigEndian.Uint64(v)))
		case 0x8c:
			nb, err := need(1)
			if err != nil {
				return nil, err
			}
			v, err := need(int(nb[0]))
			if err != nil {
				return nil, err
			}
			stack = append(stack, string(v))
		case 'X':
			nb, err := need(4)
			if err != nil {
				return nil, err
			}
			n := binary.LittleEndian.Uint32(nb)
			if uint64(n) > uint64(len(b)) {
				return nil, fmt.Errorf("offset %d: string of %d bytes", pos, n)
			}
			v, err := need(int(n))
			if err != nil {
				return nil, err
			}
			stack = append(stack, string(v))
		default:
			return nil, fmt.Errorf("offset %d: unknown opcode %#x", pos-1, op)
		}
	}
}

// long decodes LONG1's little-endian two's complement bytes.
func long(v []byte) (any, error) {
	switch {
	case len(v) == 0:
		return int64(0), nil
	case len(v) <= 8:
		var buf [8]byte
		copy(buf[:], v)
		if v[len(v)-1]&0x80 != 0 {
			for i := len(v); i < 8; i++ {
				buf[i] = 0xff
			}
		}
		return int64(binary.LittleEndian.Uint64(buf[:])), nil
	case len(v) == 9 && v[8] == 0:
		return binary.LittleEndian.Uint64(v[:8]), nil
	}
	return nil, fmt.Errorf("long of %d bytes", len(v))
}
