package gen

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cgtviz/cgtviz/traces"
)

// TestWriteModel: the synthetic training loop checks clean at every size
// the benchmarks use, and GPT-2 medium's shapes give its known parameter
// count (354,823,168 with the head tied to the embedding).
func TestWriteModel(t *testing.T) {
	if got := (Model{Layers: 24, Width: 1024}).Params(); got != 354_823_168 {
		t.Errorf("GPT-2 medium: %d params, want 354,823,168", got)
	}
	if got := (Model{Layers: 12, Width: 768}).Params(); got != 124_439_808 {
		t.Errorf("GPT-2 small: %d params, want 124,439,808", got)
	}
	for _, m := range []Model{{Layers: 1, Width: 8, Vocab: 16, Seq: 4, Batch: 1, Steps: 2, Evals: 1}, {Layers: 2, Width: 64}, {Layers: 24, Width: 1024, DType: "bfloat16"}} {
		var b bytes.Buffer
		if err := WriteModel(&b, m); err != nil {
			t.Fatal(err)
		}
		tr, err := traces.ReadChecked(bytes.NewReader(b.Bytes()), "model.cgt.jsonl")
		if err != nil {
			t.Fatalf("%+v: %v", m, err)
		}
		steps, calls := 0, 0
		for _, r := range tr.Records {
			switch r.Op {
			case traces.OpStep:
				steps++
			case traces.OpCall:
				calls++
			}
		}
		mm := m.withDefaults()
		if steps != mm.Steps+mm.Evals || calls != 3*mm.Steps+mm.Evals {
			t.Errorf("%+v: %d steps, %d calls", m, steps, calls)
		}
		if !strings.Contains(tr.Header.Name, "synthetic training") {
			t.Errorf("name %q", tr.Header.Name)
		}
	}
	if err := WriteModel(&bytes.Buffer{}, Model{}); err == nil {
		t.Error("a model of no layers was written")
	}
}
