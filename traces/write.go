package traces

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"unicode/utf8"
)

// Writer writes a trace in canonical form: fixed key order (the spec's),
// absent optional fields left out, numbers in their shortest round-trip
// form, one record per line. Reading a canonical file and writing it again
// gives the same bytes, which is what `cgtviz fmt` relies on.
type Writer struct {
	w   *bufio.Writer
	buf []byte
	hdr Header
	err error
}

// NewWriter returns a Writer on w. Call Flush when done.
func NewWriter(w io.Writer) *Writer { return &Writer{w: bufio.NewWriter(w)} }

// Write writes a whole trace to w.
func Write(w io.Writer, h Header, recs []Record) error {
	tw := NewWriter(w)
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	for _, r := range recs {
		if err := tw.WriteRecord(r); err != nil {
			return err
		}
	}
	return tw.Flush()
}

// Flush writes any buffered data to the underlying writer.
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	return w.w.Flush()
}

// WriteHeader writes the header line. Config keys are written when they are
// in Config.Set or differ from the default, so nothing a caller chose is
// lost; "cgtviz" is always this package's Version.
func (w *Writer) WriteHeader(h Header) error {
	w.hdr = h
	b := append(w.buf[:0], `{"cgtviz": `...)
	b = strconv.AppendInt(b, Version, 10)
	if h.Name != "" {
		b = append(b, `, "name": `...)
		b = appendString(b, h.Name)
	}
	if h.Devices > 1 {
		b = append(b, `, "devices": `...)
		b = strconv.AppendInt(b, int64(h.Devices), 10)
	}
	// A zero byte limit is a Config that was never filled in, not a
	// choice: its other zero values (false included) are not written either
	// unless Set names them... except the two counts version 1 always
	// wrote when they differed from the default.
	unfilled := h.Config.MaxTensorBytes == 0 && h.Config.MaxTotalBytes == 0
	def := DefaultConfig()
	n := 0
	for _, k := range ConfigKeys {
		v, dv := configValue(h.Config, k), configValue(def, k)
		if !h.Config.Set[k] {
			if v == dv {
				continue
			}
			if unfilled && k != KeyWarmupRuns && k != KeyRerecordLimit {
				continue
			}
		}
		if n == 0 {
			b = append(b, `, "config": {`...)
		} else {
			b = append(b, ", "...)
		}
		n++
		b = appendConfigKey(b, h.Config, k)
	}
	if n > 0 {
		b = append(b, '}')
	}
	if len(h.Meta) > 0 {
		var c bytes.Buffer
		if err := json.Compact(&c, h.Meta); err != nil {
			return fmt.Errorf("write header: meta: %w", err)
		}
		b = append(b, `, "meta": `...)
		b = appendSpaced(b, c.Bytes())
	}
	b = append(b, "}\n"...)
	return w.emit(b)
}

// configValue returns key k of c as a comparable value.
func configValue(c Config, k string) any {
	switch p := c.field(k).(type) {
	case *int:
		return *p
	case *int64:
		return *p
	case *bool:
		return *p
	}
	return nil
}

// appendConfigKey appends "k": value.
func appendConfigKey(b []byte, c Config, k string) []byte {
	b = appendString(b, k)
	b = append(b, ": "...)
	switch v := configValue(c, k).(type) {
	case int:
		b = strconv.AppendInt(b, int64(v), 10)
	case int64:
		b = strconv.AppendInt(b, v, 10)
	case bool:
		b = strconv.AppendBool(b, v)
	}
	return b
}

func (w *Writer) emit(b []byte) error {
	w.buf = b
	if w.err != nil {
		return w.err
	}
	_, w.err = w.w.Write(b)
	return w.err
}

