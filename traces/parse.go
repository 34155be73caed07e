package traces

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/cgtviz/cgtviz/traces/ops"
	gojson "github.com/goccy/go-json"
)

// rawRecord is the union of every record's fields, as decoded. Fields whose
// type depends on the op ("out", "values") or that may be null on purpose
// ("error") stay raw.
type rawRecord struct {
	Op      *string           `json:"op"`
	Fn      *string           `json:"fn"`
	Params  []string          `json:"params"`
	Body    []json.RawMessage `json:"body"`
	Returns []string          `json:"returns"`
	Mode    *string           `json:"mode"`
	Static  []int             `json:"static"`
	Graph   *string           `json:"graph"`
	Name    *string           `json:"name"`
	Shape   []int             `json:"shape"`
	Init    *string           `json:"init"`
	Seed    *int64            `json:"seed"`
	Values  json.RawMessage   `json:"values"`
	Device  *int              `json:"device"`
	Args    []string          `json:"args"`
	Out     json.RawMessage   `json:"out"`
	Names   []string          `json:"names"`
	Text    *string           `json:"text"`
	DType   *string           `json:"dtype"`
	Of      *string           `json:"of"`
	// Invocation is call's; Offset and Strides are an eager view's.
	Invocation *int64  `json:"invocation"`
	Offset     *int64  `json:"offset"`
	Strides    []int64 `json:"strides"`

	K     *string         `json:"k"`
	A     *string         `json:"a"`
	B     json.RawMessage `json:"b"`
	Value *float64        `json:"value"`

	Action      *string         `json:"action"`
	Node        json.RawMessage `json:"node"`
	Nodes       *int            `json:"nodes"`
	Roots       *int            `json:"roots"`
	Checkpoints *int            `json:"checkpoints"`
	Recordings  *int            `json:"recordings"`
	Replays     *int            `json:"replays"`
	Warmups     *int            `json:"warmups"`
	LiveBlocks  *int            `json:"live_blocks"`
	Error       json.RawMessage `json:"error"`
	// Src is def's, tensor's, param's, call's, read's and empty_cache's (source.go).
	Src json.RawMessage `json:"src"`
}

type rawStmt struct {
	Out     *string         `json:"out"`
	K       *string         `json:"k"`
	A       *string         `json:"a"`
	B       json.RawMessage `json:"b"`
	Shape   []int           `json:"shape"`
	Strides []int64         `json:"strides"`
	Offset  *int64          `json:"offset"`
	Value   *float64        `json:"value"`
	DType   *string         `json:"dtype"`
}

// rawConfig is the header's "config" object, and the keys of a config
// record.
type rawConfig struct {
	WarmupRuns             *int   `json:"warmup_runs"`
	RerecordLimit          *int   `json:"rerecord_limit"`
	MaxTensorBytes         *int64 `json:"max_tensor_bytes"`
	MaxTotalBytes          *int64 `json:"max_total_bytes"`
	RecompileLimit         *int   `json:"recompile_limit"`
	AutomaticDynamicShapes *bool  `json:"automatic_dynamic_shapes"`
	AssumeStaticByDefault  *bool  `json:"assume_static_by_default"`
	SupportInputMutation   *bool  `json:"support_input_mutation"`
	SkipDynamicGraphs      *bool  `json:"skip_dynamic_graphs"`
	DynamicShapeWarnLimit  *int   `json:"dynamic_shape_warn_limit"`
	InlineInbuiltNNModules *bool  `json:"inline_inbuilt_nn_modules"`
	CudagraphOrError       *bool  `json:"cudagraph_or_error"`
}

// rawConfigRecord is a config record decoded strictly: "op" and config keys.
type rawConfigRecord struct {
	Op *string `json:"op"`
	rawConfig
}

