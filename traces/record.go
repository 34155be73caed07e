package traces

// Version is the trace format version this package reads and writes.
const Version = 1

// Defaults of the header's config object (spec: trace-v1.md, "Header").
const (
	DefaultWarmupRuns     = 1
	DefaultRerecordLimit  = 8
	DefaultMaxTensorBytes = int64(4) << 30
	DefaultMaxTotalBytes  = int64(64) << 30
	// DefaultRecompileLimit is torch._dynamo.config.recompile_limit's default.
	DefaultRecompileLimit = 8
	// MaxDims is the most dimensions a shape may have (PyTorch allows more,
	// but no CUDAGraph Trees behaviour depends on rank; 8 bounds the work a
	// shape costs). Version 1 as first written allowed 4.
	MaxDims = 8
	// ElemBytes is the size of a float32 element, the default dtype; a
	// tensor's element size is ops.DType.Size().
	ElemBytes = 4
)

// Header is line 1 of a trace.
type Header struct {
	Version int    // "cgtviz"
	Name    string // "name"
	Devices int    // "devices", at least 1
	Config  Config
	// Meta is the free-form "meta" object, kept as raw JSON; its "torch"
	// version is read (engine.HandoffFor) and its "journal" note (Unended).
	Meta []byte
}

// Config holds the engine settings: the header's "config" object, and the
// settings a "config" record changes from that record on. For the header,
// Read fills in the defaults for absent keys; for a config record, only the
// keys in Set are meaningful (the others are zero and mean "unchanged").
// Set records which keys were present so a canonical rewrite keeps the
// file's choices. Each key mirrors one PyTorch knob (docs/trace-format.md).
type Config struct {
	// WarmupRuns: eager runs before recording ("warmup_runs"; PyTorch
	// records after one warmup, and skip_cudagraph_warmup is 0).
	WarmupRuns int
	// RerecordLimit: torch._inductor.config.triton.cudagraph_unexpected_rerecord_limit ("rerecord_limit").
	RerecordLimit  int
	MaxTensorBytes int64 // "max_tensor_bytes"
	MaxTotalBytes  int64 // "max_total_bytes"
	// RecompileLimit: torch._dynamo.config.recompile_limit ("recompile_limit").
	RecompileLimit int
	// AutomaticDynamicShapes: torch._dynamo.config.automatic_dynamic_shapes.
	AutomaticDynamicShapes bool
	// AssumeStaticByDefault: torch._dynamo.config.assume_static_by_default.
	AssumeStaticByDefault bool
	// SupportInputMutation: torch._inductor.config.triton.cudagraph_support_input_mutation.
	SupportInputMutation bool
	// SkipDynamicGraphs: torch._inductor.config.triton.cudagraph_skip_dynamic_graphs.
	SkipDynamicGraphs bool
	// DynamicShapeWarnLimit: torch._inductor.config.triton.cudagraph_dynamic_shape_warn_limit
	// (0 is PyTorch's None: never warn).
	DynamicShapeWarnLimit int
	// InlineInbuiltNNModules: torch._dynamo.config.inline_inbuilt_nn_modules.
	// With it or SupportInputMutation a graph whose static input moved is
	// re-recorded (CUDAGraphNode.rerecord_if_static_inputs_change); with
	// neither, replaying it raises "static input data pointer changed".
	InlineInbuiltNNModules bool
	// CudagraphOrError: torch._inductor.config.triton.cudagraph_or_error.
	// Where PyTorch would log a cudagraph skip and run the function without
	// CUDA graphs (log_cudagraph_skip_and_bump_counter), it raises the
	// skip's message as a RuntimeError instead.
	CudagraphOrError bool
	// Set names the keys present in the file ("warmup_runs", ...).
	Set map[string]bool
}

