package traces

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/cgtviz/cgtviz/traces/ops"
)

// MaxProblems is how many problems a check reports before it stops with a
// final "too many errors".
const MaxProblems = 20

// Check reads a whole trace and returns every problem in it, in file order
// (at most MaxProblems, then one "too many errors"), or nil when it is
// clean. It streams: only the symbol tables (names, functions) are kept,
// never the records. It follows the trace as the Python program it stands
// for would run: names are bound and unbound in order, every call's body
// is shape-checked with the shapes of its actual arguments, and the bytes
// held by named tensors are counted against max_total_bytes.
func Check(r io.Reader, file string) []Problem {
	ps, _ := check(r, file)
	return ps
}

// CheckFile checks the trace at path; see Check.
func CheckFile(path string) []Problem {
	_, ps := CheckFileCount(path)
	return ps
}

// CheckFileCount checks the trace at path and also returns how many
// records it has (for "TRACE: ok (N records)").
func CheckFileCount(path string) (int, []Problem) {
	f, err := os.Open(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return 0, []Problem{{File: path, Msg: err.Error()}}
	}
	defer f.Close()
	ps, n := check(f, path)
	return n, ps
}

func check(r io.Reader, file string) ([]Problem, int) {
	rd, err := NewReader(r, file)
	if err != nil {
		return []Problem{*asProblem(err, file)}, 0
	}
	c := newChecker(file, rd.Header())
	n := 0
	for !c.full {
		rec, err := rd.Next()
		if err == io.EOF || IsCut(err) {
			break
		}
		n++
		if err != nil {
			c.add(*asProblem(err, file))
			c.recover(&rec)
			continue
		}
		c.record(&rec)
	}
	return c.probs, n
}

func asProblem(err error, file string) *Problem {
	var p *Problem
	if errors.As(err, &p) {
		return p
	}
	return &Problem{File: file, Msg: err.Error()}
}

// checker holds what a check keeps between records: the symbol tables.
type checker struct {
	file  string
	hdr   Header
	probs []Problem
	full  bool
	// funcs finds a def by name: its index in defs (what a call reads,
	// one cache line a def) and defRecs (the def itself, read when a body
	// runs on new shapes or a message names it). fnCache is in front of
	// funcs for the calls (fncache.go).
	funcs   map[string]int32
	defs    []fnInfo
	defRecs defRecords
	fnCache fnCache
	names   map[string]*binding
	deleted map[string]deadName    // name -> the del that unbound it
	live    int64                  // bytes of the storages named tensors hold
	memo    map[string]*bodyResult // runBody's results by key, every def's
	// cfg is the config in force: the header's, changed by config records.
	cfg Config
	key []byte // runBody's memo key buffer
	// A long trace binds and drops names millions of times: the bindings
	// and storages it drops are reused (freeBindings, freeStorages), and a
	// call's lists live in reused buffers (argBuf, madeBuf, outBuf), so a
	// record seen before allocates nothing. A storage whose last name went
	// waits in deadStorages until the next record: within a record, a
	// call's results may still take it (x = f(x) returning a view of x).
	freeBindings []*binding
	freeStorages []*storage
	deadStorages []*storage
	argBuf       []*binding
	madeBuf      []*storage
	outBuf       []*binding
}

// newBinding returns a binding to fill in: a dropped one, or a new one.
func (c *checker) newBinding(b binding) *binding {
	var p *binding
	if n := len(c.freeBindings); n > 0 {
		p = c.freeBindings[n-1]
		c.freeBindings = c.freeBindings[:n-1]
	} else {
		p = new(binding) // b itself must not escape: it would cost every call
	}
	*p = b
	return p
}

// newStorage returns a storage of the given size: a dropped one, or new.
func (c *checker) newStorage(bytes int64) *storage {
	if n := len(c.freeStorages); n > 0 {
		p := c.freeStorages[n-1]
		c.freeStorages = c.freeStorages[:n-1]
		*p = storage{bytes: bytes}
		return p
	}
	return &storage{bytes: bytes}
}

// drop is the end of a binding no name holds any more: it is reused.
func (c *checker) drop(b *binding) {
	*b = binding{}
	c.freeBindings = append(c.freeBindings, b)
}

