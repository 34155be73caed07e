package engine_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cgtviz/cgtviz/engine"
)

// TestDTypeSizes checks that a tensor takes numel x element_size() bytes,
// as PyTorch asks its allocator (blocks are rounded up to 512 bytes), and
// that an output of a compiled function takes its dtype's size in the
// graph pool, for every dtype of the format.
func TestDTypeSizes(t *testing.T) {
	tests := []struct {
		dtype string
		size  int64
	}{{"float32", 4}, {"float16", 2}, {"bfloat16", 2}, {"float64", 8}, {"int64", 8}, {"int32", 4}, {"int8", 1}, {"uint8", 1}, {"bool", 1}}
	round := func(n int64) int64 { return (n + 511) / 512 * 512 }
	for _, tt := range tests {
		t.Run(tt.dtype, func(t *testing.T) {
			src := fmt.Sprintf(`{"cgtviz": 1}
{"op": "def", "fn": "f", "params": ["x"], "body": [{"out": "y", "k": "neg", "a": "x"}], "returns": ["y"]}
{"op": "tensor", "name": "x", "shape": [3000], "dtype": %q, "init": "zeros"}
{"op": "call", "fn": "f", "args": ["x"], "out": ["y"]}
{"op": "read", "name": "y"}
`, tt.dtype)
			steps, e := runText(t, src, engine.Options{})
			for _, s := range steps {
				if s.Err != nil {
					t.Fatalf("line %d: %v", s.Line, s.Err)
				}
			}
			st := e.State().Devices[0]
			if got, want := st.Default.AllocatedBytes, round(3000*tt.size); got != want {
				t.Errorf("the tensor takes %d bytes in the default pool, want %d", got, want)
			}
			if got, want := st.Pool.AllocatedBytes, round(3000*tt.size); got != want {
				t.Errorf("the warmup output takes %d bytes in the graph pool, want %d", got, want)
			}
			_, err := e.Values("y")
			if modelled := tt.dtype == "float32"; (err == nil) != modelled || (err != nil && !strings.Contains(err.Error(), "float32 values only")) {
				t.Errorf("values of a %s output: err %v", tt.dtype, err)
			}
		})
	}
}