// Config keys, as the file spells them, in canonical order.
const (
	KeyWarmupRuns             = "warmup_runs"
	KeyRerecordLimit          = "rerecord_limit"
	KeyMaxTensorBytes         = "max_tensor_bytes"
	KeyMaxTotalBytes          = "max_total_bytes"
	KeyRecompileLimit         = "recompile_limit"
	KeyAutomaticDynamicShapes = "automatic_dynamic_shapes"
	KeyAssumeStaticByDefault  = "assume_static_by_default"
	KeySupportInputMutation   = "support_input_mutation"
	KeySkipDynamicGraphs      = "skip_dynamic_graphs"
	KeyDynamicShapeWarnLimit  = "dynamic_shape_warn_limit"
	KeyInlineInbuiltNNModules = "inline_inbuilt_nn_modules"
	KeyCudagraphOrError       = "cudagraph_or_error"
)

// ConfigKeys is every config key in canonical order.
var ConfigKeys = []string{
	KeyWarmupRuns, KeyRerecordLimit, KeyMaxTensorBytes, KeyMaxTotalBytes,
	KeyRecompileLimit, KeyAutomaticDynamicShapes, KeyAssumeStaticByDefault,
	KeySupportInputMutation, KeySkipDynamicGraphs, KeyDynamicShapeWarnLimit,
	KeyInlineInbuiltNNModules, KeyCudagraphOrError,
}

// Defaults of the config keys added after version 1 was first written.
const (
	DefaultAutomaticDynamicShapes = true
	DefaultAssumeStaticByDefault  = true
	DefaultSupportInputMutation   = true
	DefaultSkipDynamicGraphs      = false
	DefaultDynamicShapeWarnLimit  = 8
	DefaultInlineInbuiltNNModules = true
	DefaultCudagraphOrError       = false
)

// DefaultConfig returns the config of a header without a "config" object.
func DefaultConfig() Config {
	return Config{
		WarmupRuns:             DefaultWarmupRuns,
		RerecordLimit:          DefaultRerecordLimit,
		MaxTensorBytes:         DefaultMaxTensorBytes,
		MaxTotalBytes:          DefaultMaxTotalBytes,
		RecompileLimit:         DefaultRecompileLimit,
		AutomaticDynamicShapes: DefaultAutomaticDynamicShapes,
		AssumeStaticByDefault:  DefaultAssumeStaticByDefault,
		SupportInputMutation:   DefaultSupportInputMutation,
		SkipDynamicGraphs:      DefaultSkipDynamicGraphs,
		DynamicShapeWarnLimit:  DefaultDynamicShapeWarnLimit,
		InlineInbuiltNNModules: DefaultInlineInbuiltNNModules,
	}
}

// With returns c changed by the keys a config record sets (delta.Set):
// the settings in force after that record. Set of the result is c's keys
// and delta's together.
func (c Config) With(delta Config) Config {
	out := c
	out.Set = make(map[string]bool, len(c.Set)+len(delta.Set))
	for k := range c.Set {
		out.Set[k] = true
	}
	for k := range delta.Set {
		if !delta.Set[k] {
			continue
		}
		out.Set[k] = true
		switch dst := out.field(k).(type) {
		case *int:
			*dst = *delta.field(k).(*int)
		case *int64:
			*dst = *delta.field(k).(*int64)
		case *bool:
			*dst = *delta.field(k).(*bool)
		}
	}
	return out
}

// field returns a pointer to key k's field of c (*int, *int64 or *bool),
// nil for a key that is not a config key: the one place that maps keys to
// fields, for With, the writer and the builder.
func (c *Config) field(k string) any {
	switch k {
	case KeyWarmupRuns:
		return &c.WarmupRuns
	case KeyRerecordLimit:
		return &c.RerecordLimit
	case KeyMaxTensorBytes:
		return &c.MaxTensorBytes
	case KeyMaxTotalBytes:
		return &c.MaxTotalBytes
	case KeyRecompileLimit:
		return &c.RecompileLimit
	case KeyAutomaticDynamicShapes:
		return &c.AutomaticDynamicShapes
	case KeyAssumeStaticByDefault:
		return &c.AssumeStaticByDefault
	case KeySupportInputMutation:
		return &c.SupportInputMutation
	case KeySkipDynamicGraphs:
		return &c.SkipDynamicGraphs
	case KeyDynamicShapeWarnLimit:
		return &c.DynamicShapeWarnLimit
	case KeyInlineInbuiltNNModules:
		return &c.InlineInbuiltNNModules
	case KeyCudagraphOrError:
		return &c.CudagraphOrError
	}
	return nil
}

