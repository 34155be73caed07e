package gen

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
)

// Model shapes a synthetic training loop of a transformer at real size:
// what a GPT-2-like model's parameters, saved activations, gradients and
// optimizer state do to CUDAGraph Trees and the pool, with PyTorch's
// shapes and no values (every tensor is rand or a fill). It exists to
// measure cgtviz at model sizes (BENCHMARKS.md, "By model size"); its
// decisions are the engine's, with no expect records.
type Model struct {
	Layers int // transformer blocks
	Width  int // the model's width d; the MLP is 4d, attention 3d
	Vocab  int // the embedding's rows (default 50,257, GPT-2's)
	Batch  int // sequences a step (default 4)
	Seq    int // tokens a sequence (default 256)
	Steps  int // training steps, each begun with a mark_step (default 10)
	Evals  int // inference calls after training (default 3)
	// DType is each parameter's dtype (default float32).
	DType string
}

func (m Model) withDefaults() Model {
	if m.Vocab == 0 {
		m.Vocab = 50257
	}
	if m.Batch == 0 {
		m.Batch = 4
	}
	if m.Seq == 0 {
		m.Seq = 256
	}
	if m.Steps == 0 {
		m.Steps = 10
	}
	if m.Evals == 0 {
		m.Evals = 3
	}
	if m.DType == "" {
		m.DType = "float32"
	}
	return m
}

// param is one parameter of the model.
type param struct {
	name  string
	shape []int
}

func (m Model) params() []param {
	d := m.Width
	ps := []param{{"wte", []int{m.Vocab, d}}, {"wpe", []int{1024, d}}}
	for l := range m.Layers {
		for _, p := range []param{
			{"ln1_w", []int{d}}, {"ln1_b", []int{d}},
			{"qkv_w", []int{3 * d, d}}, {"qkv_b", []int{3 * d}},
			{"proj_w", []int{d, d}}, {"proj_b", []int{d}},
			{"ln2_w", []int{d}}, {"ln2_b", []int{d}},
			{"fc1_w", []int{4 * d, d}}, {"fc1_b", []int{4 * d}},
			{"fc2_w", []int{d, 4 * d}}, {"fc2_b", []int{d}},
		} {
			ps = append(ps, param{fmt.Sprintf("h%d_%s", l, p.name), p.shape})
		}
	}
	return append(ps, param{"lnf_w", []int{d}}, param{"lnf_b", []int{d}})
}

// Params is how many parameters (elements) the model has.
func (m Model) Params() int64 {
	m = m.withDefaults()
	var n int64
	for _, p := range m.params() {
		e := int64(1)
		for _, s := range p.shape {
			e *= int64(s)
		}
		n += e
	}
	return n
}

