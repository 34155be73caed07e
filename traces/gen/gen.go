// Package gen makes random, valid traces for property tests and fuzzing:
// several compiled functions (elementwise chains, matmul, sum, views,
// in-place writes to parameters, aliased and repeated returns), tensors and
// parameters, calls whose arguments are eager tensors, parameters and
// outputs of earlier calls, dels, rebinding, steps (or none at all, so that
// every call starts a generation), reads and eager statements on outputs
// that later replays may have overwritten, and shape changes (a new shape
// is a new function). Every trace passes (*traces.Trace).Check, and the
// same seed and options always give the same trace. Options.Additions also
// makes the fields added to version 1 (invocations, dtypes, strided views,
// shapes of up to 8 dims, config records); without it a seed gives the
// trace it always gave.
package gen

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/cgtviz/cgtviz/traces"
)

// Options shape a generated trace. The zero value is usable.
type Options struct {
	// Records is about how many records the trace has (default 150). The
	// trace may be a few records longer: a call first makes the tensors it
	// needs.
	Records int
	// Steps says whether the trace calls step: StepsRandom (the default)
	// decides per seed, about one trace in four having none.
	Steps StepMode
	// MaxNames bounds how many names are bound at once (default 12); above
	// it the generator deletes more often.
	MaxNames int
	// Additions makes the trace use, some of the time, the fields added
	// to version 1: call invocations (graph breaks: runs of calls sharing
	// one), tensors of other dtypes, strided views (x[:, -1] and narrow),
	// shapes of 5 to 8 dims and config records. Off, the generator draws
	// the same random numbers as before they existed, so seeds keep their
	// traces.
	Additions bool
}

// StepMode says whether a trace has step records.
type StepMode uint8

// The step modes.
const (
	StepsRandom StepMode = iota // decided per seed
	StepsAlways                 // step records are made
	StepsNever                  // no step: every call is a new generation (inference)
)

// value is what the generator knows of a bound name.
type value struct {
	shape []int
	param bool
	// strided: a strided view (or an alias of one). Plain views of it
	// that reshape are refused by the checker, so none are made.
	strided bool
}

// gen is one trace being made.
type gen struct {
	r     *rand.Rand
	b     *traces.Builder
	names map[string]value
	order []string // bound names, in binding order: picks must not depend on map order
	fns   []fn
	next  int // counter for fresh names
	max   int
	// add is Options.Additions; shapes the shapes tensors take (more with
	// add); inv the invocation counter when calls carry one (-1: they do not).
	add    bool
	shapes [][]int
	inv    int64
}

// fn is a defined function: its name, its kind (which says what arguments
// it takes and what shapes it returns) and how many results it returns.
type fn struct {
	name string
	kind string
	// numel is the element count a "vw" or "vwout" function needs of its
	// argument.
	numel int
	nret  int
}

// shapes are the shapes tensors take: small, so that traces stay cheap,
// with 1-D and 2-D shapes of equal element counts so that views and
// shape changes meet.
var shapes = [][]int{{4}, {6}, {1}, {2, 3}, {3, 2}, {2, 2}, {3, 3}}

// moreShapes are the shapes of 5 to 8 dims Options.Additions adds, with
// the element counts of the others so views still meet.
var moreShapes = [][]int{{2, 1, 1, 1, 3}, {1, 2, 1, 2, 1, 1}, {1, 1, 1, 1, 1, 1, 2, 3}}

// dtypes are the dtypes Options.Additions gives some tensors.
var dtypes = []string{"float16", "bfloat16", "float64", "int32", "int64", "int8", "uint8", "bool"}

var (
	binaryKs = []string{"add", "sub", "mul", "div", "max", "min"}
	unaryKs  = []string{"neg", "relu", "exp", "sqrt", "tanh", "abs"}
)