// reclaim moves the storages that lost their last name during the last
// record, and found none since, to the free list: no binding refers to a
// storage with no refs, as every named binding holds one.
func (c *checker) reclaim() {
	for _, st := range c.deadStorages {
		// A storage can die twice in one record (named again by a
		// result, then dropped again): it is listed twice, and freed
		// once (refs -1 marks it free).
		if st.refs == 0 {
			*st = storage{refs: -1}
			c.freeStorages = append(c.freeStorages, st)
		}
	}
	clear(c.deadStorages)
	c.deadStorages = c.deadStorages[:0]
}

// storage is the memory a tensor and its views share.
type storage struct {
	bytes int64
	refs  int // names holding it
	// noValues: a call wrote values no kernel computes into it in place.
	noValues bool
}

// deadName is what a del left of a name: where it died, and what it held,
// for a saved record that names it.
type deadName struct {
	line int
	layout
	dev     int
	unknown bool
}

// saved binds a saved record's name to a tensor of the layout its dead
// output had. Whether that output is a tensor autograd can still hold (a
// replay's cached output) is the tree's to know: the engine checks it. The
// storage is a new one here: the dead output's bytes were counted free.
func (c *checker) saved(rec *Record) {
	if _, ok := c.names[rec.Of]; ok {
		c.fail(rec, "of: %s is bound: a saved record names an output a del unbound (use %s itself)", rec.Of, rec.Of)
		c.bind(rec.Name, &binding{unknown: true})
		return
	}
	d, ok := c.deleted[rec.Of]
	if !ok {
		c.fail(rec, "of: %s was never bound (a saved record names a dead call output)", rec.Of)
		c.bind(rec.Name, &binding{unknown: true})
		return
	}
	if d.unknown {
		c.bind(rec.Name, &binding{unknown: true})
		return
	}
	c.bind(rec.Name, c.newBinding(binding{layout: d.layout, dev: d.dev, st: c.newStorage(d.stElems * int64(d.dtype.Size()))}))
}

// binding is what a global name holds. unknown marks a tensor made by a
// record that had a problem: checks that need its shape are skipped, so one
// mistake is reported once.
type binding struct {
	layout
	dev     int
	st      *storage
	unknown bool
}

// fnInfo is what a call needs of its def, kept in one 64-byte entry of
// checker.defs, so that a program of ten thousand functions called in
// turn costs a call one cache line for its def where a map of records
// cost several: the counts a call is checked against, and the def's last
// body result with its memo key (lastKey: the key past the def's index,
// when it fits), which a call on the layouts of the one before takes
// without the memo's map probe (a hash of the key, and misses in a map
// of ten thousand keys).
type fnInfo struct {
	nParams  int32
	nReturns int32
	broken   bool
	lastLen  uint8 // bytes of lastKey in use; 0: none
	last     *bodyResult
	lastKey  [lastKeyBytes]byte
}

// lastKeyBytes is the room for a memo key in fnInfo (past the def's index),
// which makes fnInfo 64 bytes: a call of one tensor of 256 elements needs
// 13 at the default limit (TestFnInfoSize).
const lastKeyBytes = 40

// newDef registers a def (broken: its calls bind unknowns) and returns
// its index.
func (c *checker) newDef(rec *Record, broken bool) int32 {
	i := int32(len(c.defs))
	c.defs = append(c.defs, fnInfo{nParams: int32(len(rec.Params)), nReturns: int32(len(rec.Returns)), broken: broken})
	c.defRecs.add(rec)
	c.funcs[rec.Fn] = i
	return i
}

// defRecords are the defs' records by number, in chunks of
// defRecordsChunk: a slice of them grew by copying every record made so far
// (336 bytes each), which while a trace defined 10,000 functions allocated
// five times their size and had the collector scan each old copy.
type defRecords struct {
	chunks [][]Record
}

const defRecordsChunk = 256

func (d *defRecords) add(rec *Record) {
	if n := len(d.chunks); n == 0 || len(d.chunks[n-1]) == defRecordsChunk {
		d.chunks = append(d.chunks, make([]Record, 0, defRecordsChunk))
	}
	last := &d.chunks[len(d.chunks)-1]
	*last = append(*last, *rec)
}

