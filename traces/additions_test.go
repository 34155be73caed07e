package traces

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Tests of the additions to version 1 (issue 13): invocations, dtypes,
// strided views, 8 dims, config records and the new config keys.

// TestReaderAdditions checks that each new field decodes into the Go
// fields the engine reads, and that absent fields leave them zero.
func TestReaderAdditions(t *testing.T) {
	trace := `{"cgtviz": 1, "config": {"recompile_limit": 2, "support_input_mutation": false}}
{"op": "tensor", "name": "x", "shape": [2, 3], "dtype": "float16", "init": "zeros"}
{"op": "call", "fn": "f", "args": ["x"], "invocation": 7}
{"op": "call", "fn": "f", "args": ["x"]}
{"op": "eager", "out": "v", "k": "view", "a": "x", "shape": [2], "strides": [3], "offset": 2}
{"op": "eager", "out": "w", "k": "view", "a": "x", "shape": [6], "offset": 0}
{"op": "eager", "out": "i", "k": "empty", "shape": [1, 1, 1, 1, 1, 1, 1, 2], "dtype": "int64"}
{"op": "config", "warmup_runs": 0, "automatic_dynamic_shapes": false}
{"op": "reset"}
{"op": "reset", "device": 0}
{"op": "skipped_backward"}
{"op": "def", "fn": "b", "params": ["s", "g"], "body": [], "returns": ["s"], "mode": "backward", "static": [0]}
{"op": "saved", "name": "s", "of": "out3"}
{"op": "def", "fn": "b2", "params": ["s", "g"], "body": [], "returns": ["s"], "mode": "backward", "graph": "b"}
{"op": "empty_cache"}
{"op": "empty_cache", "src": {"file": "/opt/torch/cuda/graphs.py", "line": 187, "fn": "__enter__"}}
`
	rd, err := NewReader(strings.NewReader(trace), "t")
	if err != nil {
		t.Fatal(err)
	}
	wantCfg := DefaultConfig()
	wantCfg.RecompileLimit, wantCfg.SupportInputMutation = 2, false
	wantCfg.Set = map[string]bool{KeyRecompileLimit: true, KeySupportInputMutation: true}
	if h := rd.Header(); !reflect.DeepEqual(h.Config, wantCfg) {
		t.Errorf("header config\n got %+v\nwant %+v", h.Config, wantCfg)
	}
	inv := int64(7)
	want := []Record{
		{Line: 2, Op: OpTensor, Name: "x", Shape: []int{2, 3}, DType: "float16", Init: InitZeros},
		{Line: 3, Op: OpCall, Fn: "f", Args: []string{"x"}, Invocation: &inv},
		{Line: 4, Op: OpCall, Fn: "f", Args: []string{"x"}},
		{Line: 5, Op: OpEager, Stmt: &Stmt{Out: "v", K: "view", A: "x", Shape: []int{2}, Strides: []int64{3}, Offset: 2, HasOffset: true}},
		{Line: 6, Op: OpEager, Stmt: &Stmt{Out: "w", K: "view", A: "x", Shape: []int{6}, HasOffset: true}},
		{Line: 7, Op: OpEager, Stmt: &Stmt{Out: "i", K: "empty", Shape: []int{1, 1, 1, 1, 1, 1, 1, 2}, DType: "int64"}},
		{Line: 8, Op: OpConfig, Config: &Config{WarmupRuns: 0, AutomaticDynamicShapes: false,
			Set: map[string]bool{KeyWarmupRuns: true, KeyAutomaticDynamicShapes: true}}},
		{Line: 9, Op: OpReset},
		{Line: 10, Op: OpReset, Device: 0, OneDevice: true},
		{Line: 11, Op: OpSkippedBackward},
		{Line: 12, Op: OpDef, Fn: "b", Params: []string{"s", "g"}, Body: []Stmt{}, Returns: []string{"s"}, Mode: ModeBackward, Static: []int{0}},
		{Line: 13, Op: OpSaved, Name: "s", Of: "out3"},
		{Line: 14, Op: OpDef, Fn: "b2", Params: []string{"s", "g"}, Body: []Stmt{}, Returns: []string{"s"}, Mode: ModeBackward, Graph: "b"},
		{Line: 15, Op: OpEmptyCache},
		{Line: 16, Op: OpEmptyCache, Src: &Source{File: "/opt/torch/cuda/graphs.py", Line: 187, Fn: "__enter__"}},
	}
	for i, w := range want {
		got, err := rd.Next()
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if !reflect.DeepEqual(sansKey(got), w) {
			t.Errorf("record %d:\n got %#v\nwant %#v", i, got, w)
		}
	}
	if _, err := rd.Next(); err != io.EOF {
		t.Errorf("after the last record: %v, want io.EOF", err)
	}
}