// Trace returns the trace of seed.
func Trace(seed int64, opts Options) *traces.Trace {
	if opts.Records <= 0 {
		opts.Records = 150
	}
	if opts.MaxNames <= 0 {
		opts.MaxNames = 12
	}
	g := &gen{
		r:      rand.New(rand.NewPCG(uint64(seed), 0x9E3779B97F4A7C15)),
		b:      traces.NewBuilder(fmt.Sprintf("gen seed %d", seed)),
		names:  map[string]value{},
		max:    opts.MaxNames,
		add:    opts.Additions,
		shapes: shapes,
		inv:    -1,
	}
	if g.add {
		g.shapes = append(slices.Clone(shapes), moreShapes...)
		if g.r.IntN(2) == 0 {
			g.inv = 0
		}
	}
	steps := opts.Steps
	if steps == StepsRandom {
		steps = StepsAlways
		if g.r.IntN(4) == 0 {
			steps = StepsNever
		}
	}
	warm := g.r.IntN(3)
	rerecord := 1 + g.r.IntN(8)
	g.b.Config(func(c *traces.Config) {
		c.WarmupRuns = warm
		c.RerecordLimit = rerecord
	})
	g.defs()
	if steps == StepsAlways && g.r.IntN(2) == 0 {
		g.b.Step()
	}
	for g.b.Len() < opts.Records {
		switch x := g.r.IntN(100); {
		case x < 37:
			g.call()
		case x < 45:
			g.loop(steps == StepsAlways)
		case x < 53:
			g.tensor(g.r.IntN(3) == 0)
		case x < 63:
			g.del()
		case x < 73 && steps == StepsAlways:
			g.b.Step()
		case x < 83:
			g.read()
		case x < 95:
			g.eager()
		case g.add && x < 97:
			g.config()
		default:
			g.b.Note(fmt.Sprintf("note %d", g.b.Len()))
		}
	}
	return g.b.Trace()
}

// loop repeats a short program two to five times, as a training or
// inference loop does: a fresh input each iteration (rebinding one name),
// then the same calls on it and on what they return. Repetition is what
// makes functions warm up, record, then replay; a step before each
// iteration (when the trace has steps) starts its generation.
func (g *gen) loop(steps bool) {
	inName := g.fresh("in")
	shape := g.shapes[g.r.IntN(len(g.shapes))]
	type call struct {
		f   fn
		arg int // which earlier value feeds it: 0 the input, i the result of call i
	}
	var calls []call
	for range 1 + g.r.IntN(3) {
		// Functions of one tensor argument whose first result has the
		// input's shape, so that calls chain.
		var ok []fn
		for _, f := range g.fns {
			switch f.kind {
			case "un", "dup", "fl", "red":
				ok = append(ok, f)
			}
		}
		if len(ok) == 0 {
			return
		}
		calls = append(calls, call{f: pick(g, ok), arg: g.r.IntN(len(calls) + 1)})
	}
	iters := 2 + g.r.IntN(4)
	keep := g.r.IntN(2) == 0 // keep the results alive across iterations, or del them
	for range iters {
		if steps {
			g.b.Step()
		}
		seed := g.r.Int64N(1000)
		g.b.TensorSeed(inName, slices.Clone(shape), seed)
		g.bind(inName, value{shape: slices.Clone(shape)})
		vals := []string{inName}
		for i, c := range calls {
			out := make([]string, c.f.nret)
			for j := range out {
				out[j] = fmt.Sprintf("%s_%d_%d", inName, i, j)
			}
			args := []string{vals[c.arg]}
			shp := g.retShapes(c.f, args)
			g.invocation(i == 0)
			g.b.Call(c.f.name, args, out...)
			for j, o := range out {
				g.unbind(o)
				g.bind(o, value{shape: shp[j]})
			}
			vals = append(vals, out[0])
		}
		if !keep {
			var dead []string
			for _, v := range vals[1:] {
				if !slices.Contains(dead, v) {
					dead = append(dead, v)
				}
			}
			g.b.Del(dead...)
			for _, d := range dead {
				g.unbind(d)
			}
		}
	}
}

