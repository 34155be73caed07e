package traces

import (
	"bytes"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestWriteCanonicalFiles checks that the good traces, which are written
// in canonical form, come back byte for byte from read then write.
func TestWriteCanonicalFiles(t *testing.T) {
	files, _ := filepath.Glob("testdata/good/*.cgt.jsonl")
	if len(files) == 0 {
		t.Fatal("no good traces")
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			tr, err := ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if err := tr.Write(&got); err != nil {
				t.Fatal(err)
			}
			if got.String() != string(want) {
				t.Errorf("canonical write differs from %s:\n--- got\n%s--- want\n%s", path, got.String(), want)
			}
		})
	}
}

// TestWriteIdempotentExamples checks read → write → read → write on the
// examples: same records, same bytes.
func TestWriteIdempotentExamples(t *testing.T) {
	files, _ := filepath.Glob("../examples/*.cgt.jsonl")
	bad, _ := filepath.Glob("testdata/good/*.cgt.jsonl")
	for _, path := range append(files, bad...) {
		tr, err := ReadFile(path)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		roundTrip(t, path, tr.Header, tr.Records)
	}
}

// roundTrip writes h and recs, reads them back, writes again, and checks
// that nothing changed.
func roundTrip(t *testing.T, name string, h Header, recs []Record) {
	t.Helper()
	var w1 bytes.Buffer
	if err := Write(&w1, h, recs); err != nil {
		t.Fatalf("%s: write: %v", name, err)
	}
	h1, r1, err := readRecords(bytes.NewReader(w1.Bytes()), name)
	if err != nil {
		t.Fatalf("%s: read back: %v\n%s", name, err, w1.String())
	}
	if len(r1) != len(recs) {
		t.Fatalf("%s: wrote %d records, read %d", name, len(recs), len(r1))
	}
	for i := range recs {
		want := recs[i]
		want.Line = i + 2
		if !reflect.DeepEqual(sansKey(r1[i]), sansKey(want)) {
			t.Fatalf("%s: record %d changed in a round trip:\n got %#v\nwant %#v\nline: %s", name, i, r1[i], want, strings.Split(w1.String(), "\n")[i+1])
		}
	}
	var w2 bytes.Buffer
	if err := Write(&w2, h1, r1); err != nil {
		t.Fatalf("%s: second write: %v", name, err)
	}
	if w1.String() != w2.String() {
		t.Fatalf("%s: write is not idempotent:\n--- first\n%s--- second\n%s", name, w1.String(), w2.String())
	}
}

// readRecords reads without checking, as the property test's records need
// not make a runnable trace.
func readRecords(r io.Reader, file string) (Header, []Record, error) {
	rd, err := NewReader(r, file)
	if err != nil {
		return Header{}, nil, err
	}
	var recs []Record
	for {
		rec, err := rd.Next()
		if err == io.EOF {
			return rd.Header(), recs, nil
		}
		if err != nil {
			return Header{}, nil, err
		}
		recs = append(recs, rec)
	}
}

// TestWriteRoundTripRandom is a property test: random records of every
// op, with random optional fields and random float bits, survive write →
// read unchanged, and writing again gives the same bytes.
func TestWriteRoundTripRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 300; i++ {
		h := Header{Version: Version, Name: randText(rng), Devices: 1 + rng.IntN(3), Config: DefaultConfig()}
		if rng.IntN(2) == 0 {
			h.Config.Set = map[string]bool{"warmup_runs": true}
			h.Config.WarmupRuns = rng.IntN(5)
		}
		if rng.IntN(3) == 0 {
			h.Config = h.Config.With(randConfig(rng))
		}
		if rng.IntN(3) == 0 {
			h.Meta = []byte(`{"k": [1, 2, {"x": "y"}]}`)
		}
		recs := make([]Record, 1+rng.IntN(30))
		for j := range recs {
			recs[j] = randRecord(rng, h.Devices)
		}
		roundTrip(t, "random", h, recs)
	}
}

func randName(rng *rand.Rand) string {
	const chars = "abcxyzABC019_.-"
	n := 1 + rng.IntN(8)
	b := make([]byte, n)
	for i := range b {
		b[i] = chars[rng.IntN(len(chars))]
	}
	return string(b)
}

func randNames(rng *rand.Rand) []string {
	out := make([]string, rng.IntN(4))
	for i := range out {
		out[i] = randName(rng)
	}
	return out
}