// WriteRecord writes one record line. It refuses what JSON cannot hold
// (NaN, infinities, invalid UTF-8) rather than write a file nobody can read.
func (w *Writer) WriteRecord(r Record) error {
	e := enc{b: append(w.buf[:0], `{"op": `...)}
	e.str(string(r.Op))
	switch r.Op {
	case OpDef:
		e.key("fn")
		e.str(r.Fn)
		e.key("params")
		e.names(r.Params)
		e.key("body")
		e.b = append(e.b, '[')
		for i, s := range r.Body {
			if i > 0 {
				e.b = append(e.b, ", "...)
			}
			e.b = append(e.b, '{')
			e.stmt(s, true)
			e.b = append(e.b, '}')
		}
		e.b = append(e.b, ']')
		e.key("returns")
		e.names(r.Returns)
		if r.Mode != "" {
			e.key("mode")
			e.str(string(r.Mode))
		}
		if r.Static != nil {
			e.key("static")
			e.ints(r.Static)
		}
		if r.Graph != "" {
			e.key("graph")
			e.str(r.Graph)
		}
	case OpTensor, OpParam:
		e.key("name")
		e.str(r.Name)
		e.key("shape")
		e.ints(r.Shape)
		if r.DType != "" {
			e.key("dtype")
			e.str(r.DType)
		}
		e.key("init")
		e.str(string(r.Init))
		if r.HasSeed {
			e.key("seed")
			e.b = strconv.AppendInt(e.b, r.Seed, 10)
		}
		if r.Values != nil {
			e.key("values")
			e.nums(r.Values)
		}
		if r.Device != 0 {
			e.key("device")
			e.b = strconv.AppendInt(e.b, int64(r.Device), 10)
		}
	case OpCall:
		e.key("fn")
		e.str(r.Fn)
		e.key("args")
		e.names(r.Args)
		if r.Out != nil {
			e.key("out")
			e.names(r.Out)
		}
		if r.Invocation != nil {
			e.key("invocation")
			e.b = strconv.AppendInt(e.b, *r.Invocation, 10)
		}
	case OpEager:
		if r.Stmt == nil {
			return fmt.Errorf("write record line %d: eager without a statement", r.Line)
		}
		e.stmt(*r.Stmt, false)
	case OpDel:
		e.key("names")
		e.names(r.Names)
	case OpStep, OpEmptyCache:
	case OpSkippedBackward:
		if r.Device != 0 {
			e.key("device")
			e.b = strconv.AppendInt(e.b, int64(r.Device), 10)
		}
	case OpReset:
		if r.OneDevice {
			e.key("device")
			e.b = strconv.AppendInt(e.b, int64(r.Device), 10)
		}
	case OpRead:
		e.key("name")
		e.str(r.Name)
	case OpSaved:
		e.key("name")
		e.str(r.Name)
		e.key("of")
		e.str(r.Of)
	case OpNote:
		e.key("text")
		e.str(r.Text)
	case OpExpect:
		if r.Expect != nil {
			e.expect(r.Expect)
		}
	case OpConfig:
		if r.Config == nil || len(r.Config.Set) == 0 {
			return fmt.Errorf("write record line %d: config record sets no key", r.Line)
		}
		for _, k := range ConfigKeys {
			if r.Config.Set[k] {
				e.b = append(e.b, ", "...)
				e.b = appendConfigKey(e.b, *r.Config, k)
			}
		}
	default:
		return fmt.Errorf("write record line %d: unknown op %q", r.Line, r.Op)
	}
	switch r.Op {
	case OpDef, OpTensor, OpParam, OpCall, OpRead, OpEmptyCache:
		e.src(r.Src)
	}
	if e.err != nil {
		return fmt.Errorf("write record line %d (%s): %w", r.Line, recordLabel(r), e.err)
	}
	e.b = append(e.b, "}\n"...)
	return w.emit(e.b)
}

// enc appends JSON to b, keeping the first error.
type enc struct {
	b   []byte
	err error
}

func (e *enc) key(k string) {
	e.b = append(e.b, ", \""...)
	e.b = append(e.b, k...)
	e.b = append(e.b, "\": "...)
}

func (e *enc) str(s string) {
	if !utf8.ValidString(s) {
		e.fail(fmt.Errorf("string %q is not valid UTF-8", s))
	}
	e.b = appendString(e.b, s)
}

func (e *enc) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

func (e *enc) num(f float64) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		e.fail(fmt.Errorf("%v is not a JSON number", f))
		e.b = append(e.b, '0')
		return
	}
	e.b = appendNum(e.b, f)
}

func (e *enc) names(ns []string) { encList(e, ns, e.str) }

func (e *enc) ints(xs []int) {
	encList(e, xs, func(x int) { e.b = strconv.AppendInt(e.b, int64(x), 10) })
}

func (e *enc) nums(xs []float64) { encList(e, xs, e.num) }

// encList writes xs as a JSON array in the canonical spacing, each item
// by item.
func encList[T any](e *enc, xs []T, item func(T)) {
	e.b = append(e.b, '[')
	for i, x := range xs {
		if i > 0 {
			e.b = append(e.b, ", "...)
		}
		item(x)
	}
	e.b = append(e.b, ']')
}

// stmt writes a statement's fields; first says whether "out" opens the
// object (a body statement) or follows "op" (an eager record).
func (e *enc) stmt(s Stmt, first bool) {
	if first {
		e.b = append(e.b, `"out": `...)
	} else {
		e.key("out")
	}
	e.str(s.Out)
	e.key("k")
	e.str(s.K)
	if s.A != "" {
		e.key("a")
		e.str(s.A)
	}
	switch {
	case s.B.IsNum:
		e.key("b")
		e.num(s.B.Num)
	case s.B.Name != "":
		e.key("b")
		e.str(s.B.Name)
	}
	if s.Shape != nil {
		e.key("shape")
		e.ints(s.Shape)
	}
	if s.Strides != nil {
		e.key("strides")
		encList(e, s.Strides, func(x int64) { e.b = strconv.AppendInt(e.b, x, 10) })
	}
	if s.HasOffset || s.Offset != 0 {
		e.key("offset")
		e.b = strconv.AppendInt(e.b, s.Offset, 10)
	}
	if s.HasValue {
		e.key("value")
		e.num(s.Value)
	}
	if s.DType != "" {
		e.key("dtype")
		e.str(s.DType)
	}
}

