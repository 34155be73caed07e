// Package pickle writes Python pickles (protocol 4 header) using only the
// opcodes that PyTorch's memory_viz unpickler (MemoryViz.js) reads: empty
// containers filled through MARK + SETITEMS/APPENDS, TUPLE1-3 or MARK +
// TUPLE, BININT1/BININT2/BININT and LONG1 for ints, big-endian BINFLOAT,
// SHORT_BINUNICODE/BINUNICODE, NEWTRUE/NEWFALSE and NONE. No memo, no
// frames: the output is deterministic and the caller chooses key order.
package pickle

import (
	"encoding/binary"
	"errors"
	"io"
	"math"
)

// The opcodes the encoder writes.
const (
	opProto      = 0x80
	opStop       = '.'
	opMark       = '('
	opEmptyDict  = '}'
	opSetItems   = 'u'
	opEmptyList  = ']'
	opAppends    = 'e'
	opEmptyTuple = ')'
	opTuple      = 't'
	opTuple1     = 0x85
	opTuple2     = 0x86
	opTuple3     = 0x87
	opNone       = 'N'
	opTrue       = 0x88
	opFalse      = 0x89
	opBinInt1    = 'K'
	opBinInt2    = 'M'
	opBinInt     = 'J'
	opLong1      = 0x8a
	opBinFloat   = 'G'
	opShortUni   = 0x8c
	opBinUnicode = 'X'
)

type kind uint8

const (
	kDict kind = iota
	kList
	kTuple
)

type open struct {
	kind  kind
	mark  int // position of the MARK byte
	items int
}

// Encoder builds one pickle in memory; Finish writes it. Values are written
// in order: inside a dict, alternate keys and values.
type Encoder struct {
	buf   []byte
	stack []open
	err   error
}

// NewEncoder starts a pickle with the protocol 4 header.
func NewEncoder() *Encoder {
	return &Encoder{buf: []byte{opProto, 4}}
}

func (e *Encoder) item() {
	if n := len(e.stack); n > 0 {
		e.stack[n-1].items++
	}
}

// Int writes an integer in the shortest form MemoryViz reads.
func (e *Encoder) Int(v int64) {
	e.item()
	switch {
	case v >= 0 && v <= math.MaxUint8:
		e.buf = append(e.buf, opBinInt1, byte(v))
	case v >= 0 && v <= math.MaxUint16:
		e.buf = append(e.buf, opBinInt2, byte(v), byte(v>>8))
	case v >= math.MinInt32 && v <= math.MaxInt32:
		e.buf = append(e.buf, opBinInt)
		e.buf = binary.LittleEndian.AppendUint32(e.buf, uint32(int32(v)))
	default:
		b := long1Bytes(v)
		e.buf = append(e.buf, opLong1, byte(len(b)))
		e.buf = append(e.buf, b...)
	}
}

// long1Bytes is v in the fewest little-endian two's complement bytes, as
// Python's encode_long.
func long1Bytes(v int64) []byte {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(v))
	n := 8
	for n > 1 {
		top, next := b[n-1], b[n-2]
		if (top == 0 && next&0x80 == 0) || (top == 0xff && next&0x80 != 0) {
			n--
			continue
		}
		break
	}
	return b[:n]
}

// Uint writes an unsigned integer (LONG1 with up to 9 bytes).
func (e *Encoder) Uint(v uint64) {
	if v <= math.MaxInt64 {
		e.Int(int64(v))
		return
	}
	e.item()
	e.buf = append(e.buf, opLong1, 9)
	e.buf = binary.LittleEndian.AppendUint64(e.buf, v)
	e.buf = append(e.buf, 0)
}

// Float writes a float64 (BINFLOAT, big-endian).
func (e *Encoder) Float(f float64) {
	e.item()
	e.buf = append(e.buf, opBinFloat)
	e.buf = binary.BigEndian.AppendUint64(e.buf, math.Float64bits(f))
}

// String writes a str.
func (e *Encoder) String(s string) {
	e.item()
	if len(s) < 256 {
		e.buf = append(e.buf, opShortUni, byte(len(s)))
	} else {
		e.buf = append(e.buf, opBinUnicode)
		e.buf = binary.LittleEndian.AppendUint32(e.buf, uint32(len(s)))
	}
	e.buf = append(e.buf, s...)
}

// Bool writes True or False.
func (e *Encoder) Bool(b bool) {
	e.item()
	if b {
		e.buf = append(e.buf, opTrue)
	} else {
		e.buf = append(e.buf, opFalse)
	}
}

// None writes None.
func (e *Encoder) None() {
	e.item()
	e.buf = append(e.buf, opNone)
}

// BeginDict opens a dict; write key, value, key, value..., then EndDict.
func (e *Encoder) BeginDict() { e.begin(kDict, opEmptyDict) }

// BeginList opens a list, closed by EndList.
func (e *Encoder) BeginList() { e.begin(kList, opEmptyList) }

// BeginTuple opens a tuple, closed by EndTuple.
func (e *Encoder) BeginTuple() { e.begin(kTuple, 0) }

func (e *Encoder) begin(k kind, op byte) {
	e.item()
	if op != 0 {
		e.buf = append(e.buf, op)
	}
	e.stack = append(e.stack, open{kind: k, mark: len(e.buf)})
	e.buf = append(e.buf, opMark)
}

func (e *Encoder) end(k kind) (open, bool) {
	n := len(e.stack)
	if n == 0 || e.stack[n-1].kind != k {
		if e.err == nil {
			e.err = errors.New("pickle: unbalanced container")
		}
		return open{}, false
	}
	o := e.stack[n-1]
	e.stack = e.stack[:n-1]
	return o, true
}

// dropMark removes the MARK of a container that needs none.
func (e *Encoder) dropMark(o open) {
	e.buf = append(e.buf[:o.mark], e.buf[o.mark+1:]...)
}

// EndDict closes the innermost dict.
func (e *Encoder) EndDict() {
	if o, ok := e.end(kDict); ok {
		if o.items%2 != 0 && e.err == nil {
			e.err = errors.New("pickle: dict with a key and no value")
		}
		if o.items == 0 {
			e.dropMark(o)
			return
		}
		e.buf = append(e.buf, opSetItems)
	}
}

// EndList closes the innermost list.
func (e *Encoder) EndList() {
	if o, ok := e.end(kList); ok {
		if o.items == 0 {
			e.dropMark(o)
			return
		}
		e.buf = append(e.buf, opAppends)
	}
}

// EndTuple closes the innermost tuple, with TUPLE1-3 for small ones.
func (e *Encoder) EndTuple() {
	o, ok := e.end(kTuple)
	if !ok {
		return
	}
	switch o.items {
	case 0:
		e.dropMark(o)
		e.buf = append(e.buf, opEmptyTuple)
	case 1, 2, 3:
		e.dropMark(o)
		e.buf = append(e.buf, [...]byte{opTuple1, opTuple2, opTuple3}[o.items-1])
	default:
		e.buf = append(e.buf, opTuple)
	}
}

// Bytes ends the pickle and returns it.
func (e *Encoder) Bytes() ([]byte, error) {
	if e.err != nil {
		return nil, e.err
	}
	if len(e.stack) != 0 {
		return nil, errors.New("pickle: container left open")
	}
	return append(e.buf, opStop), nil
}

// WriteTo ends the pickle and writes it to w.
func (e *Encoder) WriteTo(w io.Writer) (int64, error) {
	b, err := e.Bytes()
	if err != nil {
		return 0, err
	}
	n, err := w.Write(b)
	return int64(n), err
}
