package traces

import (
	"fmt"
	"maps"
)

// Builder makes a trace in code: tests, random-trace generators and the
// PyTorch bridge use it instead of writing JSON. Methods chain and record
// in call order; nothing is checked until (*Trace).Check, so a builder can
// make broken traces on purpose. Each record gets Line = its index + 2
// (the header is line 1): the line it will have once written, so problems
// point at the right record.
type Builder struct {
	t      Trace
	device int
	dtype  string
	inv    *int64
}

// NewBuilder starts a trace called name, on one device, with the default config.
func NewBuilder(name string) *Builder {
	return &Builder{t: Trace{File: name, Header: Header{Version: Version, Name: name, Devices: 1, Config: DefaultConfig()}}}
}

// Devices sets how many devices the trace uses.
func (b *Builder) Devices(n int) *Builder {
	b.t.Header.Devices = n
	return b
}

// Config lets f change the engine settings. Keys whose value f changes are
// marked Set, so they are written even when changed back to a default.
func (b *Builder) Config(f func(*Config)) *Builder {
	c := &b.t.Header.Config
	before := *c
	before.Set = maps.Clone(c.Set)
	f(c)
	if c.Set == nil {
		c.Set = map[string]bool{}
	}
	for _, k := range changedKeys(before, *c) {
		c.Set[k] = true
	}
	return b
}

// changedKeys returns the config keys whose values differ between a and
// b, in canonical order.
func changedKeys(a, b Config) []string {
	var out []string
	for _, k := range ConfigKeys {
		if configValue(a, k) != configValue(b, k) {
			out = append(out, k)
		}
	}
	return out
}

// SetConfig adds a config record: the keys named in set, with the values
// f leaves in a Config that starts as the header's, change the settings
// from this record on. Naming a key whose value stays the same is allowed
// (PyTorch's config.patch can set a knob to what it was).
func (b *Builder) SetConfig(set []string, f func(*Config)) *Builder {
	c := b.t.Header.Config
	c.Set = nil
	f(&c)
	c.Set = make(map[string]bool, len(set))
	for _, k := range set {
		c.Set[k] = true
	}
	// Only the named keys are the record's, as the reader leaves them.
	rc := Config{}.With(c)
	return b.add(Record{Op: OpConfig, Config: &rc})
}

// Meta sets the header's free-form meta object (raw JSON).
func (b *Builder) Meta(raw []byte) *Builder {
	b.t.Header.Meta = append([]byte(nil), raw...)
	return b
}

func (b *Builder) add(r Record) *Builder {
	r.Line = len(b.t.Records) + 2
	b.t.Records = append(b.t.Records, r)
	return b
}

// Def defines a compiled function in inference mode.
func (b *Builder) Def(fn string, params, returns []string, body ...Stmt) *Builder {
	return b.DefMode(fn, "", params, returns, body...)
}

// DefMode defines a compiled function with a mode ("" is inference, and
// is left out when written).
func (b *Builder) DefMode(fn string, mode Mode, params, returns []string, body ...Stmt) *Builder {
	if params == nil {
		params = []string{}
	}
	if returns == nil {
		returns = []string{}
	}
	if body == nil {
		body = []Stmt{}
	}
	return b.add(Record{Op: OpDef, Fn: fn, Params: params, Returns: returns, Body: body, Mode: mode})
}

// OnDevice puts the next tensor or param on device d.
func (b *Builder) OnDevice(d int) *Builder {
	b.device = d
	return b
}

// OfDType gives the next tensor or param the dtype d ("float16", ...; ""
// leaves it out, which is float32).
func (b *Builder) OfDType(d string) *Builder {
	b.dtype = d
	return b
}

// InInvocation gives the next call the invocation n (Dynamo's generation
// when it ran): calls with the same n belong to one compiled-frame
// invocation, as a graph and its resume function after a graph break do.
func (b *Builder) InInvocation(n int64) *Builder {
	b.inv = &n
	return b
}

func (b *Builder) tensor(op Op, name string, shape []int, init Init, seed *int64, values []float64) *Builder {
	if shape == nil {
		shape = []int{}
	}
	r := Record{Op: op, Name: name, Shape: shape, Init: init, Values: values, Device: b.device, DType: b.dtype}
	if seed != nil {
		r.Seed, r.HasSeed = *seed, true
	}
	b.device, b.dtype = 0, ""
	return b.add(r)
}

// Tensor adds an eager tensor filled by init (for "rand", seed 0).
func (b *Builder) Tensor(name string, shape []int, init Init) *Builder {
	return b.tensor(OpTensor, name, shape, init, nil, nil)
}

// TensorSeed adds an eager tensor of random values from seed.
func (b *Builder) TensorSeed(name string, shape []int, seed int64) *Builder {
	return b.tensor(OpTensor, name, shape, InitRand, &seed, nil)
}

// TensorValues adds an eager tensor with the given values, row-major.
func (b *Builder) TensorValues(name string, shape []int, values []float64) *Builder {
	return b.tensor(OpTensor, name, shape, InitValues, nil, nonNil(values))
}

// Param adds a static tensor (a parameter or buffer) filled by init.
func (b *Builder) Param(name string, shape []int, init Init) *Builder {
	return b.tensor(OpParam, name, shape, init, nil, nil)
}