// Op is a record's "op".
type Op string

// The record ops of format version 1.
const (
	OpDef    Op = "def"
	OpTensor Op = "tensor"
	OpParam  Op = "param"
	OpCall   Op = "call"
	OpEager  Op = "eager"
	OpDel    Op = "del"
	OpStep   Op = "step"
	OpRead   Op = "read"
	OpExpect Op = "expect"
	OpNote   Op = "note"
	// OpConfig changes engine settings from that record on (added to
	// version 1: PyTorch tests patch config mid-program).
	OpConfig Op = "config"
	// OpReset drops the CUDAGraph trees (added to version 1: PyTorch's
	// torch._dynamo.reset(), or a device's tree manager dying with the last
	// of its compiled functions).
	OpReset Op = "reset"
	// OpSkippedBackward is a compiled backward that ran without CUDA graphs
	// (cudagraphs skipped for it): it reaches the tree only to say the
	// forwards' backward ran (set_to_running_backward).
	OpSkippedBackward Op = "skipped_backward"
	// OpEmptyCache is torch.cuda.empty_cache() (added to version 1): every
	// device's caching allocator gives back its free cached segments, as
	// release_cached_blocks does; a tree's live pool keeps its own.
	OpEmptyCache Op = "empty_cache"
	// OpSaved binds a name to the tensor autograd saved from a call output
	// the tree already counts dead (added to version 1: a forward's replay
	// returns its saved tensors as cached outputs, which PyTorch counts
	// dead while only autograd holds them; the backward then takes them as
	// inputs).
	OpSaved Op = "saved"
)

// Mode is a compiled function's compilation mode (PyTorch's CompilationMode).
type Mode string

// The modes of a def.
const (
	ModeInference Mode = "inference"
	ModeForward   Mode = "forward"
	ModeBackward  Mode = "backward"
)

// Init is how a tensor or param record fills its values.
type Init string

// The inits of format version 1.
const (
	InitRand   Init = "rand"
	InitZeros  Init = "zeros"
	InitOnes   Init = "ones"
	InitArange Init = "arange"
	InitValues Init = "values"
)

// Record is one line of a trace after the header. Which fields are
// meaningful depends on Op; the others are zero. One flat struct (rather than
// one type per op) keeps the reader allocation-light and lets a switch on Op
// do the dispatch everywhere.
type Record struct {
	// Line is the 1-based line number in the file (0 for records built in code).
	Line int
	Op   Op

	// def
	Fn      string // def, call
	Params  []string
	Body    []Stmt
	Returns []string
	Mode    Mode // "" means inference
	// Static lists the def's static inputs by position, as the compiled
	// graph has them (PyTorch's static_input_idxs: parameters, and in a
	// backward the tensors its forward saved); nil when the def does not
	// say, and the calls' param records decide.
	Static []int
	// Graph names the def whose compiled graph this def is another input
	// size of: PyTorch records a dynamic graph once a distinct size, each
	// size its own function (cudagraphify_impl's fn_cache), and the sizes
	// of one graph count toward dynamic_shape_warn_limit together. Empty:
	// the def is its own compiled graph (or the first size of one).
	Graph string

	// tensor, param
	Name string // tensor, param, read, saved
	// Of is a saved record's dead output name.
	Of      string
	Shape   []int
	Init    Init
	Seed    int64
	HasSeed bool
	Values  []float64
	Device  int
	// OneDevice marks a reset record that names its device: only that
	// device's tree is dropped (Device says which); without it every
	// device's tree is, and the mark-step counter goes back to 0.
	OneDevice bool
	// DType is the element type ("dtype", ops.ParseDType spells them);
	// "" when absent, which is float32.
	DType string

	// call
	Args []string
	// Out binds a call's results; nil when the record has no "out".
	Out []string
	// Invocation is the call's "invocation": Dynamo's
	// GenerationTracker.generation when the graph ran. Calls with equal
	// values belong to one invocation of a compiled frame. nil when absent
	// (every call its own invocation, as before).
	Invocation *int64

	// eager: the statement it runs (its Out is the name it binds).
	Stmt *Stmt

	// del
	Names []string

	// note
	Text string

	// expect
	Expect *Expect

	// config: the keys the record sets (Config.Set) and their values.
	Config *Config

	// Src is where in the user's program the record came from (def,
	// tensor, param, call, read, empty_cache: "src", source.go); nil when
	// absent.
	Src *Source

	// memoKey is the reader's number for the record's line text while
	// its memo holds the line (LineKey).
	memoKey int32
}