// defs defines between four and all of the function kinds, each with its
// own constants.
func (g *gen) defs() {
	kinds := []string{"ew", "un", "mm", "red", "vw", "vwout", "upd", "dup", "fl"}
	g.r.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
	kinds = kinds[:4+g.r.IntN(len(kinds)-3)]
	for i, k := range kinds {
		g.def(fmt.Sprintf("f%d_%s", i, k), k)
	}
}

// pick returns a random element of s.
func pick[T any](g *gen, s []T) T { return s[g.r.IntN(len(s))] }

func (g *gen) num() float64 { return float64(g.r.IntN(9)-4) / 2 }

// def adds one function of kind k.
func (g *gen) def(name, k string) {
	S := traces.S
	f := fn{name: name, kind: k}
	var params, returns []string
	var body []traces.Stmt
	switch k {
	case "ew": // c = un(bin(x, y)) * s
		params, returns = []string{"x", "y"}, []string{"c"}
		body = []traces.Stmt{S("a", pick(g, binaryKs), "x", "y"), S("b", pick(g, unaryKs), "a", nil), S("c", "mul", "b", g.num())}
	case "un": // two unary kernels and a scalar op
		params, returns = []string{"x"}, []string{"b"}
		body = []traces.Stmt{S("a", pick(g, unaryKs), "x", nil), S("b", pick(g, binaryKs), "a", g.num())}
	case "mm": // relu(a @ w)
		params, returns = []string{"a", "w"}, []string{"d"}
		body = []traces.Stmt{S("c", "matmul", "a", "w"), S("d", "relu", "c", nil)}
	case "red": // s = sum(x), t = x * s (broadcast)
		params, returns = []string{"x"}, []string{"s", "t"}
		body = []traces.Stmt{S("s", "sum", "x", nil), S("t", "mul", "x", "s")}
	case "vw": // returns a view of its input: the output aliases it
		f.numel = pick(g, []int{4, 6})
		params, returns = []string{"x"}, []string{"w", "v"}
		body = []traces.Stmt{traces.SShape("v", "view", "x", []int{f.numel}), S("w", "add", "v", g.num())}
	case "vwout": // returns an output and a view of it
		f.numel = pick(g, []int{4, 6})
		sh := []int{2, f.numel / 2}
		params, returns = []string{"x"}, []string{"a", "v"}
		body = []traces.Stmt{S("a", "mul", "x", g.num()), traces.SShape("v", "view", "a", sh)}
	case "upd": // writes into its first input in place and returns it
		params, returns = []string{"p", "x"}, []string{"y", "p"}
		body = []traces.Stmt{S("p", "add", "p", "x"), S("y", "mul", "p", 0.5)}
	case "dup": // the same output twice, and the input
		params, returns = []string{"x"}, []string{"a", "a", "x"}
		body = []traces.Stmt{S("a", "mul", "x", g.num())}
	case "fl": // fill, an unreturned workspace and a copy
		params, returns = []string{"x"}, []string{"c", "z"}
		body = []traces.Stmt{traces.SFill("z", []int{4}, g.num()), traces.SShape("e", "empty", "", []int{2}), S("c", "copy", "x", nil)}
	}
	f.nret = len(returns)
	g.b.Def(name, params, returns, body...)
	g.fns = append(g.fns, f)
}

// fresh returns a name never bound before.
func (g *gen) fresh(prefix string) string {
	g.next++
	return fmt.Sprintf("%s%d", prefix, g.next)
}

func (g *gen) bind(name string, v value) {
	if _, ok := g.names[name]; !ok {
		g.order = append(g.order, name)
	}
	g.names[name] = v
}

func (g *gen) unbind(name string) {
	delete(g.names, name)
	g.order = slices.DeleteFunc(g.order, func(n string) bool { return n == name })
}

