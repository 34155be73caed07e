package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestIntSizesHint: a trace whose dynamic graph got a FunctionID for each
// value of an int argument (a sampler's timestep: every size with the
// tensor shapes of the graph's first) ends with a hint naming the graph and
// the fix; one whose sizes are new tensor shapes (request lengths) does not.
func TestIntSizesHint(t *testing.T) {
	for _, tc := range []struct {
		trace, want string
	}{
		{"../../examples/recorded/diffusion_sample.cgt.jsonl",
			"hint: Denoiser_1's compiled graph got a function of its own for 19 more sizes whose tensors all have its shapes"},
		// (the same sampler with the hint's fix: the timestep a CUDA tensor)
		{"../../examples/recorded/diffusion_tensor_t.cgt.jsonl", ""},
		{"../../examples/recorded/varlen_infer.cgt.jsonl", ""},
		{"../../examples/recorded/inference_kv.cgt.jsonl", ""},
	} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), []string{"run", tc.trace}, &out, &errb); code != 0 {
			t.Fatalf("%s: exit %d\n%s%s", tc.trace, code, out.String(), errb.String())
		}
		all := out.String() + errb.String()
		if tc.want == "" {
			if strings.Contains(all, "a function of its own for") {
				t.Errorf("%s: an int-size hint where its sizes are shapes:\n%s", tc.trace, all)
			}
			continue
		}
		if !strings.Contains(all, tc.want) || !strings.Contains(all, `torch.tensor(t, device="cuda")`) {
			t.Errorf("%s: no hint %q:\n%s", tc.trace, tc.want, all)
		}
	}
}