// apply sets the keys present in c on dst and returns which were set, or a
// message for the first value out of range.
func (c *rawConfig) apply(dst *Config) (map[string]bool, string) {
	set := map[string]bool{}
	ints := []struct {
		key string
		v   *int
		dst *int
	}{
		{KeyWarmupRuns, c.WarmupRuns, &dst.WarmupRuns},
		{KeyRerecordLimit, c.RerecordLimit, &dst.RerecordLimit},
		{KeyRecompileLimit, c.RecompileLimit, &dst.RecompileLimit},
		{KeyDynamicShapeWarnLimit, c.DynamicShapeWarnLimit, &dst.DynamicShapeWarnLimit},
	}
	for _, x := range ints {
		if x.v == nil {
			continue
		}
		if *x.v < 0 {
			return nil, fmt.Sprintf("%s is %d, want 0 or more", x.key, *x.v)
		}
		*x.dst = *x.v
		set[x.key] = true
	}
	for _, x := range []struct {
		key string
		v   *int64
		dst *int64
	}{{KeyMaxTensorBytes, c.MaxTensorBytes, &dst.MaxTensorBytes}, {KeyMaxTotalBytes, c.MaxTotalBytes, &dst.MaxTotalBytes}} {
		if x.v == nil {
			continue
		}
		if *x.v < 1 {
			return nil, fmt.Sprintf("%s is %d, want 1 or more", x.key, *x.v)
		}
		*x.dst = *x.v
		set[x.key] = true
	}
	for _, x := range []struct {
		key string
		v   *bool
		dst *bool
	}{
		{KeyAutomaticDynamicShapes, c.AutomaticDynamicShapes, &dst.AutomaticDynamicShapes},
		{KeyAssumeStaticByDefault, c.AssumeStaticByDefault, &dst.AssumeStaticByDefault},
		{KeySupportInputMutation, c.SupportInputMutation, &dst.SupportInputMutation},
		{KeySkipDynamicGraphs, c.SkipDynamicGraphs, &dst.SkipDynamicGraphs},
		{KeyInlineInbuiltNNModules, c.InlineInbuiltNNModules, &dst.InlineInbuiltNNModules},
		{KeyCudagraphOrError, c.CudagraphOrError, &dst.CudagraphOrError},
	} {
		if x.v != nil {
			*x.dst = *x.v
			set[x.key] = true
		}
	}
	return set, ""
}

type rawNode struct {
	Fn       *string         `json:"fn"`
	ParentFn json.RawMessage `json:"parent_fn"`
}

type rawValues struct {
	Name   *string   `json:"name"`
	Values []float64 `json:"values"`
	Tol    *float64  `json:"tol"`
}

// opFields lists, per op, the fields it may have (besides "op") and which
// of them are required, in the spec's order (the writer's order too).
var opFields = map[Op]struct{ allowed, required []string }{
	OpDef:             {[]string{"fn", "params", "body", "returns", "mode", "static", "graph", "src"}, []string{"fn", "params", "body", "returns"}},
	OpTensor:          {[]string{"name", "shape", "dtype", "init", "seed", "values", "device", "src"}, []string{"name", "shape", "init"}},
	OpParam:           {[]string{"name", "shape", "dtype", "init", "seed", "values", "device", "src"}, []string{"name", "shape", "init"}},
	OpCall:            {[]string{"fn", "args", "out", "invocation", "src"}, []string{"fn", "args"}},
	OpEager:           {[]string{"out", "k", "a", "b", "shape", "strides", "offset", "value", "dtype"}, []string{"out", "k"}},
	OpDel:             {[]string{"names"}, []string{"names"}},
	OpStep:            {nil, nil},
	OpRead:            {[]string{"name", "src"}, []string{"name"}},
	OpExpect:          {[]string{"action", "node", "nodes", "roots", "checkpoints", "recordings", "replays", "warmups", "live_blocks", "error", "values", "device"}, nil},
	OpNote:            {[]string{"text"}, []string{"text"}},
	OpConfig:          {ConfigKeys, nil},
	OpReset:           {[]string{"device"}, nil},
	OpSkippedBackward: {[]string{"device"}, nil},
	OpEmptyCache:      {[]string{"src"}, nil},
	OpSaved:           {[]string{"name", "of"}, []string{"name", "of"}},
}

// opNames is the ops in the spec's order, for messages.
const opNames = "def, tensor, param, call, eager, del, step, read, expect, note, config, reset, skipped_backward, saved, empty_cache"

