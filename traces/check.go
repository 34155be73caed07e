package traces

import (
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
	c := &checker{
		file:    file,
		hdr:     rd.Header(),
		funcs:   map[string]*fnInfo{},
		names:   map[string]*binding{},
		deleted: map[string]int{},
		memo:    map[string]*bodyResult{},
	}
	n := 0
	for !c.full {
		rec, err := rd.Next()
		if err == io.EOF {
			break
		}
		n++
		if err != nil {
			c.add(*asProblem(err, file))
			c.recover(rec)
			continue
		}
		c.record(rec)
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
	file    string
	hdr     Header
	probs   []Problem
	full    bool
	funcs   map[string]*fnInfo
	names   map[string]*binding
	deleted map[string]int // name -> line of the del that unbound it
	live    int64          // bytes of the storages named tensors hold
	memo    map[string]*bodyResult
}

// storage is the memory a tensor and its views share.
type storage struct {
	bytes int64
	refs  int // names holding it
}

// binding is what a global name holds. unknown marks a tensor made by a
// record that had a problem: checks that need its shape are skipped, so one
// mistake is reported once.
type binding struct {
	shape   []int
	dev     int
	st      *storage
	unknown bool
}

type fnInfo struct {
	rec    Record
	broken bool
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
	c.probs = append(c.probs, p)
}

func (c *checker) fail(rec Record, format string, args ...any) {
	c.add(Problem{File: c.file, Line: rec.Line, Msg: recordLabel(rec) + ": " + fmt.Sprintf(format, args...)})
}

// recover binds what a refused record would have bound, with unknown
// shapes, so later records that use it are not refused again for it.
func (c *checker) recover(rec Record) {
	switch rec.Op {
	case OpDef:
		if rec.Fn != "" && c.funcs[rec.Fn] == nil {
			c.funcs[rec.Fn] = &fnInfo{rec: rec, broken: true}
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
	}
	c.names[name] = b
	delete(c.deleted, name)
}

func (c *checker) unref(b *binding) {
	if b.st != nil {
		b.st.refs--
		if b.st.refs == 0 {
			c.live -= b.st.bytes
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
	if line, ok := c.deleted[name]; ok {
		return nil, fmt.Sprintf("%s is not bound (del at line %d unbound it)", name, line)
	}
	return nil, fmt.Sprintf("%s is not bound", name)
}

// overTotal says whether adding bytes to the live named bytes goes over
// max_total_bytes, and how.
func (c *checker) overTotal(add int64) string {
	max := c.hdr.Config.MaxTotalBytes
	if add > max-c.live {
		return fmt.Sprintf("named tensors would hold %s, over max_total_bytes (%s)", formatBytes(c.live+add), formatBytes(max))
	}
	return ""
}

func (c *checker) record(rec Record) {
	switch rec.Op {
	case OpDef:
		c.def(rec)
	case OpTensor, OpParam:
		bytes, _ := shapeBytes(rec.Shape, c.hdr.Config.MaxTensorBytes)
		if m := c.overTotal(bytes); m != "" {
			c.fail(rec, "%s", m)
			c.bind(rec.Name, &binding{unknown: true})
			return
		}
		c.bind(rec.Name, &binding{shape: rec.Shape, dev: rec.Device, st: &storage{bytes: bytes}})
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
			c.deleted[n] = rec.Line
		}
	case OpRead:
		if _, why := c.lookup(rec.Name); why != "" {
			c.fail(rec, "%s", why)
		}
	case OpExpect:
		if v := rec.Expect.Values; v != nil {
			b, why := c.lookup(v.Name)
			switch {
			case b == nil:
				c.fail(rec, "values: %s", why)
			case !b.unknown && int64(len(v.Values)) != NumElems(b.shape):
				c.fail(rec, "values: %s has %d elements (shape %s), got %d values", v.Name, NumElems(b.shape), ops.FormatShape(b.shape), len(v.Values))
			}
		}
	}
}

// def checks a function's names: every operand is a param or an earlier
// out, every return is bound at the end. Shapes wait for the calls.
func (c *checker) def(rec Record) {
	if f := c.funcs[rec.Fn]; f != nil {
		c.fail(rec, "%s is already defined at line %d (a function is defined once)", rec.Fn, f.rec.Line)
		return
	}
	f := &fnInfo{rec: rec}
	c.funcs[rec.Fn] = f
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

// bodyResult is what running a body on given argument shapes gives: the
// returns' shapes and where their memory comes from, or a message.
type bodyResult struct {
	msg  string
	rets []local
	// newBytes[k] is the size of the k-th storage the body allocates.
	newBytes []int64
}

// local is a name inside a body: its shape, and its storage: src >= 0 is
// param src's (an alias of an input), src < 0 is new storage -src-1.
type local struct {
	shape []int
	src   int
}

func (c *checker) runBody(f *fnInfo, args [][]int) *bodyResult {
	var key strings.Builder
	key.WriteString(f.rec.Fn)
	for _, a := range args {
		key.WriteString(ops.FormatShape(a))
	}
	if r := c.memo[key.String()]; r != nil {
		return r
	}
	res := &bodyResult{}
	c.memo[key.String()] = res
	locals := map[string]local{}
	for i, p := range f.rec.Params {
		locals[p] = local{shape: args[i], src: i}
	}
	params := map[string]bool{}
	for _, p := range f.rec.Params {
		params[p] = true
	}
	for i, s := range f.rec.Body {
		shape, msg := c.stmtShape(s, func(n string) []int { return locals[n].shape })
		if msg != "" {
			res.msg = stmtLabel(i, s) + ": " + msg
			return res
		}
		if params[s.Out] {
			if want := locals[s.Out].shape; !slices.Equal(shape, want) {
				res.msg = fmt.Sprintf("%s: writes into param %s in place, so it must keep its shape %s, but the result has shape %s",
					stmtLabel(i, s), s.Out, ops.FormatShape(want), ops.FormatShape(shape))
				return res
			}
			continue
		}
		if s.Out == "_" {
			continue
		}
		l := local{shape: shape}
		if s.K == ops.StmtView {
			l.src = locals[s.A].src
		} else {
			b, _ := shapeBytes(shape, c.hdr.Config.MaxTensorBytes)
			res.newBytes = append(res.newBytes, b)
			l.src = -len(res.newBytes)
		}
		locals[s.Out] = l
	}
	for _, r := range f.rec.Returns {
		res.rets = append(res.rets, locals[r])
	}
	return res
}

// stmtShape returns a statement's result shape, given the shapes of its
// operands, or a message. It applies the kernels' shape rules and the
// tensor size limit.
func (c *checker) stmtShape(s Stmt, shapeOf func(string) []int) ([]int, string) {
	o := ops.Operands{Shape: s.Shape, HasVal: s.HasValue, BIsNum: s.B.IsNum}
	if s.A != "" {
		o.A, o.HasA = shapeOf(s.A), true
	}
	if s.B.Name != "" {
		o.B, o.HasB = shapeOf(s.B.Name), true
	}
	shape, _, err := ops.ResultShape(s.K, o)
	if err != nil {
		msg, _ := strings.CutPrefix(err.Error(), s.K+": ")
		return nil, msg
	}
	if _, ok := shapeBytes(shape, c.hdr.Config.MaxTensorBytes); !ok {
		return nil, fmt.Sprintf("result %s is over max_tensor_bytes (%s)", ops.FormatShape(shape), formatBytes(c.hdr.Config.MaxTensorBytes))
	}
	return shape, ""
}

func (c *checker) call(rec Record) {
	bindUnknown := func() {
		for _, o := range rec.Out {
			c.bind(o, &binding{unknown: true})
		}
	}
	f := c.funcs[rec.Fn]
	if f == nil {
		c.fail(rec, "%s is not defined (def it before the call)", rec.Fn)
		bindUnknown()
		return
	}
	if len(rec.Args) != len(f.rec.Params) {
		c.fail(rec, "%s, but %s takes %s", plural(len(rec.Args), "arg"), rec.Fn, paramList(f.rec.Params))
		bindUnknown()
		return
	}
	if rec.Out != nil && len(rec.Out) != len(f.rec.Returns) {
		c.fail(rec, "out has %s, but %s returns %s", plural(len(rec.Out), "name"), rec.Fn, plural(len(f.rec.Returns), "value"))
		bindUnknown()
		return
	}
	args := make([]*binding, len(rec.Args))
	shapes := make([][]int, len(rec.Args))
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
		args[i], shapes[i] = b, b.shape
	}
	if unknown {
		bindUnknown()
		return
	}
	res := c.runBody(f, shapes)
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
	made := make([]*storage, len(res.newBytes))
	outs := make([]*binding, len(rec.Out))
	var add int64
	for i, o := range rec.Out {
		r := res.rets[i]
		b := &binding{shape: r.shape, dev: dev}
		if r.src >= 0 {
			b.st = args[r.src].st
		} else {
			k := -r.src - 1
			if made[k] == nil {
				made[k] = &storage{bytes: res.newBytes[k]}
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
	for i, o := range rec.Out {
		c.bind(o, outs[i])
	}
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

func (c *checker) eager(rec Record) {
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
	shape, msg := c.stmtShape(s, func(n string) []int { return c.names[n].shape })
	if msg != "" {
		c.fail(rec, "%s", msg)
		c.bind(s.Out, &binding{unknown: true})
		return
	}
	b := &binding{shape: shape}
	if len(devs) > 0 {
		b.dev = devs[0].dev
	}
	if s.K == ops.StmtView {
		b.st = devs[0].st
	} else {
		bytes, _ := shapeBytes(shape, c.hdr.Config.MaxTensorBytes)
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