func uniq(names []string) []string {
	out := []string{}
	for _, n := range names {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

func randText(rng *rand.Rand) string {
	parts := []string{"a", "\"", "\\", "\n", "\t", "\x01", "Ω", "<&>", " ", "é", "\u2028"}
	var b strings.Builder
	for i := rng.IntN(6); i > 0; i-- {
		b.WriteString(parts[rng.IntN(len(parts))])
	}
	return b.String()
}

// randFloat returns any finite float64, from random bits, so that the
// shortest-form printing is tested on hard cases too.
func randFloat(rng *rand.Rand) float64 {
	for {
		var f float64
		switch rng.IntN(3) {
		case 0:
			f = math.Float64frombits(rng.Uint64())
		case 1:
			f = float64(rng.IntN(2000) - 1000)
		default:
			f = rng.NormFloat64()
		}
		if !math.IsNaN(f) && !math.IsInf(f, 0) {
			return f
		}
	}
}

func randShape(rng *rand.Rand) []int {
	s := make([]int, rng.IntN(MaxDims+1))
	for i := range s {
		s[i] = rng.IntN(4)
	}
	return s
}

func randStmt(rng *rand.Rand) Stmt {
	s := Stmt{Out: randName(rng)}
	switch rng.IntN(6) {
	case 0:
		s.K, s.A = "add", randName(rng)
		if rng.IntN(2) == 0 {
			s.B = Operand{Num: randFloat(rng), IsNum: true}
		} else {
			s.B.Name = randName(rng)
		}
	case 1:
		s.K, s.A = "exp", randName(rng)
	case 2:
		s.K, s.A, s.B.Name = "matmul", randName(rng), randName(rng)
	case 3:
		s.K, s.A = "view", randName(rng)
		if rng.IntN(2) == 0 {
			s.Shape = randShape(rng)
			if rng.IntN(2) == 0 {
				s.Offset, s.HasOffset = rng.Int64N(100), true
			}
			if rng.IntN(2) == 0 {
				s.Strides = make([]int64, len(s.Shape))
				for i := range s.Strides {
					s.Strides[i] = rng.Int64N(10)
				}
			}
		}
	case 4:
		s.K, s.Shape, s.Value, s.HasValue = "fill", randShape(rng), randFloat(rng), true
	default:
		s.K, s.Shape = "empty", randShape(rng)
	}
	if rng.IntN(4) == 0 {
		s.DType = randDType(rng)
	}
	return s
}

var dtypeNames = []string{"float32", "float16", "bfloat16", "float64", "int64", "int32", "int8", "uint8", "bool"}

func randDType(rng *rand.Rand) string { return dtypeNames[rng.IntN(len(dtypeNames))] }

// randConfig returns a config record's keys: a random non-empty subset,
// with random values in range.
func randConfig(rng *rand.Rand) Config {
	c := Config{Set: map[string]bool{}}
	for len(c.Set) == 0 {
		for _, k := range ConfigKeys {
			if rng.IntN(3) == 0 {
				c.Set[k] = true
			}
		}
	}
	c.WarmupRuns, c.RerecordLimit, c.RecompileLimit, c.DynamicShapeWarnLimit = rng.IntN(9), rng.IntN(9), rng.IntN(9), rng.IntN(9)
	c.MaxTensorBytes, c.MaxTotalBytes = 1+rng.Int64N(1<<40), 1+rng.Int64N(1<<40)
	c.AutomaticDynamicShapes, c.AssumeStaticByDefault = rng.IntN(2) == 0, rng.IntN(2) == 0
	c.SupportInputMutation, c.SkipDynamicGraphs = rng.IntN(2) == 0, rng.IntN(2) == 0
	// Keys not set are zero in a config record, as the reader leaves them.
	return Config{}.With(c)
}

func randRecord(rng *rand.Rand, devices int) Record {
	ops := []Op{OpDef, OpTensor, OpParam, OpCall, OpEager, OpDel, OpStep, OpRead, OpExpect, OpNote, OpConfig}
	r := Record{Op: ops[rng.IntN(len(ops))]}
	switch r.Op {
	case OpDef:
		r.Fn, r.Params, r.Returns = randName(rng), uniq(randNames(rng)), randNames(rng)
		r.Body = make([]Stmt, rng.IntN(4))
		for i := range r.Body {
			r.Body[i] = randStmt(rng)
		}
		r.Mode = []Mode{"", ModeInference, ModeForward, ModeBackward}[rng.IntN(4)]
	case OpTensor, OpParam:
		r.Name, r.Shape, r.Device = randName(rng), randShape(rng), rng.IntN(devices)
		r.Init = []Init{InitRand, InitZeros, InitOnes, InitArange, InitValues}[rng.IntN(5)]
		switch r.Init {
		case InitRand:
			if rng.IntN(2) == 0 {
				r.Seed, r.HasSeed = int64(rng.Uint64()), true
			}
		case InitValues:
			r.Values = make([]float64, NumElems(r.Shape))
			for i := range r.Values {
				r.Values[i] = randFloat(rng)
			}
		}
		if r.Init != InitValues && rng.IntN(3) == 0 {
			r.DType = randDType(rng)
		}
	case OpCall:
		r.Fn, r.Args = randName(rng), randNames(rng)
		if rng.IntN(2) == 0 {
			r.Out = randNames(rng)
		}
		if rng.IntN(3) == 0 {
			inv := rng.Int64N(1 << 40)
			r.Invocation = &inv
		}
	case OpConfig:
		c := randConfig(rng)
		r.Config = &c
	case OpEager:
		s := randStmt(rng)
		r.Stmt = &s
	case OpDel:
		r.Names = append(randNames(rng), randName(rng))
	case OpRead:
		r.Name = randName(rng)
	case OpNote:
		r.Text = randText(rng)
	case OpExpect:
		e := &Expect{}
		ptr := func(v int) *int { return &v }
		if rng.IntN(2) == 0 {
			a := []string{ActionWarmup, ActionRecord, ActionReplay, ActionEager}[rng.IntN(4)]
			e.Action = &a
		}
		if rng.IntN(2) == 0 {
			e.Node = &ExpectNode{}
			if rng.IntN(2) == 0 {
				fn := randName(rng)
				e.Node.Fn = &fn
			}
			if rng.IntN(2) == 0 {
				e.Node.HasParentFn = true
				if rng.IntN(2) == 0 {
					p := randName(rng)
					e.Node.ParentFn = &p
				}
			}
		}
		for _, p := range []**int{&e.Nodes, &e.Roots, &e.Checkpoints, &e.Recordings, &e.Replays, &e.Warmups, &e.LiveBlocks} {
			if rng.IntN(3) == 0 {
				*p = ptr(rng.IntN(100))
			}
		}
		if rng.IntN(2) == 0 {
			e.HasError = true
			if rng.IntN(2) == 0 {
				msg := randText(rng)
				e.Error = &msg
			}
		}
		if rng.IntN(2) == 0 {
			e.Values = &ExpectValues{Name: randName(rng), Values: []float64{}}
			for i := rng.IntN(4); i > 0; i-- {
				e.Values.Values = append(e.Values.Values, randFloat(rng))
			}
			if rng.IntN(2) == 0 {
				e.Values.Tol, e.Values.HasTol = math.Abs(randFloat(rng)), true
			}
		}
		e.Device = rng.IntN(devices)
		r.Expect = e
	}
	return r
}

func TestWriteRefusesWhatJSONCannotHold(t *testing.T) {
	h := Header{Version: Version, Devices: 1, Config: DefaultConfig()}
	tests := []struct {
		name string
		rec  Record
		want string
	}{
		{"nan value", Record{Op: OpTensor, Name: "x", Shape: []int{1}, Init: InitValues, Values: []float64{math.NaN()}}, "NaN is not a JSON number"},
		{"inf b", Record{Op: OpEager, Stmt: &Stmt{Out: "y", K: "add", A: "x", B: Operand{Num: math.Inf(1), IsNum: true}}}, "+Inf is not a JSON number"},
		{"bad utf8", Record{Op: OpNote, Text: "\xff"}, "not valid UTF-8"},
		{"unknown op", Record{Op: "jump"}, `unknown op "jump"`},
		{"eager without stmt", Record{Op: OpEager}, "eager without a statement"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Write(io.Discard, h, []Record{tc.rec})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Write: got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestAppendNum(t *testing.T) {
	tests := []struct {
		f    float64
		want string
	}{
		{0, "0"}, {1, "1"}, {-2.5, "-2.5"}, {1e20, "100000000000000000000"}, {1e21, "1e+21"},
		{1e-7, "1e-7"}, {0.000001, "0.000001"}, {0.1, "0.1"}, {123456789, "123456789"}, {math.Copysign(0, -1), "-0"},
	}
	for _, tc := range tests {
		if got := formatNum(tc.f); got != tc.want {
			t.Errorf("formatNum(%v) = %q, want %q", tc.f, got, tc.want)
		}
	}
}

func TestAppendSpaced(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"a":1}`, `{"a": 1}`},
		{`{"a:b":"c,\"d","e":[1,2,{}]}`, `{"a:b": "c,\"d", "e": [1, 2, {}]}`},
		{`{"x":"\\","y":null}`, `{"x": "\\", "y": null}`},
	}
	for _, tc := range tests {
		if got := string(appendSpaced(nil, []byte(tc.in))); got != tc.want {
			t.Errorf("appendSpaced(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