// parseRecord decodes and validates one record line. On a problem it
// returns what it could decode.
func (r *Reader) parseRecord(line []byte) (Record, *Problem) {
	// The reader's one rawRecord is reused: decoding into a local would
	// allocate it on the heap for every record. Decoded values it points
	// to are allocated by encoding/json, so records keep them safely.
	r.raw = rawRecord{}
	raw := &r.raw
	keys, te, p := r.prepare(line, raw)
	if p != nil {
		return Record{}, p
	}
	if te != nil && te.Field == "op" {
		return Record{}, r.problem(r.line, typeMsg(te))
	}
	if raw.Op == nil {
		return Record{}, r.problem(r.line, `record has no "op" (ops: `+opNames+")")
	}
	rec := Record{Op: Op(*raw.Op)}
	spec, ok := opFields[rec.Op]
	if !ok {
		return Record{}, r.problem(r.line, fmt.Sprintf("unknown op %q (ops: %s)", *raw.Op, opNames))
	}
	// What names the record in messages, when it is usable.
	switch {
	case raw.Fn != nil && validName(*raw.Fn) == "":
		rec.Fn = *raw.Fn
	case raw.Name != nil && validName(*raw.Name) == "":
		rec.Name = *raw.Name
	}
	if rec.Op == OpEager && len(raw.Out) > 0 {
		var out string
		if unmarshal(raw.Out, &out) == nil && validName(out) == "" {
			rec.Stmt = &Stmt{Out: out}
		}
	}
	fail := func(format string, args ...any) (Record, *Problem) {
		return rec, r.problem(r.line, recordLabel(rec)+": "+fmt.Sprintf(format, args...))
	}
	for _, k := range keys {
		if k != "op" && !slices.Contains(spec.allowed, k) {
			if len(spec.allowed) == 0 {
				return fail("unknown field %q (%s has no fields)", k, rec.Op)
			}
			return fail("unknown field %q (%s fields: %s)", k, rec.Op, strings.Join(spec.allowed, ", "))
		}
	}
	if te != nil {
		return fail("%s", typeMsg(te))
	}
	for _, k := range spec.required {
		if !slices.Contains(keys, k) {
			return fail("missing %q", k)
		}
		if requiredNull(raw, k) {
			return fail("field %q: want a string, got null", k)
		}
	}
	var msg string
	switch rec.Op {
	case OpDef:
		msg = r.parseDef(&rec, raw)
	case OpTensor, OpParam:
		msg = r.parseTensor(&rec, raw)
	case OpCall:
		msg = r.parseCall(&rec, raw)
	case OpEager:
		var s Stmt
		s, msg = r.parseStmt(rawStmt{Out: strPtrFromRaw(raw.Out), K: raw.K, A: raw.A, B: raw.B, Shape: raw.Shape,
			Strides: raw.Strides, Offset: raw.Offset, Value: raw.Value, DType: raw.DType}, raw.Out)
		if msg == "" || (ops.IsStmt(s.K) && validName(s.Out) == "") {
			rec.Stmt = &s
		}
	case OpDel:
		if len(raw.Names) == 0 {
			msg = "names is empty (del needs at least one name)"
		}
		msg = firstMsg(msg, checkNames("names", raw.Names))
		rec.Names = raw.Names
	case OpRead:
		msg = nameMsg("name", *raw.Name)
		rec.Name = *raw.Name
	case OpSaved:
		msg = firstMsg(nameMsg("name", *raw.Name), nameMsg("of", *raw.Of))
		rec.Name, rec.Of = *raw.Name, *raw.Of
	case OpNote:
		rec.Text = *raw.Text
	case OpExpect:
		msg = r.parseExpect(&rec, raw)
	case OpConfig:
		msg = r.parseConfigRecord(&rec, line, len(keys))
	case OpSkippedBackward:
		if raw.Device != nil {
			rec.Device = *raw.Device
			msg = r.deviceMsg(rec.Device)
		}
	case OpReset:
		if raw.Device != nil {
			rec.Device, rec.OneDevice = *raw.Device, true
			msg = r.deviceMsg(rec.Device)
		}
	}
	if msg == "" && len(raw.Src) > 0 && !isNull(raw.Src) {
		rec.Src, msg = parseSource(raw.Src)
	}
	if msg != "" {
		return fail("%s", msg)
	}
	return rec, nil
}

// requiredNull reports whether the required string field k is present but
// null: the parsers dereference required fields, so null is refused first.
func requiredNull(raw *rawRecord, k string) bool {
	switch k {
	case "fn":
		return raw.Fn == nil
	case "name":
		return raw.Name == nil
	case "init":
		return raw.Init == nil
	case "text":
		return raw.Text == nil
	case "of":
		return raw.Of == nil
	case "k":
		return raw.K == nil
	}
	return false
}

func strPtrFromRaw(raw json.RawMessage) *string {
	if len(raw) == 0 || isNull(raw) {
		return nil
	}
	var s string
	if unmarshal(raw, &s) != nil {
		return nil
	}
	return &s
}

func firstMsg(msgs ...string) string {
	for _, m := range msgs {
		if m != "" {
			return m
		}
	}
	return ""
}

