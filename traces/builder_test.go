package traces

import (
	"reflect"
	"strings"
	"testing"
)

func TestBuilderClean(t *testing.T) {
	tr := NewBuilder("built").
		Devices(2).
		Config(func(c *Config) { c.WarmupRuns = 0 }).
		Def("foo", []string{"x"}, []string{"a", "b"}, S("a", "add", "x", 1), S("b", "mul", "x", "x")).
		DefMode("fwd", ModeForward, []string{"x"}, []string{"y"}, SShape("v", "view", "x", []int{2, 2}), S("y", "relu", "v", nil)).
		DefMode("bwd", ModeBackward, nil, []string{"z"}, SFill("z", []int{1}, 0.5), SShape("w", "empty", "", []int{3})).
		Step().
		TensorSeed("inp", []int{4}, 1).
		Tensor("z", []int{4}, InitZeros).
		TensorValues("v", []int{2}, []float64{1, 2}).
		ParamSeed("w", []int{4}, 3).
		Param("p", []int{2, 2}, InitOnes).
		ParamValues("q", []int{1}, []float64{9}).
		OnDevice(1).Tensor("d1", []int{4}, InitArange).
		Call("foo", []string{"inp"}, "a", "b").
		Call("fwd", []string{"w"}, "y").
		Call("bwd", nil).
		Eager(S("c", "add", "a", "b")).
		Eager(S("c2", "sub", "d1", 1.5)).
		Read("c").
		Del("a").
		Expect(Expect{Action: ptrTo(ActionRecord), Nodes: ptrTo(1)}).
		Note("done").
		Trace()
	if ps := tr.Check(); len(ps) > 0 {
		t.Fatalf("built trace has problems:\n%s", Problems(ps).Error())
	}
	if tr.Header.Config.Set["warmup_runs"] != true || tr.Header.Config.WarmupRuns != 0 {
		t.Errorf("config change not marked set: %+v", tr.Header.Config)
	}
	if tr.Records[10].Device != 1 || tr.Records[9].Device != 0 {
		t.Errorf("OnDevice must apply to the next tensor only: %d, %d", tr.Records[10].Device, tr.Records[9].Device)
	}
	for i, r := range tr.Records {
		if r.Line != i+2 {
			t.Fatalf("record %d has Line %d, want %d", i, r.Line, i+2)
		}
	}
	roundTrip(t, "built", tr.Header, tr.Records)
}

func ptrTo[T any](v T) *T { return &v }

// TestBuilderLines checks that problems in a built trace point at the
// line each record will have once written.
func TestBuilderLines(t *testing.T) {
	tests := []struct {
		name string
		b    *Builder
		want []string
	}{
		{"unbound arg", NewBuilder("t").Def("f", []string{"x"}, []string{"x"}).Call("f", []string{"nope"}),
			[]string{"t:3: call f: arg nope is not bound"}},
		{"shape mismatch", NewBuilder("t").
			Def("f", []string{"x", "y"}, []string{"c"}, S("c", "add", "x", "y")).
			Tensor("a", []int{4}, InitOnes).Tensor("b", []int{6}, InitOnes).
			Call("f", []string{"a", "b"}, "c"),
			[]string{"t:5: call f: statement 1 (add c = x + y): b has shape [6], want [4] (as a) or [1]"}},
		{"odd b type", NewBuilder("t").Tensor("a", []int{1}, InitOnes).Eager(S("c", "add", "a", []int{1})),
			[]string{`t:3: eager (add c = a + [1]): b "[1]" is not a valid name (use letters, digits, _, . and -)`}},
		{"device out of range", NewBuilder("t").OnDevice(1).Tensor("a", []int{1}, InitOnes),
			[]string{`t:2: tensor a: device 1 is out of range (the header has 1 device: use 0, or set "devices")`}},
		{"nan", NewBuilder("t").TensorValues("a", []int{1}, []float64{nan()}),
			[]string{"t: write record line 2 (tensor a): NaN is not a JSON number"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, p := range tc.b.Trace().Check() {
				got = append(got, p.String())
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func nan() float64 {
	zero := 0.0
	return zero / zero
}

// TestBuilderTraceIsACopy checks that a Trace does not change when the
// builder goes on.
func TestBuilderTraceIsACopy(t *testing.T) {
	b := NewBuilder("t").Step()
	tr := b.Trace()
	b.Step().Config(func(c *Config) { c.RerecordLimit = 1 })
	if len(tr.Records) != 1 || tr.Header.Config.Set["rerecord_limit"] {
		t.Errorf("trace changed after Trace(): %d records, set %v", len(tr.Records), tr.Header.Config.Set)
	}
}

func TestReadAndReadFile(t *testing.T) {
	tr, err := Read(strings.NewReader(`{"cgtviz": 1}`+"\n"+`{"op": "step"}`+"\n"), "mem")
	if err != nil || len(tr.Records) != 1 || tr.File != "mem" {
		t.Fatalf("Read: %v %+v", err, tr)
	}
	_, err = Read(strings.NewReader(`{"cgtviz": 1}`+"\n"+`{"op": "read", "name": "x"}`+"\n"+`{"op": "del", "names": ["y"]}`+"\n"), "mem")
	ps, ok := err.(Problems)
	if !ok || len(ps) != 2 || err.Error() != "mem:2: read x: x is not bound\nmem:3: del: y is not bound" {
		t.Fatalf("Read of a bad trace: %T %v", err, err)
	}
	if _, err := ReadFile("testdata/nope.cgt.jsonl"); err == nil || err.Error() != "testdata/nope.cgt.jsonl: no such file or directory" {
		t.Errorf("ReadFile of a missing file: %v", err)
	}
}

func TestBuilderOnDeviceIsForOneTensor(t *testing.T) {
	tr := NewBuilder("t").Devices(2).OnDevice(1).Param("a", []int{1}, InitOnes).Tensor("b", []int{1}, InitOnes).Trace()
	if tr.Records[0].Device != 1 || tr.Records[1].Device != 0 {
		t.Errorf("devices %d, %d; want 1, 0", tr.Records[0].Device, tr.Records[1].Device)
	}
}
