package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/cgtviz/cgtviz/engine/device/sim"
	"github.com/cgtviz/cgtviz/traces"
)

// jsonLines returns a function that writes v to b as one JSON line.
func jsonLines(t testing.TB, b *bytes.Buffer) func(v any) {
	return func(v any) {
		buf, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(buf)
		b.WriteByte('\n')
	}
}

// writeBigModel writes a trace of a model at real size, as
// /work/shared/tools/bigmodel-trace.py does: layers transformer layers of
// Llama-3-8B's shapes (218M parameters a layer) as static params with
// init rand, one inference def taking them all, and 100 steps that call it
// on a new input. 8 layers of float32 are 7 GiB of parameters, 32 the 8B
// model (30 GiB).
func writeBigModel(t testing.TB, dir, dtype string, layers int) string {
	t.Helper()
	path := filepath.Join(dir, fmt.Sprintf("big-%s-%d.cgt.jsonl", dtype, layers))
	var b bytes.Buffer
	line := jsonLines(t, &b)
	line(map[string]any{"cgtviz": 1, "name": fmt.Sprintf("big model %s x%d", dtype, layers), "devices": 1})
	var params []string
	var static []int
	for l := range layers {
		for j := range 7 {
			shape := []int{4096, 4096}
			if j >= 4 {
				shape = []int{14336, 4096}
			}
			n := fmt.Sprintf("w%d_%d", l, j)
			params = append(params, n)
			static = append(static, len(params))
			line(map[string]any{"op": "param", "name": n, "shape": shape, "dtype": dtype, "init": "rand", "seed": len(params)})
		}
	}
	line(map[string]any{"op": "def", "fn": "fwd", "params": append([]string{"x"}, params...),
		"body":    []any{map[string]any{"out": "r0", "k": "fill", "shape": []int{8, 4096}, "value": 1}},
		"returns": []string{"r0"}, "mode": "inference", "static": static})
	for i := range 100 {
		line(map[string]any{"op": "step"})
		line(map[string]any{"op": "tensor", "name": "x", "shape": []int{8, 4096}, "dtype": dtype, "init": "rand", "seed": 1000 + i})
		line(map[string]any{"op": "call", "fn": "fwd", "args": append([]string{"x"}, params...), "out": []string{"y"}})
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeTrainLike writes a trace of a GPT-2-medium-sized training loop's
// memory: 292 float32 params of [1024, 1024] (rand), a def that makes one
// gradient per param and one that updates every param in place with it,
// ten steps.
func writeTrainLike(t testing.TB, dir string) string {
	t.Helper()
	const n = 292
	var b bytes.Buffer
	line := jsonLines(t, &b)
	line(map[string]any{"cgtviz": 1, "name": "train-like: 292 params of 1M"})
	var params, grads []string
	var static []int
	var gbody, ubody []any
	for i := range n {
		p, g := fmt.Sprintf("p%d", i), fmt.Sprintf("g%d", i)
		params, grads, static = append(params, p), append(grads, g), append(static, i)
		line(map[string]any{"op": "param", "name": p, "shape": []int{1024, 1024}, "init": "rand", "seed": i + 1})
		gbody = append(gbody, map[string]any{"out": g, "k": "mul", "a": p, "b": 0.5})
		ubody = append(ubody, map[string]any{"out": p, "k": "sub", "a": p, "b": g})
	}
	line(map[string]any{"op": "def", "fn": "grads", "params": params, "body": gbody, "returns": grads, "static": static})
	line(map[string]any{"op": "def", "fn": "update", "params": append(append([]string{}, params...), grads...), "body": ubody, "returns": []string{}, "static": static})
	for range 10 {
		line(map[string]any{"op": "step"})
		line(map[string]any{"op": "call", "fn": "grads", "args": params, "out": grads})
		line(map[string]any{"op": "call", "fn": "update", "args": append(append([]string{}, params...), grads...), "out": []string{}})
		line(map[string]any{"op": "del", "names": grads})
	}
	path := filepath.Join(dir, "train-like.cgt.jsonl")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeTensors writes a trace of n tensors of [1024, 1024, 64] float32
// (256 MiB each) made with init, under config (nil: the default limits).
func writeTensors(t testing.TB, dir string, n int, init string, config map[string]any) string {
	t.Helper()
	path := filepath.Join(dir, fmt.Sprintf("tensors-%d-%s.cgt.jsonl", n, init))
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	hdr := map[string]any{"cgtviz": 1, "name": fmt.Sprintf("%d x 256 MiB", n)}
	if config != nil {
		hdr["config"] = config
	}
	buf, _ := json.Marshal(hdr)
	w.Write(append(buf, '\n'))
	for i := range n {
		fmt.Fprintf(w, `{"op": "tensor", "name": "t%d", "shape": [1024, 1024, 64], "init": %q}`+"\n", i, init)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestParseBytes(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		err  bool
	}{
		{"150754820096", 150754820096, false},
		{"143771MiB", 143771 << 20, false},
		{"80GiB", 80 << 30, false},
		{"1 GiB", 1 << 30, false},
		{"2GB", 2e9, false},
		{"512B", 512, false},
		{"0", 0, true},
		{"-1GiB", 0, true},
		{"12x", 0, true},
		{"", 0, true},
		{"99999999999TiB", 0, true},
	}
	for _, tc := range tests {
		got, err := parseBytes(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestSimMemory(t *testing.T) {
	tests := []struct {
		name string
		flag int64
		meta string
		want int64
	}{
		{"no meta: an H200", 0, "", sim.H200TotalBytes},
		{"the recorded H200", 0, `{"gpu": "NVIDIA H200"}`, 150_754_820_096},
		{"a GPU of unknown memory: an H200", 0, `{"gpu": "NVIDIA Z9"}`, sim.H200TotalBytes},
		{"the flag wins", 1 << 30, `{"gpu": "NVIDIA H200"}`, 1 << 30},
		{"meta that is not an object", 0, `[1]`, sim.H200TotalBytes},
	}
	for _, tc := range tests {
		if got := simMemory(tc.flag, traces.Header{Meta: []byte(tc.meta)}); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestRunAtRealSize: run costs host memory by the records, not by the
// device's bytes (issue 30 item 2, issue 31 item 1): a 2B-parameter
// float32 model runs, 400 tensors of 256 MiB run until the limits refuse
// them, and a trace that asks for more than the device has gets PyTorch's
// CUDA out of memory error at the record that asked, as a step error.
func TestRunAtRealSize(t *testing.T) {
	dir := t.TempDir()
	big := writeBigModel(t, dir, "float32", 8)
	t400 := writeTensors(t, dir, 400, "zeros", nil)
	t600 := writeTensors(t, dir, 600, "rand", map[string]any{"max_tensor_bytes": 1 << 40, "max_total_bytes": 1 << 42})
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"2B params", []string{"run", big}, 0, "98 replays", ""},
		{"a GPT-2-sized training loop", []string{"run", writeTrainLike(t, dir)}, 0, "16 replays", ""},
		{"400 x 256 MiB: refused by the limits", []string{"run", t400}, 2, "", "over max_total_bytes"},
		// A step error, as any error the program raises: exit 0.
		{"600 x 256 MiB: out of device memory", []string{"run", t600}, 0,
			":563: tensor t561: CUDA out of memory. Tried to allocate 256.00 MiB. GPU 0 has a total capacity of 140.40 GiB", ""},
		{"--device-memory", []string{"run", "--device-memory", "1GiB", big}, 0,
			":10: param w1_1: CUDA out of memory. Tried to allocate 64.00 MiB. GPU 0 has a total capacity of 1024.00 MiB", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tc.args, &stdout, &stderr)
			runtime.ReadMemStats(&after)
			if code != tc.code || !strings.Contains(stdout.String(), tc.stdout) || !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("exit %d, want %d (stdout with %q, stderr with %q)\nstdout: %.1500s\nstderr: %.1500s", code, tc.code, tc.stdout, tc.stderr, stdout.String(), stderr.String())
			}
			// Every byte the run allocated, freed or not: a device byte
			// held on the host would be gigabytes.
			if got := after.TotalAlloc - before.TotalAlloc; got > 256<<20 {
				t.Errorf("the run allocated %d MiB on the host", got>>20)
			}
		})
	}
}

// benchRealSize runs `cgtviz ARGS... TRACE` on a generated real-size trace
// and reports the peak heap (HeapSys, sampled after each run) and the
// bytes allocated per run.
func benchRealSize(b *testing.B, trace string, code int, args ...string) {
	b.ReportAllocs()
	var peak uint64
	for b.Loop() {
		argv := append(append([]string{}, args...), trace)
		if got := run(context.Background(), argv, io.Discard, io.Discard); got != code {
			b.Fatalf("cgtviz %v: exit %d, want %d", argv, got, code)
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapSys)
	}
	b.ReportMetric(float64(peak)/(1<<20), "MB-heapsys")
}

// BenchmarkRealSize: run, check, export and snapshot on the 2B and 8B
// float32 model traces and on 400 tensors of 256 MiB (issue 30 item 2:
// each under 2 s and 300 MB).
func BenchmarkRealSize(b *testing.B) {
	dir := b.TempDir()
	traces := []struct {
		name, path string
		runCode    int // 400 x 256 MiB is refused by the limits
	}{
		{"2B", writeBigModel(b, dir, "float32", 8), 0},
		{"8B", writeBigModel(b, dir, "float32", 32), 0},
		{"train-like", writeTrainLike(b, dir), 0},
		{"400x256MiB", writeTensors(b, dir, 400, "zeros", nil), 2},
	}
	for _, tr := range traces {
		b.Run(tr.name+"/run", func(b *testing.B) { benchRealSize(b, tr.path, tr.runCode, "run") })
		if tr.runCode != 0 {
			continue
		}
		b.Run(tr.name+"/check", func(b *testing.B) { benchRealSize(b, tr.path, 0, "check") })
		out := filepath.Join(dir, "out")
		b.Run(tr.name+"/export", func(b *testing.B) { benchRealSize(b, tr.path, 0, "export", "-o", out+".dot") })
		b.Run(tr.name+"/snapshot", func(b *testing.B) { benchRealSize(b, tr.path, 0, "snapshot", "-o", out+".pickle") })
	}
}
