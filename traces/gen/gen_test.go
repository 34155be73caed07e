package gen

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"

	"github.com/cgtviz/cgtviz/tools/golden"

	"github.com/cgtviz/cgtviz/traces"
)

// TestValid checks that generated traces check clean for every step mode,
// since the property tests rely on it: a trace the checker refuses would
// test the checker, not the engine.
func TestValid(t *testing.T) {
	for _, mode := range []StepMode{StepsRandom, StepsAlways, StepsNever} {
		for seed := int64(0); seed < 300; seed++ {
			tr := Trace(seed, Options{Steps: mode})
			if ps := tr.Check(); len(ps) > 0 {
				var buf bytes.Buffer
				tr.Write(&buf)
				t.Fatalf("mode %d seed %d: %v\n%s", mode, seed, ps, buf.String())
			}
		}
	}
}

// TestDeterministic checks that a seed always gives the same trace and
// that different seeds differ.
func TestDeterministic(t *testing.T) {
	write := func(seed int64) string {
		var buf bytes.Buffer
		if err := Trace(seed, Options{}).Write(&buf); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	if first, again := write(7), write(7); first != again {
		t.Fatal("seed 7 gave two different traces")
	}
	if write(7) == write(8) {
		t.Fatal("seeds 7 and 8 gave the same trace")
	}
}

// TestCoverage checks that the generator makes what its doc promises,
// over a few seeds: every op, traces with and without steps, every kind of
// function, calls whose outputs rebind their arguments.
func TestCoverage(t *testing.T) {
	ops := map[traces.Op]int{}
	kinds := map[string]bool{}
	noStep := 0
	for seed := int64(0); seed < 40; seed++ {
		tr := Trace(seed, Options{})
		steps := 0
		for _, r := range tr.Records {
			ops[r.Op]++
			if r.Op == traces.OpStep {
				steps++
			}
			if r.Op == traces.OpDef {
				kinds[r.Fn[len("f0_"):]] = true
			}
		}
		if steps == 0 {
			noStep++
		}
		if n := len(tr.Records); n < 150 || n > 200 {
			t.Errorf("seed %d: %d records, want about 150", seed, n)
		}
	}
	for _, op := range []traces.Op{traces.OpDef, traces.OpTensor, traces.OpParam, traces.OpCall, traces.OpEager, traces.OpDel, traces.OpStep, traces.OpRead, traces.OpNote} {
		if ops[op] == 0 {
			t.Errorf("no %s record in 40 traces", op)
		}
	}
	if len(kinds) != 9 {
		t.Errorf("function kinds made: %v, want all 9", kinds)
	}
	if noStep == 0 || noStep == 40 {
		t.Errorf("%d of 40 traces have no step; want some, not all", noStep)
	}
}

// TestSeedsUnchanged checks that seeds give the traces they gave before
// Options.Additions existed: tests elsewhere pin behaviour to seeds, so
// the default options must draw exactly the same random numbers. The
// golden holds one SHA-256 per seed and step mode, written by the
// generator before the option was added.
func TestSeedsUnchanged(t *testing.T) {
	var got strings.Builder
	for _, mode := range []StepMode{StepsRandom, StepsAlways, StepsNever} {
		for seed := int64(0); seed < 40; seed++ {
			var buf bytes.Buffer
			if err := Trace(seed, Options{Steps: mode}).Write(&buf); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&got, "mode %d seed %d %x\n", mode, seed, sha256.Sum256(buf.Bytes()))
		}
	}
	// A difference means a default-options seed changed.
	golden.Check(t, "testdata/seeds.golden", []byte(got.String()))
}

// TestAdditions checks that with Options.Additions the traces still check
// clean and use every addition, across seeds: invocations shared by calls
// (graph breaks), dtypes, strided views, shapes over 4 dims, config
// records.
func TestAdditions(t *testing.T) {
	for _, mode := range []StepMode{StepsRandom, StepsAlways, StepsNever} {
		for seed := int64(0); seed < 200; seed++ {
			tr := Trace(seed, Options{Steps: mode, Additions: true})
			if ps := tr.Check(); len(ps) > 0 {
				var buf bytes.Buffer
				tr.Write(&buf)
				t.Fatalf("mode %d seed %d: %v\n%s", mode, seed, ps, buf.String())
			}
		}
	}
	seen := map[string]int{}
	for seed := int64(0); seed < 40; seed++ {
		tr := Trace(seed, Options{Additions: true})
		last := int64(-1)
		for _, r := range tr.Records {
			switch {
			case r.Op == traces.OpCall && r.Invocation != nil:
				seen["invocation"]++
				if *r.Invocation == last {
					seen["shared invocation"]++
				}
				last = *r.Invocation
			case r.DType != "":
				seen["dtype"]++
			case r.Op == traces.OpEager && r.Stmt.Strided():
				seen["strided view"]++
			case r.Op == traces.OpConfig:
				seen["config"]++
			}
			if len(r.Shape) > 4 {
				seen["over 4 dims"]++
			}
		}
	}
	for _, k := range []string{"invocation", "shared invocation", "dtype", "strided view", "config", "over 4 dims"} {
		if seen[k] == 0 {
			t.Errorf("no %s in 40 traces with Additions (seen: %v)", k, seen)
		}
	}
}