// LineKey is a small number (1 to memoLines) that the records of one line
// text share while the Reader that read them remembers the line, 0 for a
// record it does not (nor one built in code). Numbers are handed out in
// the order the texts first came, so a loop that calls its functions in
// the order it first did visits them in order: a cache indexed by it
// (the engine's defs, the checker's functions) reads its slots one after
// the other, where one keyed by a hash of the name reads a random slot,
// a cache miss a call in a program of ten thousand functions. A number
// may be handed out again for another text (the memo is remade when
// full), so it is a hint: a cache must check that what its slot holds is
// the record's (its function's name).
func (r *Record) LineKey() int { return int(r.memoKey) }

// Stmt is one statement of a function body or an eager record:
// {"out": NAME, "k": KERNEL, "a": NAME, "b": NAME-or-number, ...}.
type Stmt struct {
	Out string
	K   string // kernel name, see traces/ops
	A   string // "" when absent
	B   Operand
	// Shape is the "shape" of view, fill and empty; nil when absent.
	Shape []int
	// Value is fill's "value".
	Value    float64
	HasValue bool
	// DType is the result's "dtype"; "" when absent: a's dtype, or
	// float32 for fill and empty.
	DType string
	// Offset and Strides are a view's "offset" (storage offset, in
	// elements of a's storage) and "strides" (one per dim of the view's
	// shape). Strides nil means contiguous; HasOffset says "offset" was
	// given. A view with either is a strided view (x[:, -1], narrow,
	// chunk): its element count may differ from a's, and its extent
	// (ops.ViewExtent) must fit in a's storage.
	Offset    int64
	HasOffset bool
	Strides   []int64
}

// Strided reports whether a view statement has an offset or strides.
func (s Stmt) Strided() bool { return s.HasOffset || s.Offset != 0 || s.Strides != nil }

// Operand is a statement's "b": a tensor name, a number, or absent.
type Operand struct {
	Name  string
	Num   float64
	IsNum bool
}

// Present reports whether the operand was given.
func (o Operand) Present() bool { return o.IsNum || o.Name != "" }

// Expect is an expect record. Every pointer field is optional: nil means the
// field was absent. Fields whose JSON value may be null carry a separate
// presence flag.
type Expect struct {
	Action      *string
	Node        *ExpectNode
	Nodes       *int
	Roots       *int
	Checkpoints *int
	Recordings  *int
	Replays     *int
	Warmups     *int
	LiveBlocks  *int
	// HasError is true when "error" was present; Error nil then means
	// `"error": null` (the record raised no error).
	HasError bool
	Error    *string
	Values   *ExpectValues
	Device   int
}

// ExpectNode is expect's "node": {"fn": F, "parent_fn": P}. Each key is optional.
type ExpectNode struct {
	Fn          *string
	HasParentFn bool
	// ParentFn nil with HasParentFn means the node is a root.
	ParentFn *string
}

// ExpectValues is expect's "values": {"name": N, "values": [...], "tol": 1e-5}.
type ExpectValues struct {
	Name   string
	Values []float64
	Tol    float64
	HasTol bool
}

// DefaultTol is the tolerance of a values check without "tol".
const DefaultTol = 1e-5

// Actions an expect record may name for the last call.
const (
	ActionWarmup = "warmup"
	ActionRecord = "record"
	ActionReplay = "replay"
	ActionEager  = "eager"
)

// NumElems returns the element count of a shape (1 for a scalar shape []).
func NumElems(shape []int) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= int64(d)
	}
	return n
}