// recordLabel names a record in messages: "def foo", "tensor x", "eager c", "step".
func recordLabel(rec Record) string {
	switch rec.Op {
	case OpDef, OpCall:
		if validName(rec.Fn) == "" {
			return string(rec.Op) + " " + rec.Fn
		}
	case OpTensor, OpParam, OpRead, OpSaved:
		if validName(rec.Name) == "" {
			return string(rec.Op) + " " + rec.Name
		}
	case OpEager:
		if rec.Stmt != nil && ops.IsStmt(rec.Stmt.K) {
			return "eager (" + stmtText(*rec.Stmt) + ")"
		}
		if rec.Stmt != nil && validName(rec.Stmt.Out) == "" {
			return "eager " + rec.Stmt.Out
		}
	}
	if rec.Op == "" {
		return "record"
	}
	return string(rec.Op)
}

// validName returns why s is not a valid name, or "".
func validName(s string) string {
	if s == "" {
		return "is empty"
	}
	if len(s) > MaxNameLen {
		return fmt.Sprintf("is %d bytes long, over %d (MaxNameLen)", len(s), MaxNameLen)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-') {
			return "is not a valid name (use letters, digits, _, . and -)"
		}
	}
	return ""
}

func nameMsg(field, s string) string {
	if why := validName(s); why != "" {
		return fmt.Sprintf("%s %s %s", field, quoteShort(s), why)
	}
	return ""
}

func checkNames(field string, names []string) string {
	for _, n := range names {
		if m := nameMsg(field, n); m != "" {
			return m
		}
	}
	return ""
}

// quoteShort quotes s for a message, cut to 40 bytes so a hostile name
// cannot flood the output.
func quoteShort(s string) string {
	if len(s) > 40 {
		cut := 40
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		return fmt.Sprintf("%q…", s[:cut])
	}
	return fmt.Sprintf("%q", s)
}

// shapeMsg returns why shape, of elements of elem bytes, is not a valid
// tensor shape under the byte limit, or "". It never multiplies past the
// limit, so a shape like [1<<40, 1<<40] is refused without overflow.
func shapeMsg(what string, shape []int, elem int, maxBytes int64) string {
	if len(shape) > MaxDims {
		return fmt.Sprintf("%s %s has %d dims, over %d", what, ops.FormatShape(shape), len(shape), MaxDims)
	}
	for _, d := range shape {
		if d < 0 {
			return fmt.Sprintf("%s %s has a negative size", what, ops.FormatShape(shape))
		}
	}
	if _, ok := shapeBytes(shape, elem, maxBytes); !ok {
		return fmt.Sprintf("%s %s is over max_tensor_bytes (%s)", what, ops.FormatShape(shape), formatBytes(maxBytes))
	}
	return ""
}

// shapeBytes returns the bytes of a tensor of this shape, of elements of
// elem bytes, and false when that is over maxBytes. Sizes must be
// non-negative.
func shapeBytes(shape []int, elem int, maxBytes int64) (int64, bool) {
	for _, d := range shape {
		if d == 0 {
			return 0, true
		}
	}
	maxElems := maxBytes / int64(elem)
	n := int64(1)
	for _, d := range shape {
		if int64(d) > maxElems/n {
			return 0, false
		}
		n *= int64(d)
	}
	return n * int64(elem), true
}

func (r *Reader) parseDef(rec *Record, raw *rawRecord) string {
	rec.Fn = *raw.Fn
	rec.Params, rec.Returns = raw.Params, raw.Returns
	if raw.Params == nil {
		rec.Params = []string{}
	}
	if raw.Returns == nil {
		rec.Returns = []string{}
	}
	if m := firstMsg(nameMsg("fn", rec.Fn), checkNames("param", raw.Params), checkNames("returns", raw.Returns)); m != "" {
		return m
	}
	seen := make(map[string]bool, len(rec.Params))
	for _, p := range rec.Params {
		if seen[p] {
			return fmt.Sprintf("param %s is repeated", p)
		}
		seen[p] = true
	}
	if raw.Mode != nil {
		switch m := Mode(*raw.Mode); m {
		case ModeInference, ModeForward, ModeBackward:
			rec.Mode = m
		default:
			return fmt.Sprintf("mode %q is not one of inference, forward, backward", *raw.Mode)
		}
	}
	if raw.Static != nil {
		for i, k := range raw.Static {
			if k < 0 || k >= len(rec.Params) {
				return fmt.Sprintf("static %d is not a param's position (0 to %d)", k, len(rec.Params)-1)
			}
			if i > 0 && k <= raw.Static[i-1] {
				return "static must list positions in increasing order, each once"
			}
		}
		rec.Static = raw.Static
	}
	if raw.Graph != nil {
		if *raw.Graph == "" || *raw.Graph == rec.Fn {
			return "graph must name another def (the first size of the compiled graph this def is a size of)"
		}
		rec.Graph = *raw.Graph
	}
	rec.Body = make([]Stmt, 0, len(raw.Body))
	for i, b := range raw.Body {
		var rs rawStmt
		if !decodeStmtFast(b, &rs) {
			rs = rawStmt{}
			if m := decodeStrict(b, &rs, "body"); m != "" {
				return fmt.Sprintf("statement %d: %s", i+1, m)
			}
		}
		// A strict decode left Out nil for an absent or null "out" and
		// refused any other non-string: parseStmt only needs to know
		// which (no Marshal of the name back to JSON for every statement).
		var outRaw json.RawMessage
		if rs.Out != nil {
			outRaw = presentOut
		}
		s, m := r.parseStmt(rs, outRaw)
		if m != "" {
			return stmtLabel(i, s) + ": " + m
		}
		rec.Body = append(rec.Body, s)
	}
	return ""
}