// TestConfigWith checks that a config record changes only the keys it
// sets, from the config in force.
func TestConfigWith(t *testing.T) {
	base := DefaultConfig()
	base.Set = map[string]bool{KeyWarmupRuns: true}
	delta := Config{RecompileLimit: 1, SupportInputMutation: false, WarmupRuns: 99,
		Set: map[string]bool{KeyRecompileLimit: true, KeySupportInputMutation: true, KeyRerecordLimit: false}}
	got := base.With(delta)
	want := DefaultConfig()
	want.RecompileLimit, want.SupportInputMutation = 1, false
	want.Set = map[string]bool{KeyWarmupRuns: true, KeyRecompileLimit: true, KeySupportInputMutation: true}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("With\n got %+v\nwant %+v", got, want)
	}
	if base.RecompileLimit != DefaultRecompileLimit || len(base.Set) != 1 {
		t.Errorf("With changed its receiver: %+v", base)
	}
	// Every key With knows is a key the writer and reader know.
	for _, k := range ConfigKeys {
		c := Config{}.With(Config{Set: map[string]bool{k: true}, WarmupRuns: 1, RerecordLimit: 1, MaxTensorBytes: 1, MaxTotalBytes: 1,
			RecompileLimit: 1, AutomaticDynamicShapes: true, AssumeStaticByDefault: true, SupportInputMutation: true,
			SkipDynamicGraphs: true, DynamicShapeWarnLimit: 1, InlineInbuiltNNModules: true, CudagraphOrError: true})
		if reflect.DeepEqual(c, Config{Set: map[string]bool{k: true}}) {
			t.Errorf("With ignores key %s", k)
		}
	}
}

// TestWriteHeaderConfig checks which config keys the writer writes: those
// set or changed, never the defaults of an unset key, and nothing new for
// a Config that was never filled in (as version 1 did).
func TestWriteHeaderConfig(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"default", DefaultConfig(), `{"cgtviz": 1}`},
		{"zero value", Config{}, `{"cgtviz": 1, "config": {"warmup_runs": 0, "rerecord_limit": 0}}`},
		{"changed bool", func() Config { c := DefaultConfig(); c.AssumeStaticByDefault = false; return c }(),
			`{"cgtviz": 1, "config": {"assume_static_by_default": false}}`},
		{"set default", func() Config { c := DefaultConfig(); c.Set = map[string]bool{KeyRecompileLimit: true}; return c }(),
			`{"cgtviz": 1, "config": {"recompile_limit": 8}}`},
	}
	for _, c := range cases {
		var buf bytes.Buffer
		if err := Write(&buf, Header{Version: Version, Devices: 1, Config: c.cfg}, nil); err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSuffix(buf.String(), "\n"); got != c.want {
			t.Errorf("%s: got %s, want %s", c.name, got, c.want)
		}
	}
	var buf bytes.Buffer
	if err := Write(&buf, Header{Version: Version, Devices: 1, Config: DefaultConfig()}, []Record{{Op: OpConfig, Config: &Config{}}}); err == nil {
		t.Error("a config record with no key was written")
	}
}