// ParamSeed adds a static tensor of random values from seed.
func (b *Builder) ParamSeed(name string, shape []int, seed int64) *Builder {
	return b.tensor(OpParam, name, shape, InitRand, &seed, nil)
}

// ParamValues adds a static tensor with the given values, row-major.
func (b *Builder) ParamValues(name string, shape []int, values []float64) *Builder {
	return b.tensor(OpParam, name, shape, InitValues, nil, nonNil(values))
}

func nonNil(v []float64) []float64 {
	if v == nil {
		return []float64{}
	}
	return v
}

// Call calls fn; out, when given, binds its results.
func (b *Builder) Call(fn string, args []string, out ...string) *Builder {
	if args == nil {
		args = []string{}
	}
	if len(out) == 0 {
		out = nil
	}
	inv := b.inv
	b.inv = nil
	return b.add(Record{Op: OpCall, Fn: fn, Args: args, Out: out, Invocation: inv})
}

// Eager runs one statement outside any graph; its Out is the name it binds.
func (b *Builder) Eager(s Stmt) *Builder { return b.add(Record{Op: OpEager, Stmt: &s}) }

// Del unbinds names.
func (b *Builder) Del(names ...string) *Builder { return b.add(Record{Op: OpDel, Names: names}) }

// Step starts a new generation (cudagraph_mark_step_begin).
func (b *Builder) Step() *Builder { return b.add(Record{Op: OpStep}) }

// EmptyCache adds torch.cuda.empty_cache().
func (b *Builder) EmptyCache() *Builder { return b.add(Record{Op: OpEmptyCache}) }

// SkippedBackward adds a compiled backward that ran without CUDA graphs on
// device dev.
func (b *Builder) SkippedBackward(dev int) *Builder {
	return b.add(Record{Op: OpSkippedBackward, Device: dev})
}

// Reset adds torch._dynamo.reset(): every device's tree is dropped.
func (b *Builder) Reset() *Builder { return b.add(Record{Op: OpReset}) }

// ResetDevice adds the end of one device's tree manager (its last compiled
// function died).
func (b *Builder) ResetDevice(dev int) *Builder {
	return b.add(Record{Op: OpReset, Device: dev, OneDevice: true})
}

// Read makes the host read a tensor.
func (b *Builder) Read(name string) *Builder { return b.add(Record{Op: OpRead, Name: name}) }

// Saved binds name to the tensor autograd saved from the dead call output of.
func (b *Builder) Saved(name, of string) *Builder {
	return b.add(Record{Op: OpSaved, Name: name, Of: of})
}

// Expect checks the engine's state after the record before it.
func (b *Builder) Expect(e Expect) *Builder { return b.add(Record{Op: OpExpect, Expect: &e}) }

// Note adds a comment shown in the step list.
func (b *Builder) Note(text string) *Builder { return b.add(Record{Op: OpNote, Text: text}) }

// Trace returns the trace built so far. Later builder calls do not change it.
func (b *Builder) Trace() *Trace {
	t := b.t
	t.Records = append([]Record(nil), b.t.Records...)
	t.Header.Config.Set = maps.Clone(b.t.Header.Config.Set)
	return &t
}

// S makes a statement out = k(a, b). b is a tensor name (string), a number
// (any int or float type), or nil when the kernel takes no b. Any other b is
// kept as a name spelled fmt.Sprint(b), which the checker then refuses:
// builders report mistakes through Check, never by panicking.
func S(out, k, a string, b any) Stmt {
	s := Stmt{Out: out, K: k, A: a}
	switch v := b.(type) {
	case nil:
	case string:
		s.B.Name = v
	case float64:
		s.B = Operand{Num: v, IsNum: true}
	case float32:
		s.B = Operand{Num: float64(v), IsNum: true}
	case int:
		s.B = Operand{Num: float64(v), IsNum: true}
	case int64:
		s.B = Operand{Num: float64(v), IsNum: true}
	case int32:
		s.B = Operand{Num: float64(v), IsNum: true}
	default:
		s.B.Name = fmt.Sprint(v)
	}
	return s
}

// SShape makes a statement with a "shape" (view of a; empty with a "").
func SShape(out, k, a string, shape []int) Stmt {
	if shape == nil {
		shape = []int{}
	}
	return Stmt{Out: out, K: k, A: a, Shape: shape}
}

// SFill makes out = fill(shape, v).
func SFill(out string, shape []int, v float64) Stmt {
	if shape == nil {
		shape = []int{}
	}
	return Stmt{Out: out, K: "fill", Shape: shape, Value: v, HasValue: true}
}

// SStrided makes out = a viewed with shape, strides (nil: contiguous) and
// storage offset: torch's a.as_strided(shape, strides, offset), which is
// what x[:, -1], narrow and chunk make.
func SStrided(out, a string, shape []int, strides []int64, offset int64) Stmt {
	if shape == nil {
		shape = []int{}
	}
	return Stmt{Out: out, K: "view", A: a, Shape: shape, Strides: strides, Offset: offset, HasOffset: true}
}

// As returns s with its result's dtype set to d.
func (s Stmt) As(d string) Stmt {
	s.DType = d
	return s
}

// Len returns the number of records built so far.
func (b *Builder) Len() int { return len(b.t.Records) }