// at returns def i's record (0 <= i < the defs added).
func (d *defRecords) at(i int32) *Record {
	return &d.chunks[i/defRecordsChunk][i%defRecordsChunk]
}

func (c *checker) add(p Problem) {
	if c.full {
		return
	}
	if len(c.probs) == MaxProblems {
		c.probs = append(c.probs, Problem{File: c.file, Msg: fmt.Sprintf("too many errors (stopped after %d)", MaxProblems)})
		c.full = true
		return
	}
	p.Msg = Printable(p.Msg) // it may quote the trace
	c.probs = append(c.probs, p)
}

func (c *checker) fail(rec *Record, format string, args ...any) {
	c.add(Problem{File: c.file, Line: rec.Line, Msg: recordLabel(*rec) + ": " + fmt.Sprintf(format, args...)})
}

// recover binds what a refused record would have bound, with unknown
// shapes, so later records that use it are not refused again for it.
func (c *checker) recover(rec *Record) {
	switch rec.Op {
	case OpDef:
		if _, ok := c.funcs[rec.Fn]; rec.Fn != "" && !ok {
			c.newDef(rec, true)
		}
	case OpTensor, OpParam:
		if rec.Name != "" {
			c.bind(rec.Name, &binding{unknown: true})
		}
	case OpEager:
		if rec.Stmt != nil && rec.Stmt.Out != "" {
			c.bind(rec.Stmt.Out, &binding{unknown: true})
		}
	case OpCall:
		for _, o := range rec.Out {
			if validName(o) == "" {
				c.bind(o, &binding{unknown: true})
			}
		}
	}
}

func (c *checker) bind(name string, b *binding) {
	if name == "_" {
		return
	}
	if b.st != nil {
		if b.st.refs == 0 {
			c.live += b.st.bytes
		}
		b.st.refs++
	}
	if old := c.names[name]; old != nil {
		c.unref(old)
		c.drop(old)
	}
	c.names[name] = b
	if len(c.deleted) > 0 {
		delete(c.deleted, name)
	}
}

func (c *checker) unref(b *binding) {
	if b.st != nil {
		b.st.refs--
		if b.st.refs == 0 {
			c.live -= b.st.bytes
			c.deadStorages = append(c.deadStorages, b.st)
		}
	}
}

// lookup returns the binding of a global name, or a message saying why
// there is none.
func (c *checker) lookup(name string) (*binding, string) {
	if b := c.names[name]; b != nil {
		return b, ""
	}
	if name == "_" {
		return nil, `_ is not bound ("_" binds nothing: the tensor dies at once)`
	}
	if d, ok := c.deleted[name]; ok {
		return nil, fmt.Sprintf("%s is not bound (del at line %d unbound it)", name, d.line)
	}
	return nil, fmt.Sprintf("%s is not bound", name)
}

// overTotal says whether adding bytes to the live named bytes goes over
// max_total_bytes, and how.
func (c *checker) overTotal(add int64) string {
	max := c.cfg.MaxTotalBytes
	if add > max-c.live {
		return fmt.Sprintf("named tensors would hold %s, over max_total_bytes (%s)", formatBytes(c.live+add), formatBytes(max))
	}
	return ""
}