// decodeStmtFast decodes a body statement with the fast decoder when
// every key of its object is one of rawStmt's, spelled as the format
// spells it, and reports whether it did. decodeStrict's encoding/json
// decoder (a Decoder refusing unknown fields) costs 3.4 us a statement
// where this costs 0.8, which was a third of a def's reading (ten
// thousand defs: issue 14). Anything else (an unknown key, a key with an
// escape, not an object, a value the decoder refuses) is left to
// decodeStrict, whose messages the problems are. Both decoders give the
// same statement for what both accept (FuzzDecoders), and what this
// accepts has no field that decodeStrict would refuse.
func decodeStmtFast(b []byte, rs *rawStmt) bool {
	return stmtKeysKnown(b) && gojson.Unmarshal(b, rs) == nil
}

// stmtKeysKnown reports whether b is an object whose top-level keys are
// all rawStmt's field names, none written with an escape.
func stmtKeysKnown(b []byte) bool {
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	if i >= len(b) || b[i] != '{' {
		return false
	}
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case '"':
			j, esc := i+1, false
			for j < len(b) && b[j] != '"' {
				if b[j] == '\\' {
					esc = true
					j++
				}
				j++
			}
			if j >= len(b) {
				return false
			}
			if depth == 1 && followedByColon(b, j+1) {
				if esc {
					return false
				}
				switch string(b[i+1 : j]) {
				case "out", "k", "a", "b", "shape", "strides", "offset", "value", "dtype":
				default:
					return false
				}
			}
			i = j
		}
	}
	return true
}

// presentOut stands for the raw "out" of a body statement whose "out" is a
// string.
var presentOut = json.RawMessage(`""`)