// WriteModel writes the trace of m to w: the parameters, a forward that
// saves four activations a block, its backward giving a gradient a
// parameter, a compiled AdamW step writing every parameter and its two
// moments in place (static inputs mutated by the graph), Steps training
// steps with the loss read on the host, then Evals inference calls.
func WriteModel(w io.Writer, m Model) error {
	if m.Layers < 1 || m.Width < 1 {
		return fmt.Errorf("gen: model: want layers and width of 1 or more, got %d and %d", m.Layers, m.Width)
	}
	m = m.withDefaults()
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	line := func(v any) {
		_ = enc.Encode(v) // a failed write shows at Flush
	}
	ps := m.params()
	tokens := m.Batch * m.Seq
	d := m.Width
	line(map[string]any{"cgtviz": 1, "name": fmt.Sprintf("synthetic training: %d layers of width %d (%.0fM params, %s)", m.Layers, m.Width, float64(m.Params())/1e6, m.DType),
		// The trace's own limits stay out of the way (1 TiB): the device's
		// capacity (an H200's, as meta names it) is what refuses a model
		// too big, with PyTorch's CUDA out of memory error.
		"config": map[string]any{"max_tensor_bytes": int64(1) << 40, "max_total_bytes": int64(1) << 40},
		"meta":   map[string]any{"source": "traces/gen.WriteModel", "gpu": "NVIDIA H200"}})

	// The forward: ids and the parameters in, four saved activations a
	// block and the loss out.
	names := make([]string, len(ps))
	static := make([]int, len(ps))
	for i, p := range ps {
		names[i] = p.name
		static[i] = i + 1
	}
	var fbody []any
	var saved []string
	val := 1
	fill := func(out string, shape []int) map[string]any {
		val++
		return map[string]any{"out": out, "k": "fill", "shape": shape, "value": val % 7, "dtype": m.DType}
	}
	for l := range m.Layers {
		for j, width := range []int{d, 3 * d, d, 4 * d} {
			a := fmt.Sprintf("a%d_%d", l, j)
			fbody = append(fbody, fill(a, []int{tokens, width}))
			saved = append(saved, a)
		}
	}
	fbody = append(fbody, fill("logits", []int{tokens, m.Vocab}), fill("loss", []int{1}))
	fwdParams := append([]string{"ids"}, names...)
	line(map[string]any{"op": "def", "fn": "GPT2_fwd", "params": fwdParams, "body": fbody,
		"returns": append([]string{"loss"}, saved...), "mode": "forward", "static": static})

	// The backward: the saved activations and the loss's gradient in, a
	// gradient a parameter out.
	var bbody []any
	grads := make([]string, len(ps))
	for i, p := range ps {
		grads[i] = "g_" + p.name
		bbody = append(bbody, fill(grads[i], p.shape))
	}
	bwdParams := append([]string{"tangent"}, saved...)
	bstatic := make([]int, len(saved))
	for i := range saved {
		bstatic[i] = i + 1
	}
	line(map[string]any{"op": "def", "fn": "GPT2_bwd", "params": bwdParams, "body": bbody, "returns": grads, "mode": "backward", "static": bstatic})

	// The optimizer: each parameter and its two moments written in place.
	var obody []any
	var oparams []string
	var ostatic []int
	for i, p := range ps {
		e, v := "exp_avg_"+p.name, "exp_avg_sq_"+p.name
		oparams = append(oparams, p.name, e, v, grads[i])
		n := len(oparams)
		ostatic = append(ostatic, n-4, n-3, n-2)
		obody = append(obody,
			map[string]any{"out": e, "k": "add", "a": e, "b": grads[i]},
			map[string]any{"out": v, "k": "mul", "a": v, "b": 0.999},
			map[string]any{"out": p.name, "k": "sub", "a": p.name, "b": e})
	}
	line(map[string]any{"op": "def", "fn": "adamw_step", "params": oparams, "body": obody, "returns": []string{}, "static": ostatic})

	// The inference forward (no_grad: a graph of its own).
	line(map[string]any{"op": "def", "fn": "GPT2_eval", "params": fwdParams, "body": []any{fill("logits", []int{tokens, m.Vocab})},
		"returns": []string{"logits"}, "static": static})

	seed := 0
	tensor := func(op, name string, shape []int, dtype string) {
		seed++
		line(map[string]any{"op": op, "name": name, "shape": shape, "init": "rand", "seed": seed, "dtype": dtype})
	}
	for _, p := range ps {
		tensor("param", p.name, p.shape, m.DType)
	}
	for _, p := range ps {
		line(map[string]any{"op": "param", "name": "exp_avg_" + p.name, "shape": p.shape, "init": "zeros", "dtype": m.DType})
		line(map[string]any{"op": "param", "name": "exp_avg_sq_" + p.name, "shape": p.shape, "init": "zeros", "dtype": m.DType})
	}
	out := append([]string{"loss"}, saved...)
	for range m.Steps {
		line(map[string]any{"op": "step"})
		tensor("tensor", "ids", []int{m.Batch, m.Seq}, "int64")
		line(map[string]any{"op": "call", "fn": "GPT2_fwd", "args": fwdParams, "out": out})
		tensor("tensor", "tangent", []int{1}, "float32")
		line(map[string]any{"op": "call", "fn": "GPT2_bwd", "args": bwdParams, "out": grads})
		line(map[string]any{"op": "del", "names": append(append([]string{"tangent"}, saved...), "ids")})
		line(map[string]any{"op": "call", "fn": "adamw_step", "args": oparams, "out": []string{}})
		line(map[string]any{"op": "del", "names": grads})
		line(map[string]any{"op": "read", "name": "loss"})
	}
	for range m.Evals {
		line(map[string]any{"op": "step"})
		tensor("tensor", "ids", []int{m.Batch, m.Seq}, "int64")
		line(map[string]any{"op": "call", "fn": "GPT2_eval", "args": fwdParams, "out": []string{"logits"}})
		line(map[string]any{"op": "read", "name": "logits"})
	}
	return bw.Flush()
}