func (c *checker) record(rec *Record) {
	c.reclaim()
	switch rec.Op {
	case OpDef:
		c.def(rec)
	case OpTensor, OpParam:
		dt, _ := ops.ParseDType(rec.DType) // the reader refused unknown names
		bytes, ok := shapeBytes(rec.Shape, dt.Size(), c.cfg.MaxTensorBytes)
		if !ok {
			// The reader bounded the shape by the limit in force there;
			// this only differs if a record the reader refused set it.
			c.fail(rec, "shape %s is over max_tensor_bytes (%s)", ops.FormatShape(rec.Shape), formatBytes(c.cfg.MaxTensorBytes))
			c.bind(rec.Name, &binding{unknown: true})
			return
		}
		if m := c.overTotal(bytes); m != "" {
			c.fail(rec, "%s", m)
			c.bind(rec.Name, &binding{unknown: true})
			return
		}
		c.bind(rec.Name, c.newBinding(binding{layout: layout{shape: rec.Shape, dtype: dt, stElems: NumElems(rec.Shape), noValues: !dt.ComputesValues()},
			dev: rec.Device, st: c.newStorage(bytes)}))
	case OpConfig:
		c.cfg = c.cfg.With(*rec.Config)
	case OpCall:
		c.call(rec)
	case OpEager:
		c.eager(rec)
	case OpDel:
		for _, n := range rec.Names {
			b, why := c.lookup(n)
			if b == nil {
				c.fail(rec, "%s", why)
				continue
			}
			c.unref(b)
			delete(c.names, n)
			c.deleted[n] = deadName{line: rec.Line, layout: b.layout, dev: b.dev, unknown: b.unknown}
			c.drop(b)
		}
	case OpRead:
		if _, why := c.lookup(rec.Name); why != "" {
			c.fail(rec, "%s", why)
		}
	case OpSaved:
		c.saved(rec)
	case OpExpect:
		if v := rec.Expect.Values; v != nil {
			b, why := c.lookup(v.Name)
			switch {
			case b == nil:
				c.fail(rec, "values: %s", why)
			case !b.unknown && !b.dtype.ComputesValues():
				c.fail(rec, "values: %s is %s, and values of %s are not modelled (the kernels compute float32): expect values only of float32 tensors", v.Name, b.dtype, b.dtype)
			case !b.unknown && layoutOf(b).noValues:
				c.fail(rec, "values: %s is computed from tensors whose dtype the kernels do not compute, so its values are not modelled", v.Name)
			case !b.unknown && int64(len(v.Values)) != NumElems(b.shape):
				c.fail(rec, "values: %s has %d elements (shape %s), got %d values", v.Name, NumElems(b.shape), ops.FormatShape(b.shape), len(v.Values))
			}
		}
	}
}

// def checks a function's names: every operand is a param or an earlier
// out, every return is bound at the end. Shapes wait for the calls.
func (c *checker) def(rec *Record) {
	if i, ok := c.funcs[rec.Fn]; ok {
		c.fail(rec, "%s is already defined at line %d (a function is defined once)", rec.Fn, c.defRecs.at(i).Line)
		return
	}
	if _, ok := c.funcs[rec.Graph]; rec.Graph != "" && !ok {
		c.fail(rec, "graph %s is not a def before this one (the first size of the compiled graph this def is a size of)", rec.Graph)
	}
	f := &c.defs[c.newDef(rec, false)]
	local := map[string]bool{}
	params := map[string]bool{}
	for _, p := range rec.Params {
		params[p] = true
		if p != "_" {
			local[p] = true
		}
	}
	for i, s := range rec.Body {
		for _, n := range []string{s.A, s.B.Name} {
			if n != "" && !local[n] {
				c.fail(rec, "%s: %s is not a param or an earlier out of the body", stmtLabel(i, s), n)
				f.broken = true
				return
			}
		}
		if s.K == ops.StmtView && params[s.Out] {
			c.fail(rec, "%s: out %s is a param, and a view cannot write into it in place (name the view something else)", stmtLabel(i, s), s.Out)
			f.broken = true
			return
		}
		if s.Out != "_" {
			local[s.Out] = true
		}
	}
	for _, r := range rec.Returns {
		if !local[r] {
			c.fail(rec, "returns %s, which is not a param or an out of the body", r)
			f.broken = true
			return
		}
	}
}

// bodyResult is what running a body on given arguments gives: the
// returns and where their memory comes from, or a message.
type bodyResult struct {
	msg  string
	rets []local
	// newBytes[k] is the size of the k-th storage the body allocates.
	newBytes []int64
	// noValues lists the params the body writes unmodelled values into.
	noValues []int
}

// local is a name inside a body: its layout, and its storage: src >= 0 is
// param src's (an alias of an input), src < 0 is new storage -src-1.
type local struct {
	layout
	src int
}