// parseStmt validates one statement's fields. outRaw is the raw "out", so
// a wrong type is reported as such.
func (r *Reader) parseStmt(rs rawStmt, outRaw json.RawMessage) (Stmt, string) {
	var s Stmt
	if len(outRaw) == 0 || isNull(outRaw) {
		return s, `missing "out"`
	}
	if rs.Out == nil {
		return s, fmt.Sprintf(`field "out": want a name (a string), got %s`, jsonKind(kindOf(outRaw)))
	}
	s.Out = *rs.Out
	if m := nameMsg("out", s.Out); m != "" {
		return s, m
	}
	if rs.K == nil {
		return s, fmt.Sprintf(`missing "k" (the kernel: %s)`, strings.Join(ops.StmtNames(), ", "))
	}
	s.K = *rs.K
	if !ops.IsStmt(s.K) {
		return s, fmt.Sprintf("unknown kernel %q (kernels: %s)", s.K, strings.Join(ops.StmtNames(), ", "))
	}
	if rs.A != nil {
		s.A = *rs.A
		if m := nameMsg("a", s.A); m != "" {
			return s, m
		}
	}
	if len(rs.B) > 0 && !isNull(rs.B) {
		switch kindOf(rs.B) {
		case "string":
			if unmarshal(rs.B, &s.B.Name) != nil {
				return s, "b is not a valid string"
			}
			if m := nameMsg("b", s.B.Name); m != "" {
				return s, m
			}
		case "number":
			if unmarshal(rs.B, &s.B.Num) != nil {
				return s, fmt.Sprintf("b %s is not a usable number", rs.B)
			}
			s.B.IsNum = true
		default:
			return s, fmt.Sprintf(`field "b": want a name or a number, got %s`, jsonKind(kindOf(rs.B)))
		}
	}
	if rs.Value != nil {
		s.Value, s.HasValue = *rs.Value, true
	}
	// The reader bounds a shape by the statement's own dtype; without one,
	// by float32 (fill's and empty's default; a view's real dtype is its
	// base's, which the checker knows and checks the result with).
	elem := ops.Float32
	s.Shape = rs.Shape // for the statement's label, should the dtype be refused
	if rs.DType != nil {
		d, ok := ops.ParseDType(*rs.DType)
		if !ok || *rs.DType == "" {
			return s, dtypeMsg(*rs.DType)
		}
		s.DType, elem = *rs.DType, d
	}
	if rs.Shape != nil {
		s.Shape = rs.Shape
		if m := shapeMsg("shape", s.Shape, elem.Size(), r.cfg.MaxTensorBytes); m != "" {
			return s, m
		}
	}
	if rs.Strides != nil {
		s.Strides = rs.Strides
		for _, st := range s.Strides {
			if st < 0 {
				return s, fmt.Sprintf("strides %s has a negative stride (PyTorch's as_strided refuses them too)", ops.FormatStrides(s.Strides))
			}
		}
		if rs.Shape != nil && len(s.Strides) != len(s.Shape) {
			return s, fmt.Sprintf("strides %s has %s, but shape %s has %s (give one stride per dim)",
				ops.FormatStrides(s.Strides), plural(len(s.Strides), "stride"), ops.FormatShape(s.Shape), plural(len(s.Shape), "dim"))
		}
	}
	if rs.Offset != nil {
		s.Offset, s.HasOffset = *rs.Offset, true
		if s.Offset < 0 {
			return s, fmt.Sprintf("offset is %d, want 0 or more", s.Offset)
		}
	}
	// Which fields the kind takes.
	var need, allow string // letters: a, b, s(hape), v(alue), t (strides), o(ffset)
	k, _ := ops.Parse(s.K)
	switch {
	case s.K == ops.StmtView && (rs.Strides != nil || rs.Offset != nil):
		// A strided view is as_strided(a, shape, strides, offset): its
		// shape cannot be a's, as the element count may differ.
		need, allow = "as", "asto"
	case s.K == ops.StmtView:
		need, allow = "a", "asto"
	case s.K == ops.StmtEmpty:
		need, allow = "s", "s"
	case k == ops.Fill:
		need, allow = "sv", "sv"
	case k.IsBinary(), k == ops.Matmul:
		need, allow = "ab", "ab"
	default:
		need, allow = "a", "a"
	}
	// In the order "abstov"; arrays rather than the two maps this made
	// for every statement (a def's reading spent a sixth of its time
	// there).
	has := [...]bool{rs.A != nil, s.B.Present(), rs.Shape != nil, rs.Strides != nil, rs.Offset != nil, rs.Value != nil}
	for i, field := range [...]string{"a", "b", "shape", "strides", "offset", "value"} {
		c := "abstov"[i]
		if has[i] && strings.IndexByte(allow, c) < 0 {
			return s, fmt.Sprintf("%s takes no %q", s.K, field)
		}
		if !has[i] && strings.IndexByte(need, c) >= 0 {
			return s, fmt.Sprintf("%s needs %q", s.K, field)
		}
	}
	if k == ops.Matmul && s.B.IsNum {
		return s, "matmul needs b to be a tensor name, not a number"
	}
	return s, ""
}

func dtypeMsg(name string) string {
	return fmt.Sprintf("dtype %s is not one of %s", quoteShort(name), ops.DTypeNames())
}

// parseConfigRecord decodes a config record's keys (line again, strictly,
// since they are not rawRecord's fields) and makes them the config in
// force for the lines after it.
func (r *Reader) parseConfigRecord(rec *Record, line []byte, nkeys int) string {
	noKey := "sets no key (config keys: " + strings.Join(ConfigKeys, ", ") + ")"
	if nkeys <= 1 {
		return noKey
	}
	var raw rawConfigRecord
	if m := decodeStrict(line, &raw, "config"); m != "" {
		return m
	}
	c := Config{}
	set, m := raw.apply(&c)
	if m != "" {
		return m
	}
	if len(set) == 0 { // every key null, which counts as absent
		return noKey
	}
	c.Set = set
	rec.Config = &c
	r.cfg = r.cfg.With(c)
	return ""
}

// stmtLabel names statement i (0-based) of a body in messages:
// "statement 2 (add c = x + y)", or "statement 2" before its kernel is known.
func stmtLabel(i int, s Stmt) string {
	if ops.IsStmt(s.K) {
		return fmt.Sprintf("statement %d (%s)", i+1, stmtText(s))
	}
	return fmt.Sprintf("statement %d", i+1)
}