// target returns the name a new value binds: a fresh one, or (one time in
// three) a name bound now, which rebinding drops.
func (g *gen) target(prefix string) string {
	if len(g.order) > 0 && g.r.IntN(3) == 0 {
		return pick(g, g.order)
	}
	return g.fresh(prefix)
}

// tensor makes a tensor or a param of a random shape and binds it.
func (g *gen) tensor(param bool) string {
	return g.tensorOf(param, g.shapes[g.r.IntN(len(g.shapes))], true)
}

// tensorOf makes a tensor or param of shape, bound to a fresh name, or when
// rebind is set maybe to a bound one (never while picking a call's
// arguments: that would change an argument already picked).
func (g *gen) tensorOf(param bool, shape []int, rebind bool) string {
	prefix := "t"
	if param {
		prefix = "p"
	}
	name := g.fresh(prefix)
	if rebind {
		name = g.target(prefix)
	}
	shape = slices.Clone(shape)
	n := 1
	for _, d := range shape {
		n *= d
	}
	b := g.b
	switch g.r.IntN(5) {
	case 0:
		if param {
			b.Param(name, shape, traces.InitOnes)
		} else {
			b.Tensor(name, shape, traces.InitArange)
		}
	case 1:
		vals := make([]float64, n)
		for i := range vals {
			vals[i] = float64(g.r.IntN(17)-8) / 4
		}
		if param {
			b.ParamValues(name, shape, vals)
		} else {
			b.TensorValues(name, shape, vals)
		}
	default:
		seed := g.r.Int64N(1000)
		// Values of other dtypes are not modelled, so only rand tensors
		// (never init values) get one.
		if g.add && g.r.IntN(6) == 0 {
			b.OfDType(pick(g, dtypes))
		}
		if param {
			b.ParamSeed(name, shape, seed)
		} else {
			b.TensorSeed(name, shape, seed)
		}
	}
	g.bind(name, value{shape: shape, param: param})
	return name
}

// invocation gives the next call an invocation when the trace has them.
// A call starts a new invocation unless it follows a call of the same
// frame: cont says it may (the next call of a loop iteration), and then
// one time in two it is a graph break's resume, sharing the invocation.
func (g *gen) invocation(cont bool) {
	if g.inv < 0 {
		return
	}
	if !cont || g.r.IntN(2) == 0 {
		g.inv++
	}
	g.b.InInvocation(g.inv)
}

// config adds a config record, as a test patching PyTorch's config does:
// the engine settings only, never the byte limits the trace was made
// under.
func (g *gen) config() {
	keys := []string{traces.KeyWarmupRuns, traces.KeyRerecordLimit, traces.KeyRecompileLimit,
		traces.KeySupportInputMutation, traces.KeyAutomaticDynamicShapes}
	set := []string{pick(g, keys)}
	if g.r.IntN(3) == 0 {
		set = append(set, pick(g, keys))
	}
	warm, rerec, recomp, mut, dyn := g.r.IntN(3), 1+g.r.IntN(8), 1+g.r.IntN(8), g.r.IntN(2) == 0, g.r.IntN(2) == 0
	g.b.SetConfig(set, func(c *traces.Config) {
		c.WarmupRuns, c.RerecordLimit, c.RecompileLimit = warm, rerec, recomp
		c.SupportInputMutation, c.AutomaticDynamicShapes = mut, dyn
	})
}

// find returns a bound name whose value fits ok, or "" when none does.
func (g *gen) find(ok func(value) bool) string {
	var c []string
	for _, n := range g.order {
		if ok(g.names[n]) {
			c = append(c, n)
		}
	}
	if len(c) == 0 {
		return ""
	}
	return pick(g, c)
}