// layout is what the checker knows of a tensor's elements: its shape and
// dtype, whether it is a non-contiguous view (strided), and how many
// elements of its dtype its storage holds (what a strided view of it must
// fit in).
type layout struct {
	shape   []int
	dtype   ops.DType
	strided bool
	stElems int64
	// noValues: the values are not modelled, as the tensor is of a dtype
	// the kernels do not compute, or was computed from one.
	noValues bool
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// layoutOf returns b's layout, with what a call wrote into its storage.
func layoutOf(b *binding) layout {
	l := b.layout
	if b.st != nil && b.st.noValues {
		l.noValues = true
	}
	return l
}

// runBody returns the result of def fi's body on args: the def's last
// result when args have the layouts of its last call, else the memo's, else
// it runs the body.
func (c *checker) runBody(fi int32, args []*binding) *bodyResult {
	// The memo key: everything of the args (and the limit) that the
	// result depends on, after the def's index. Built in a reused buffer,
	// and looked up without a string copy, since most calls repeat a key
	// seen before. The index is fixed-width, the numbers varints (most
	// are small, so the key of a call of a few tensors fits in fnInfo),
	// each list after its length, so no two keys run together.
	key := binary.LittleEndian.AppendUint32(c.key[:0], uint32(fi))
	key = binary.AppendUvarint(key, uint64(c.cfg.MaxTensorBytes))
	for _, a := range args {
		l := layoutOf(a)
		key = append(key, byte(l.dtype), boolByte(l.strided), boolByte(l.noValues))
		key = binary.AppendUvarint(key, uint64(l.stElems))
		key = binary.AppendUvarint(key, uint64(len(l.shape)))
		for _, d := range l.shape {
			key = binary.AppendUvarint(key, uint64(d))
		}
	}
	c.key = key
	f := &c.defs[fi]
	own := key[4:] // the def's index is f's own
	if f.last != nil && len(own) == int(f.lastLen) && string(own) == string(f.lastKey[:len(own)]) {
		return f.last
	}
	res := c.memo[string(key)]
	if res == nil {
		res = c.evalBody(c.defRecs.at(fi), args)
		c.memo[string(key)] = res
	}
	if len(own) <= lastKeyBytes {
		f.lastLen = uint8(copy(f.lastKey[:], own))
		f.last = res
	}
	return res
}

// evalBody runs a def's body on the layouts of args.
func (c *checker) evalBody(def *Record, args []*binding) *bodyResult {
	res := &bodyResult{}
	locals := map[string]local{}
	for i, p := range def.Params {
		locals[p] = local{layout: layoutOf(args[i]), src: i}
	}
	params := map[string]int{}
	for i, p := range def.Params {
		params[p] = i
	}
	for i, s := range def.Body {
		l, msg := c.stmtLayout(s, func(n string) layout { return locals[n].layout })
		if msg != "" {
			res.msg = stmtLabel(i, s) + ": " + msg
			return res
		}
		if pi, isParam := params[s.Out]; isParam {
			want := locals[s.Out]
			if !slices.Equal(l.shape, want.shape) {
				res.msg = fmt.Sprintf("%s: writes into param %s in place, so it must keep its shape %s, but the result has shape %s",
					stmtLabel(i, s), s.Out, ops.FormatShape(want.shape), ops.FormatShape(l.shape))
				return res
			}
			if l.dtype != want.dtype {
				res.msg = fmt.Sprintf("%s: writes into param %s in place, so it must keep its dtype %s, but the result is %s",
					stmtLabel(i, s), s.Out, want.dtype, l.dtype)
				return res
			}
			if l.noValues {
				res.noValues = append(res.noValues, pi)
				want.noValues = true
				locals[s.Out] = want
			}
			continue
		}
		if s.Out == "_" {
			continue
		}
		loc := local{layout: l}
		if s.K == ops.StmtView {
			loc.src = locals[s.A].src
		} else {
			b, _ := shapeBytes(l.shape, l.dtype.Size(), c.cfg.MaxTensorBytes)
			res.newBytes = append(res.newBytes, b)
			loc.src = -len(res.newBytes)
		}
		locals[s.Out] = loc
	}
	for _, r := range def.Returns {
		res.rets = append(res.rets, locals[r])
	}
	return res
}

// stmtLayout returns a statement's result, given its operands, or a
// message. It applies the kernels' shape rules, the dtype and view rules,
// and the tensor size limit.
func (c *checker) stmtLayout(s Stmt, of func(string) layout) (layout, string) {
	o := ops.Operands{Shape: s.Shape, HasVal: s.HasValue, BIsNum: s.B.IsNum, Strided: s.Strided()}
	var a, bl layout
	if s.A != "" {
		a = of(s.A)
		o.A, o.HasA = a.shape, true
	}
	if s.B.Name != "" {
		bl = of(s.B.Name)
		o.B, o.HasB = bl.shape, true
	}
	shape, _, err := ops.ResultShape(s.K, o)
	if err != nil {
		msg, _ := strings.CutPrefix(err.Error(), s.K+": ")
		return layout{}, msg
	}
	// The result's dtype: the statement's, else a's (float32 for fill and empty).
	dt := a.dtype
	if s.DType != "" {
		dt, _ = ops.ParseDType(s.DType) // the reader refused unknown names
	}
	out := layout{shape: shape, dtype: dt, noValues: !dt.ComputesValues() || a.noValues || bl.noValues}
	// A view is bounded like a tensor of its own, though it allocates
	// nothing: reading it costs its elements (a stride-0 view can be far
	// larger than its storage).
	b, ok := shapeBytes(shape, dt.Size(), c.cfg.MaxTensorBytes)
	if !ok {
		return layout{}, fmt.Sprintf("result %s is over max_tensor_bytes (%s)", ops.FormatShape(shape), formatBytes(c.cfg.MaxTensorBytes))
	}
	if s.K == ops.StmtView {
		out.stElems = a.stElems
		if dt != a.dtype {
			// A reinterpreting view (x.view(torch.uint8)): the same bytes in
			// elements of its own dtype, which its shape, strides and offset
			// count in. A plain view keeps a's element count, so a change of
			// element size must say its geometry.
			bytes := a.stElems * int64(a.dtype.Size())
			if !s.Strided() {
				return layout{}, fmt.Sprintf("a view of %s (%s) as %s needs strides and offset (a plain view keeps the dtype)", s.A, a.dtype, dt)
			}
			if bytes%int64(dt.Size()) != 0 {
				return layout{}, fmt.Sprintf("a view of %s as %s: its storage's %d bytes are not a whole number of %s elements", s.A, dt, bytes, dt)
			}
			out.stElems = bytes / int64(dt.Size())
			out.noValues = true
		}
		switch {
		case s.Strided():
			ext, err := ops.ViewExtent(shape, s.Strides, s.Offset)
			if err != nil {
				return layout{}, err.Error()
			}
			if ext > out.stElems {
				return layout{}, fmt.Sprintf("the view reaches element %d of %s's storage, which has %d elements (offset + sum((size-1)*stride) + 1 must fit)",
					ext, s.A, out.stElems)
			}
			out.strided = !ops.IsContiguous(shape, s.Strides)
		case a.strided && s.Shape != nil && !slices.Equal(s.Shape, a.shape):
			// PyTorch's view needs compatible strides; the format does not
			// track them, so a reshape of a strided view must say its own.
			return layout{}, fmt.Sprintf("%s is a strided view, so a view of it as %s needs strides and offset", s.A, ops.FormatShape(s.Shape))
		default:
			out.strided = a.strided
		}
		return out, ""
	}
	out.stElems = b / int64(dt.Size())
	return out, ""
}

func (c *checker) call(rec *Record) {
	bindUnknown := func() {
		for _, o := range rec.Out {
			c.bind(o, &binding{unknown: true})
		}
	}
	fi, ok := c.fnIndexOf(rec)
	if !ok {
		c.fail(rec, "%s is not defined (def it before the call)", rec.Fn)
		bindUnknown()
		return
	}
	f := &c.defs[fi] // no def is added before the call returns
	if len(rec.Args) != int(f.nParams) {
		c.fail(rec, "%s, but %s takes %s", plural(len(rec.Args), "arg"), rec.Fn, paramList(c.defRecs.at(fi).Params))
		bindUnknown()
		return
	}
	if rec.Out != nil && len(rec.Out) != int(f.nReturns) {
		c.fail(rec, "out has %s, but %s returns %s", plural(len(rec.Out), "name"), rec.Fn, plural(int(f.nReturns), "value"))
		bindUnknown()
		return
	}
	args := growBuf(&c.argBuf, len(rec.Args))
	unknown := f.broken
	for i, a := range rec.Args {
		b, why := c.lookup(a)
		if b == nil {
			c.fail(rec, "arg %s", why)
			bindUnknown()
			return
		}
		if b.unknown {
			unknown = true
		}
		if !b.unknown && !args0Unknown(args[:i]) && i > 0 && b.dev != args[0].dev {
			c.fail(rec, "args on different devices: %s is on device %d, %s on device %d", rec.Args[0], args[0].dev, a, b.dev)
			bindUnknown()
			return
		}
		args[i] = b
	}
	if unknown {
		bindUnknown()
		return
	}
	res := c.runBody(fi, args)
	if res.msg != "" {
		c.fail(rec, "%s", res.msg)
		bindUnknown()
		return
	}
	dev := 0
	if len(args) > 0 {
		dev = args[0].dev
	}
	// Storages the call allocates, made once each, as several returns may
	// share one (a value and its view, or a name returned twice).
	made := growBuf(&c.madeBuf, len(res.newBytes))
	outs := growBuf(&c.outBuf, len(rec.Out))
	var add int64
	for i, o := range rec.Out {
		r := res.rets[i]
		b := c.newBinding(binding{layout: r.layout, dev: dev})
		if r.src >= 0 {
			b.st = args[r.src].st
		} else {
			k := -r.src - 1
			if made[k] == nil {
				made[k] = c.newStorage(res.newBytes[k])
				if o != "_" {
					add += made[k].bytes
				}
			}
			b.st = made[k]
		}
		outs[i] = b
	}
	if m := c.overTotal(add); m != "" {
		c.fail(rec, "%s", m)
		bindUnknown()
		return
	}
	for _, p := range res.noValues {
		if st := args[p].st; st != nil {
			st.noValues = true
		}
	}
	for i, o := range rec.Out {
		c.bind(o, outs[i])
	}
}

// growBuf returns *buf resized to n, its entries nil (a call's lists:
// nothing keeps them past the call).
func growBuf[T any](buf *[]*T, n int) []*T {
	b := slices.Grow((*buf)[:0], n)[:n]
	clear(b)
	*buf = b
	return b
}

func args0Unknown(args []*binding) bool { return len(args) > 0 && args[0].unknown }

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func paramList(ps []string) string {
	if len(ps) == 0 {
		return "no args"
	}
	return fmt.Sprintf("%s (%s)", plural(len(ps), "arg"), strings.Join(ps, ", "))
}

func (c *checker) eager(rec *Record) {
	s := *rec.Stmt
	var devs []*binding
	var names []string
	unknown := false
	for _, n := range []string{s.A, s.B.Name} {
		if n == "" {
			continue
		}
		b, why := c.lookup(n)
		if b == nil {
			c.fail(rec, "%s", why)
			c.bind(s.Out, &binding{unknown: true})
			return
		}
		unknown = unknown || b.unknown
		devs = append(devs, b)
		names = append(names, n)
	}
	if unknown {
		c.bind(s.Out, &binding{unknown: true})
		return
	}
	if len(devs) == 2 && devs[0].dev != devs[1].dev {
		c.fail(rec, "operands on different devices: %s is on device %d, %s on device %d", names[0], devs[0].dev, names[1], devs[1].dev)
		c.bind(s.Out, &binding{unknown: true})
		return
	}
	l, msg := c.stmtLayout(s, func(n string) layout { return layoutOf(c.names[n]) })
	if msg != "" {
		c.fail(rec, "%s", msg)
		c.bind(s.Out, &binding{unknown: true})
		return
	}
	b := &binding{layout: l}
	if len(devs) > 0 {
		b.dev = devs[0].dev
	}
	if s.K == ops.StmtView {
		b.st = devs[0].st
	} else {
		bytes, _ := shapeBytes(l.shape, l.dtype.Size(), c.cfg.MaxTensorBytes)
		b.st = &storage{bytes: bytes}
		if s.Out != "_" {
			if m := c.overTotal(bytes); m != "" {
				c.fail(rec, "%s", m)
				c.bind(s.Out, &binding{unknown: true})
				return
			}
		}
	}
	c.bind(s.Out, b)
}