// stmtText writes a statement as a line of the Python it stands for,
// prefixed with its kernel: "add c = x + y".
func stmtText(s Stmt) string {
	a, b := s.A, s.B.Name
	if s.B.IsNum {
		b = formatNum(s.B.Num)
	}
	if a == "" {
		a = "?"
	}
	if b == "" {
		b = "?"
	}
	var rhs string
	switch s.K {
	case "add", "sub", "mul", "div":
		rhs = fmt.Sprintf("%s %s %s", a, map[string]string{"add": "+", "sub": "-", "mul": "*", "div": "/"}[s.K], b)
	case "matmul":
		rhs = fmt.Sprintf("%s @ %s", a, b)
	case "max", "min":
		rhs = fmt.Sprintf("%s(%s, %s)", s.K, a, b)
	case ops.StmtView:
		switch {
		case s.Strided():
			shape, st := "?", "?"
			switch {
			case s.Strides != nil:
				st = ops.FormatStrides(s.Strides)
			case s.Shape != nil:
				st = ops.FormatStrides(ops.ContiguousStrides(s.Shape))
			}
			if s.Shape != nil {
				shape = ops.FormatShape(s.Shape)
			}
			rhs = fmt.Sprintf("as_strided(%s, %s, %s, %d)", a, shape, st, s.Offset)
		case s.Shape != nil:
			rhs = fmt.Sprintf("view(%s, %s)", a, ops.FormatShape(s.Shape))
		default:
			rhs = fmt.Sprintf("view(%s)", a)
		}
	case "fill":
		rhs = fmt.Sprintf("fill(%s, %s)", ops.FormatShape(s.Shape), formatNum(s.Value))
	case ops.StmtEmpty:
		rhs = fmt.Sprintf("empty(%s)", ops.FormatShape(s.Shape))
	default:
		rhs = fmt.Sprintf("%s(%s)", s.K, a)
	}
	return fmt.Sprintf("%s %s = %s", s.K, s.Out, rhs)
}

func (r *Reader) parseTensor(rec *Record, raw *rawRecord) string {
	rec.Name = *raw.Name
	if m := nameMsg("name", rec.Name); m != "" {
		return m
	}
	rec.Shape = raw.Shape
	dt := ops.Float32
	if raw.DType != nil {
		d, ok := ops.ParseDType(*raw.DType)
		if !ok || *raw.DType == "" {
			return dtypeMsg(*raw.DType)
		}
		rec.DType, dt = *raw.DType, d
	}
	if m := shapeMsg("shape", rec.Shape, dt.Size(), r.cfg.MaxTensorBytes); m != "" {
		return m
	}
	if raw.Device != nil {
		rec.Device = *raw.Device
		if m := r.deviceMsg(rec.Device); m != "" {
			return m
		}
	}
	rec.Init = Init(*raw.Init)
	switch rec.Init {
	case InitRand, InitZeros, InitOnes, InitArange, InitValues:
	default:
		return fmt.Sprintf("init %q is not one of rand, zeros, ones, arange, values", *raw.Init)
	}
	if raw.Seed != nil {
		if rec.Init != InitRand {
			return fmt.Sprintf("seed is for init \"rand\", but init is %q", rec.Init)
		}
		rec.Seed, rec.HasSeed = *raw.Seed, true
	}
	hasValues := len(raw.Values) > 0 && !isNull(raw.Values)
	if hasValues {
		if rec.Init != InitValues {
			return fmt.Sprintf("values are for init \"values\", but init is %q", rec.Init)
		}
		// Decoded into a local, as "out" below: rec's address handed to
		// the decoder (an interface) moved every record parsed to the
		// heap, 416 bytes a new line.
		var vals []float64
		m := decodeStrict(raw.Values, &vals, "values")
		rec.Values = vals
		if m != "" {
			return m
		}
		if rec.Values == nil {
			rec.Values = []float64{}
		}
	}
	if rec.Init == InitValues && !dt.ComputesValues() {
		return fmt.Sprintf("init values is for float32 tensors: values of %s are not modelled (the kernels compute float32; use rand, zeros, ones or arange)", dt)
	}
	if rec.Init == InitValues {
		n := NumElems(rec.Shape) // bounded: the shape passed the byte limit
		if int64(len(rec.Values)) != n {
			return fmt.Sprintf("init values needs %d values (one per element of %s), got %d", n, ops.FormatShape(rec.Shape), len(rec.Values))
		}
	}
	return ""
}

func (r *Reader) deviceMsg(d int) string {
	if d < 0 || d >= r.hdr.Devices {
		if r.hdr.Devices == 1 {
			return fmt.Sprintf("device %d is out of range (the header has 1 device: use 0, or set \"devices\")", d)
		}
		return fmt.Sprintf("device %d is out of range (the header has %d devices: 0 to %d)", d, r.hdr.Devices, r.hdr.Devices-1)
	}
	return ""
}

