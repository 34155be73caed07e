package traces

// Version is the trace format version this package reads and writes.
const Version = 1

// Defaults of the header's config object (spec: trace-v1.md, "Header").
const (
	DefaultWarmupRuns     = 1
	DefaultRerecordLimit  = 8
	DefaultMaxTensorBytes = int64(4) << 30
	DefaultMaxTotalBytes  = int64(64) << 30
	// MaxDims is the most dimensions a shape may have.
	MaxDims = 4
	// ElemBytes is the size of one element: version 1 is float32 only.
	ElemBytes = 4
)

// Header is line 1 of a trace.
type Header struct {
	Version int    // "cgtviz"
	Name    string // "name"
	Devices int    // "devices", at least 1
	Config  Config
	// Meta is the free-form "meta" object, kept as raw JSON (never interpreted).
	Meta []byte
}

// Config holds the engine settings of the header's "config" object. Read
// fills in the defaults for absent keys; Set records which were present so a
// canonical rewrite keeps the file's choices.
type Config struct {
	WarmupRuns     int
	RerecordLimit  int
	MaxTensorBytes int64
	MaxTotalBytes  int64
	// Set names the keys present in the file ("warmup_runs", ...).
	Set map[string]bool
}

// DefaultConfig returns the config of a header without a "config" object.
func DefaultConfig() Config {
	return Config{
		WarmupRuns:     DefaultWarmupRuns,
		RerecordLimit:  DefaultRerecordLimit,
		MaxTensorBytes: DefaultMaxTensorBytes,
		MaxTotalBytes:  DefaultMaxTotalBytes,
	}
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

	// tensor, param
	Name    string // tensor, param, read
	Shape   []int
	Init    Init
	Seed    int64
	HasSeed bool
	Values  []float64
	Device  int

	// call
	Args []string
	// Out binds a call's results; nil when the record has no "out".
	Out []string

	// eager: the statement it runs (its Out is the name it binds).
	Stmt *Stmt

	// del
	Names []string

	// note
	Text string

	// expect
	Expect *Expect
}

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
}

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
