package gen

import (
	"bytes"
	"testing"

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
	if write(7) != write(7) {
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