// newKeys are the field names the additions brought; an old trace's
// canonical form must have none.
var newKeys = []string{`"dtype"`, `"invocation"`, `"strides"`, `"offset"`, `"op": "config"`,
	`"recompile_limit"`, `"automatic_dynamic_shapes"`, `"assume_static_by_default"`, `"support_input_mutation"`,
	`"skip_dynamic_graphs"`, `"dynamic_shape_warn_limit"`, `"static"`, `"op": "saved"`, `"graph"`}

// TestWriteOldTracesUnchanged checks that traces written before the
// additions format exactly as they did: each testdata/v1 trace (copies of
// examples, canonical or not) against the output of `cgtviz fmt` built
// from the commit before the additions (0470041). These goldens are that
// binary's output, so -update does not rewrite them: a difference is a
// change in what fmt does to old traces.
func TestWriteOldTracesUnchanged(t *testing.T) {
	files, _ := filepath.Glob("testdata/v1/*.cgt.jsonl")
	if len(files) == 0 {
		t.Fatal("no v1 traces in testdata/v1")
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			want, err := os.ReadFile(strings.TrimSuffix(path, ".cgt.jsonl") + ".fmt.golden")
			if err != nil {
				t.Fatal(err)
			}
			tr, err := ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := tr.Write(&out); err != nil {
				t.Fatal(err)
			}
			if out.String() != string(want) {
				t.Errorf("fmt of an old trace changed:\n--- got\n%s--- want (fmt before the additions)\n%s", out.String(), want)
			}
			if hasAny(out.String(), newKeys) {
				t.Errorf("the canonical form of an old trace has a new key:\n%s", out.String())
			}
		})
	}
}

func hasAny(s string, keys []string) bool {
	for _, k := range keys {
		if strings.Contains(s, k) {
			return true
		}
	}
	return false
}

// TestBuilderAdditions checks the helpers for the new fields: they make
// the records the reader would, and the trace checks clean.
func TestBuilderAdditions(t *testing.T) {
	tr := NewBuilder("additions").
		Config(func(c *Config) { c.RecompileLimit = 3; c.AutomaticDynamicShapes = false }).
		Def("head", []string{"x"}, []string{"y"}, S("y", "relu", "x", nil)).
		Def("tail", []string{"y"}, []string{"z"}, SStrided("l", "y", []int{2}, []int64{3}, 2), S("z", "mul", "l", 2)).
		Def("half", []string{"h"}, []string{"s"}, S("s", "sum", "h", nil).As("float32")).
		Tensor("x", []int{2, 3}, InitZeros).
		InInvocation(4).Call("head", []string{"x"}, "y").
		InInvocation(4).Call("tail", []string{"y"}, "z").
		Call("head", []string{"x"}, "y").
		OfDType("float16").Tensor("h", []int{4}, InitOnes).
		Tensor("f", []int{4}, InitOnes).
		Call("half", []string{"h"}, "s").
		SetConfig([]string{KeyWarmupRuns, KeySupportInputMutation}, func(c *Config) { c.WarmupRuns = 0; c.SupportInputMutation = false }).
		Eager(SShape("e", "empty", "", []int{1, 1, 1, 1, 1, 1, 1, 3}).As("int8")).
		EmptyCache().
		Trace()
	if ps := tr.Check(); len(ps) > 0 {
		t.Fatalf("built trace has problems:\n%s", Problems(ps).Error())
	}
	r := tr.Records
	if r[4].Invocation == nil || *r[4].Invocation != 4 || r[5].Invocation == nil || r[6].Invocation != nil {
		t.Errorf("InInvocation must apply to the next call only: %v %v %v", r[4].Invocation, r[5].Invocation, r[6].Invocation)
	}
	if r[7].DType != "float16" || r[8].DType != "" {
		t.Errorf("OfDType must apply to the next tensor only: %q %q", r[7].DType, r[8].DType)
	}
	c := r[10].Config
	if c == nil || !c.Set[KeyWarmupRuns] || !c.Set[KeySupportInputMutation] || len(c.Set) != 2 || c.SupportInputMutation {
		t.Errorf("SetConfig record: %+v", c)
	}
	if !tr.Header.Config.Set[KeyRecompileLimit] || !tr.Header.Config.Set[KeyAutomaticDynamicShapes] || tr.Header.Config.Set[KeyAssumeStaticByDefault] {
		t.Errorf("Config must mark exactly the changed keys: %v", tr.Header.Config.Set)
	}
	roundTrip(t, "additions", tr.Header, tr.Records)
}