func (e *enc) expect(x *Expect) {
	if x.Action != nil {
		e.key("action")
		e.str(*x.Action)
	}
	if x.Node != nil {
		e.key("node")
		e.b = append(e.b, '{')
		sep := ""
		if x.Node.Fn != nil {
			e.b = append(e.b, `"fn": `...)
			e.str(*x.Node.Fn)
			sep = ", "
		}
		if x.Node.HasParentFn || x.Node.ParentFn != nil {
			e.b = append(e.b, sep...)
			e.b = append(e.b, `"parent_fn": `...)
			if x.Node.ParentFn == nil {
				e.b = append(e.b, "null"...)
			} else {
				e.str(*x.Node.ParentFn)
			}
		}
		e.b = append(e.b, '}')
	}
	for _, c := range []struct {
		k string
		v *int
	}{{"nodes", x.Nodes}, {"roots", x.Roots}, {"checkpoints", x.Checkpoints}, {"recordings", x.Recordings},
		{"replays", x.Replays}, {"warmups", x.Warmups}, {"live_blocks", x.LiveBlocks}} {
		if c.v != nil {
			e.key(c.k)
			e.b = strconv.AppendInt(e.b, int64(*c.v), 10)
		}
	}
	if x.HasError || x.Error != nil {
		e.key("error")
		if x.Error == nil {
			e.b = append(e.b, "null"...)
		} else {
			e.str(*x.Error)
		}
	}
	if x.Values != nil {
		e.key("values")
		e.b = append(e.b, `{"name": `...)
		e.str(x.Values.Name)
		e.key("values")
		vs := x.Values.Values
		if vs == nil {
			vs = []float64{}
		}
		e.nums(vs)
		if x.Values.HasTol {
			e.key("tol")
			e.num(x.Values.Tol)
		}
		e.b = append(e.b, '}')
	}
	if x.Device != 0 {
		e.key("device")
		e.b = strconv.AppendInt(e.b, int64(x.Device), 10)
	}
}

// appendSpaced appends compact JSON with a space after each ':' and ','
// outside strings: one line, in the same style as the rest of the file.
func appendSpaced(b, compact []byte) []byte {
	inStr := false
	for i := 0; i < len(compact); i++ {
		c := compact[i]
		b = append(b, c)
		switch {
		case inStr && c == '\\' && i+1 < len(compact):
			i++
			b = append(b, compact[i])
		case c == '"':
			inStr = !inStr
		case !inStr && (c == ':' || c == ','):
			b = append(b, ' ')
		}
	}
	return b
}

// appendString appends s as a JSON string. Unlike encoding/json it leaves
// <, > and & alone (a trace is not HTML) and escapes DEL and the C1
// controls.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		case c < 0x20 || c == 0x7f:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
		case c == 0xc2 && i+1 < len(s) && s[i+1] >= 0x80 && s[i+1] <= 0x9f:
			// A C1 control (U+0080 to U+009F, CSI among them) is escaped
			// as the C0 ones are: a canonical trace printed on a terminal
			// cannot drive it.
			c = s[i+1]
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			i++
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// appendNum appends f in the shortest form that reads back as the same
// float64: integers without exponent or point up to 1e21, as JavaScript
// and encoding/json print them, and exponents beyond.
func appendNum(b []byte, f float64) []byte {
	abs := math.Abs(f)
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		b = strconv.AppendFloat(b, f, 'e', -1, 64)
		// 1e-07 -> 1e-7, as encoding/json does.
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
		return b
	}
	return strconv.AppendFloat(b, f, 'f', -1, 64)
}

// formatNum returns f as appendNum writes it.
func formatNum(f float64) string { return string(appendNum(nil, f)) }

// SetText returns the keys in c.Set with their values, in canonical order,
// as a config record writes them ("warmup_runs: 0, support_input_mutation:
// false"): how tools show a config record in one line.
func (c Config) SetText() string {
	var b []byte
	for _, k := range ConfigKeys {
		if !c.Set[k] {
			continue
		}
		if len(b) > 0 {
			b = append(b, ", "...)
		}
		b = append(b, k...)
		b = append(b, ": "...)
		v := appendConfigKey(nil, c, k)
		b = append(b, v[len(k)+4:]...) // past `"k": `
	}
	return string(b)
}