// arg returns a bound name whose value fits ok (most of the time, when one
// exists), or makes a tensor or param of shape.
func (g *gen) arg(ok func(value) bool, shape []int, param bool) string {
	if g.r.IntN(5) != 0 {
		if n := g.find(ok); n != "" {
			return n
		}
	}
	return g.tensorOf(param, shape, false)
}

func numel(s []int) int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}

func anyShape(value) bool { return true }

func shapeIs(s []int) func(value) bool {
	return func(v value) bool { return slices.Equal(v.shape, s) }
}

// call calls a random function with fitting arguments.
func (g *gen) call() {
	f := g.fns[g.r.IntN(len(g.fns))]
	var args []string
	switch f.kind {
	case "ew":
		x := g.arg(anyShape, g.shapes[g.r.IntN(len(g.shapes))], false)
		sx := g.names[x].shape
		var y string
		switch g.r.IntN(4) {
		case 0:
			y = g.arg(shapeIs([]int{1}), []int{1}, false)
		case 1:
			y = x // the same tensor twice
		default:
			y = g.arg(shapeIs(sx), sx, g.r.IntN(3) == 0)
		}
		args = []string{x, y}
	case "un", "red", "dup", "fl":
		args = []string{g.arg(anyShape, g.shapes[g.r.IntN(len(g.shapes))], g.r.IntN(4) == 0)}
	case "mm":
		mk := func(v value) bool { return len(v.shape) == 2 }
		a := g.arg(mk, []int{2 + g.r.IntN(2), 2 + g.r.IntN(2)}, false)
		k := g.names[a].shape[1]
		w := g.arg(func(v value) bool { return len(v.shape) == 2 && v.shape[0] == k }, []int{k, 2 + g.r.IntN(2)}, g.r.IntN(2) == 0)
		args = []string{a, w}
	case "vw", "vwout":
		fits := func(v value) bool { return numel(v.shape) == f.numel && !v.strided }
		sh := []int{f.numel}
		if g.r.IntN(2) == 0 {
			sh = []int{2, f.numel / 2}
		}
		args = []string{g.arg(fits, sh, false)}
	case "upd":
		// Mostly a param (a static input, mutated in place: cudagraphed);
		// sometimes a plain tensor or an output (the engine runs it eagerly
		// or re-records).
		isParam := g.r.IntN(4) != 0
		p := g.arg(func(v value) bool { return v.param == isParam }, g.shapes[g.r.IntN(len(g.shapes))], isParam)
		sp := g.names[p].shape
		x := g.arg(shapeIs(sp), sp, false)
		args = []string{p, x}
	}
	// Outputs: bound to fresh names, to bound names (x = f(x) included),
	// or not at all.
	var out []string
	switch g.r.IntN(6) {
	case 0: // results die at once
	default:
		used := map[string]bool{}
		for range f.nret {
			var o string
			for o == "" || used[o] {
				if g.r.IntN(4) == 0 && len(g.order) > 0 {
					o = pick(g, g.order)
				} else {
					o = g.fresh("o")
				}
			}
			used[o] = true
			out = append(out, o)
		}
	}
	g.invocation(true)
	g.b.Call(f.name, args, out...)
	// The results' shapes, known from the kind, before any out name that
	// is also an argument is rebound.
	shp := g.retShapes(f, args)
	vals := make([]value, len(out))
	for i := range out {
		vals[i] = value{shape: shp[i], param: g.retParam(f, args, i), strided: g.retStrided(f, args, i)}
	}
	for _, o := range out {
		g.unbind(o)
	}
	for i, o := range out {
		g.bind(o, vals[i])
	}
}

// retShapes returns the shapes of f's results for args.
func (g *gen) retShapes(f fn, args []string) [][]int {
	s0 := g.names[args[0]].shape
	switch f.kind {
	case "ew", "un":
		return [][]int{s0}
	case "mm":
		return [][]int{{s0[0], g.names[args[1]].shape[1]}}
	case "red":
		return [][]int{{1}, s0}
	case "vw":
		return [][]int{{f.numel}, {f.numel}}
	case "vwout":
		return [][]int{s0, {2, f.numel / 2}}
	case "upd":
		return [][]int{s0, s0}
	case "dup":
		return [][]int{s0, s0, s0}
	case "fl":
		return [][]int{s0, {4}}
	}
	panic("gen: unknown kind " + f.kind)
}