// TestCheckConfigInForce checks that a config record's limits apply from
// that record on, in the checker as in the reader, and that a function
// checked under one limit is checked again under another.
func TestCheckConfigInForce(t *testing.T) {
	tr := NewBuilder("limits").
		Def("dbl", []string{"x"}, []string{"y"}, SShape("y", "empty", "", []int{64})).
		Tensor("x", []int{4}, InitZeros).
		Call("dbl", []string{"x"}, "y").
		SetConfig([]string{KeyMaxTensorBytes}, func(c *Config) { c.MaxTensorBytes = 128 }).
		Call("dbl", []string{"x"}, "y2").
		Trace()
	ps := tr.Check()
	if len(ps) != 1 || ps[0].Line != 6 || !strings.Contains(ps[0].Msg, "over max_tensor_bytes (128 bytes)") {
		t.Fatalf("want one problem at line 6 for the new limit, got %v", ps)
	}
}

func TestConfigSetText(t *testing.T) {
	c := Config{}.With(Config{WarmupRuns: 0, SupportInputMutation: false, MaxTotalBytes: 16,
		Set: map[string]bool{KeySupportInputMutation: true, KeyWarmupRuns: true, KeyMaxTotalBytes: true}})
	if got, want := c.SetText(), "warmup_runs: 0, max_total_bytes: 16, support_input_mutation: false"; got != want {
		t.Errorf("SetText() = %q, want %q", got, want)
	}
	if got := (Config{}).SetText(); got != "" {
		t.Errorf("SetText of no keys = %q", got)
	}
}

// TestCheckSaved checks what the checker asks of a saved record: its of is
// a name a del unbound (the tree decides whether it was a cached output),
// and the new name has the dead output's shape for the calls that use it.
func TestCheckSaved(t *testing.T) {
	const pre = `{"cgtviz": 1}
{"op": "def", "fn": "f", "params": ["x"], "body": [{"out": "y", "k": "relu", "a": "x"}], "returns": ["y"], "mode": "forward"}
{"op": "def", "fn": "g", "params": ["s"], "body": [{"out": "z", "k": "relu", "a": "s"}], "returns": ["z"], "mode": "backward"}
{"op": "tensor", "name": "x", "shape": [2, 3], "init": "zeros"}
{"op": "call", "fn": "f", "args": ["x"], "out": ["y"]}
`
	tests := []struct{ name, tail, want string }{
		{"of a dead output", `{"op": "del", "names": ["y"]}
{"op": "saved", "name": "s", "of": "y"}
{"op": "call", "fn": "g", "args": ["s"], "out": ["z"]}
`, ""},
		{"of a bound name", `{"op": "saved", "name": "s", "of": "y"}
`, "t:6: saved s: of: y is bound: a saved record names an output a del unbound (use y itself)"},
		{"of a name never bound", `{"op": "saved", "name": "s", "of": "q"}
`, "t:6: saved s: of: q was never bound (a saved record names a dead call output)"},
		{"the shape carries over", `{"op": "def", "fn": "h", "params": ["a", "b"], "body": [{"out": "c", "k": "add", "a": "a", "b": "b"}], "returns": ["c"]}
{"op": "del", "names": ["y"]}
{"op": "saved", "name": "s", "of": "y"}
{"op": "tensor", "name": "w", "shape": [3], "init": "zeros"}
{"op": "call", "fn": "h", "args": ["s", "w"], "out": ["c"]}
`, "t:10: call h: statement 1 (add c = a + b): b has shape [3], want [2, 3] (as a) or [1]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Read checks the trace: its error is the problems found.
			_, err := Read(strings.NewReader(pre+tc.tail), "t")
			got := ""
			if err != nil {
				got = strings.SplitN(err.Error(), "\n", 2)[0]
			}
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