func (r *Reader) parseCall(rec *Record, raw *rawRecord) string {
	rec.Fn = *raw.Fn
	rec.Args = raw.Args
	if rec.Args == nil {
		rec.Args = []string{}
	}
	if len(raw.Out) > 0 && !isNull(raw.Out) {
		var out []string
		if kindOf(raw.Out) != "array" || unmarshal(raw.Out, &out) != nil {
			rec.Out = nil
			return fmt.Sprintf(`field "out": want a list of names, got %s`, jsonKind(kindOf(raw.Out)))
		}
		rec.Out = out
		if rec.Out == nil {
			rec.Out = []string{}
		}
	}
	if raw.Invocation != nil {
		if *raw.Invocation < 0 {
			return fmt.Sprintf("invocation is %d, want 0 or more", *raw.Invocation)
		}
		rec.Invocation = raw.Invocation
	}
	return firstMsg(nameMsg("fn", rec.Fn), checkNames("arg", raw.Args), checkNames("out", rec.Out))
}

func (r *Reader) parseExpect(rec *Record, raw *rawRecord) string {
	e := &Expect{}
	rec.Expect = e
	if raw.Action != nil {
		switch *raw.Action {
		case ActionWarmup, ActionRecord, ActionReplay, ActionEager:
			e.Action = raw.Action
		default:
			return fmt.Sprintf("action %q is not one of warmup, record, replay, eager", *raw.Action)
		}
	}
	if len(raw.Node) > 0 && !isNull(raw.Node) {
		var n rawNode
		if m := decodeStrict(raw.Node, &n, "node"); m != "" {
			return "node: " + m
		}
		e.Node = &ExpectNode{Fn: n.Fn}
		if n.Fn != nil {
			if m := nameMsg("node fn", *n.Fn); m != "" {
				return m
			}
		}
		if len(n.ParentFn) > 0 {
			e.Node.HasParentFn = true
			if !isNull(n.ParentFn) {
				var p string
				if kindOf(n.ParentFn) != "string" || unmarshal(n.ParentFn, &p) != nil {
					return fmt.Sprintf(`node: field "parent_fn": want a name or null, got %s`, jsonKind(kindOf(n.ParentFn)))
				}
				if m := nameMsg("node parent_fn", p); m != "" {
					return m
				}
				e.Node.ParentFn = &p
			}
		}
	}
	counts := []struct {
		name string
		v    *int
		dst  **int
	}{
		{"nodes", raw.Nodes, &e.Nodes}, {"roots", raw.Roots, &e.Roots}, {"checkpoints", raw.Checkpoints, &e.Checkpoints},
		{"recordings", raw.Recordings, &e.Recordings}, {"replays", raw.Replays, &e.Replays},
		{"warmups", raw.Warmups, &e.Warmups}, {"live_blocks", raw.LiveBlocks, &e.LiveBlocks},
	}
	for _, c := range counts {
		if c.v != nil {
			if *c.v < 0 {
				return fmt.Sprintf("%s is %d, want 0 or more", c.name, *c.v)
			}
			*c.dst = c.v
		}
	}
	if len(raw.Error) > 0 {
		e.HasError = true
		if !isNull(raw.Error) {
			var s string
			if kindOf(raw.Error) != "string" || unmarshal(raw.Error, &s) != nil {
				return fmt.Sprintf(`field "error": want a string or null, got %s`, jsonKind(kindOf(raw.Error)))
			}
			e.Error = &s
		}
	}
	if len(raw.Values) > 0 && !isNull(raw.Values) {
		var v rawValues
		if m := decodeStrict(raw.Values, &v, "values"); m != "" {
			return "values: " + m
		}
		if v.Name == nil {
			return `values: missing "name"`
		}
		if v.Values == nil {
			return `values: missing "values"`
		}
		if m := nameMsg("values name", *v.Name); m != "" {
			return m
		}
		e.Values = &ExpectValues{Name: *v.Name, Values: v.Values}
		if v.Tol != nil {
			if *v.Tol < 0 {
				return fmt.Sprintf("values: tol is %s, want 0 or more", formatNum(*v.Tol))
			}
			e.Values.Tol, e.Values.HasTol = *v.Tol, true
		}
	}
	if raw.Device != nil {
		e.Device = *raw.Device
		if m := r.deviceMsg(e.Device); m != "" {
			return m
		}
	}
	return ""
}