// retParam says whether result i is the param it aliases: returning a
// param's own storage (or a view of it) keeps it static.
func (g *gen) retParam(f fn, args []string, i int) bool {
	switch {
	case f.kind == "upd" && i == 1, f.kind == "dup" && i == 2, f.kind == "vw" && i == 1:
		return g.names[args[0]].param
	}
	return false
}

// retStrided says whether result i is an argument that is a strided view
// (returned as itself).
func (g *gen) retStrided(f fn, args []string, i int) bool {
	switch {
	case f.kind == "upd" && i == 1, f.kind == "dup" && i == 2:
		return g.names[args[0]].strided
	}
	return false
}

// del unbinds one or two names; with many names bound, more often.
func (g *gen) del() {
	if len(g.order) == 0 {
		return
	}
	n := 1
	if len(g.order) > g.max || g.r.IntN(3) == 0 {
		n = min(2, len(g.order))
	}
	var names []string
	for len(names) < n {
		c := pick(g, g.order)
		if !slices.Contains(names, c) {
			names = append(names, c)
		}
	}
	g.b.Del(names...)
	for _, c := range names {
		g.unbind(c)
	}
}

// read reads a bound name: the engine raises the overwritten error when a
// later replay overwrote it.
func (g *gen) read() {
	if len(g.order) == 0 {
		g.tensor(false)
		return
	}
	g.b.Read(pick(g, g.order))
}

// eager runs one statement outside any graph on a bound name.
func (g *gen) eager() {
	if len(g.order) == 0 {
		g.tensor(false)
		return
	}
	a := pick(g, g.order)
	sa := g.names[a].shape
	out := g.target("e")
	var st traces.Stmt
	var shape []int
	switch x := g.r.IntN(7); {
	case x < 2:
		b := g.find(shapeIs(sa))
		if b == "" || g.r.IntN(3) == 0 {
			st = traces.S(out, pick(g, binaryKs), a, g.num())
		} else {
			st = traces.S(out, pick(g, binaryKs), a, b)
		}
		shape = sa
	case x < 4:
		st = traces.S(out, pick(g, unaryKs), a, nil)
		shape = sa
	case x < 5:
		st = traces.S(out, "sum", a, nil)
		shape = []int{1}
	case x < 6:
		st = traces.S(out, "copy", a, nil)
		shape = sa
	case g.names[a].strided:
		// A reshaping view of a strided view would need its strides.
		st = traces.S(out, "copy", a, nil)
		shape = sa
	case g.add && g.r.IntN(2) == 0 && len(sa) == 2:
		// x[:, -1]: the last column, one element per row.
		shape = []int{sa[0]}
		st = traces.SStrided(out, a, shape, []int64{int64(sa[1])}, int64(sa[1]-1))
	case g.add && g.r.IntN(2) == 0 && numel(sa) > 1:
		// narrow(x.view(-1), 0, 1, n-1): all but the first element.
		n := numel(sa)
		shape = []int{n - 1}
		st = traces.SStrided(out, a, shape, nil, 1)
	default:
		shape = []int{numel(sa)}
		st = traces.SShape(out, "view", a, shape)
	}
	g.b.Eager(st)
	param := st.K == "view" && g.names[a].param
	// Any offset or strides count as strided here, even a contiguous
	// narrow: the generator then makes no reshaping view of it, which is
	// simpler than following offsets.
	strided := st.K == "view" && st.Strided()
	g.unbind(out) // a rebinding; a fresh name is not bound
	g.bind(out, value{shape: slices.Clone(shape), param: param, strided: strided})
}
