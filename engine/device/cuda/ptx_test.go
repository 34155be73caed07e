package cuda

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/cgtviz/cgtviz/traces/ops"
)

// TestEmbeddedPTXDefinesEveryKernel is the CI check of kernels.ptx: every
// kernel of the op set, and every form of b of a binary kernel, must have
// its .entry, or New would fail on the GPU.
func TestEmbeddedPTXDefinesEveryKernel(t *testing.T) {
	entries := Entries(PTX)
	if len(entries) == 0 {
		t.Fatal("the embedded PTX defines no .entry")
	}
	err := ForEachEntry(func(k ops.Kernel, b ops.BKind, name string) error {
		if !slices.Contains(entries, name) {
			t.Errorf("kernel %s, b form %d: the embedded PTX has no .entry %s", k, b, name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(PTX, ".target") || !strings.Contains(PTX, ".version") {
		t.Error("the embedded PTX lacks its .version or .target directive")
	}
}

func TestSymbols(t *testing.T) {
	syms, err := Symbols()
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, k := range ops.All() {
		if k.IsBinary() {
			want += len(BKinds())
		} else {
			want++
		}
	}
	if len(syms) != want {
		t.Errorf("Symbols() has %d names, want %d", len(syms), want)
	}
	seen := map[string]bool{}
	for _, s := range syms {
		if seen[s] {
			t.Errorf("symbol %s appears twice", s)
		}
		seen[s] = true
	}
}

func TestSymbol(t *testing.T) {
	tests := []struct {
		k       ops.Kernel
		b       ops.BKind
		want    string
		wantErr bool
	}{
		{ops.Add, ops.BTensor, "cgtviz_add_tensor", false},
		{ops.Sub, ops.BBroadcast, "cgtviz_sub_broadcast", false},
		{ops.Min, ops.BScalar, "cgtviz_min_scalar", false},
		{ops.Div, ops.BScalar, "cgtviz_div_scalar", false},
		{ops.Tanh, ops.BTensor, "cgtviz_tanh", false},
		{ops.Tanh, ops.BScalar, "cgtviz_tanh", false}, // b does not matter for unary kernels
		{ops.Matmul, ops.BTensor, "cgtviz_matmul", false},
		{ops.Sum, ops.BTensor, "cgtviz_sum", false},
		{ops.Copy, ops.BTensor, "cgtviz_copy", false},
		{ops.Fill, ops.BTensor, "cgtviz_fill", false},
		{ops.Add, ops.BKind(7), "", true},
		{ops.Invalid, ops.BTensor, "", true},
		{ops.Kernel(200), ops.BTensor, "", true},
	}
	for _, tt := range tests {
		got, err := Symbol(tt.k, tt.b)
		if (err != nil) != tt.wantErr {
			t.Errorf("Symbol(%s, %d) error = %v, want error %v", tt.k, tt.b, err, tt.wantErr)
			continue
		}
		if got != tt.want {
			t.Errorf("Symbol(%s, %d) = %q, want %q", tt.k, tt.b, got, tt.want)
		}
	}
}

func TestEntries(t *testing.T) {
	tests := []struct {
		name string
		ptx  string
		want []string
	}{
		{"none", ".version 7.8\n.target sm_75\n", nil},
		{"visible", ".visible .entry cgtviz_add_tensor(\n\t.param .u64 p0\n)\n", []string{"cgtviz_add_tensor"}},
		{"plain and spaced", "  .entry k1 (\n)\n.entry k2(\n)\n", []string{"k1", "k2"}},
		{"a call is not an entry", "\tcall.uni cgtviz_add_tensor, (\n", nil},
		{"a .func is not an entry", ".visible .func helper(\n)\n", nil},
		{"a comment naming an entry is not one", "// .globl\tcgtviz_sum\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Entries(tt.ptx); !slices.Equal(got, tt.want) {
				t.Errorf("Entries = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestEmbeddedPTXDefinesStridedKernels: the entries of strided launches
// are in the module, with the parameters kernels.cu gives them (the
// geometry last, 4 x ops.MaxRank int64s by value).
func TestEmbeddedPTXDefinesStridedKernels(t *testing.T) {
	entries := Entries(PTX)
	params := map[string]int{StridedSymbol: 8, StridedSumSymbol: 4, StridedMatmulSymbol: 7}
	for _, s := range StridedSymbols() {
		if !slices.Contains(entries, s) {
			t.Errorf("the embedded PTX has no .entry %s", s)
			continue
		}
		i := strings.Index(PTX, ".entry "+s+"(")
		head := PTX[i : i+strings.Index(PTX[i:], ")")]
		if got := strings.Count(head, ".param "); got != params[s] {
			t.Errorf("%s has %d parameters, want %d", s, got, params[s])
		}
		geom := fmt.Sprintf(".param .align 8 .b8 %s_param_%d[%d]", s, params[s]-1, 4*8*ops.MaxRank)
		if !strings.Contains(head, geom) {
			t.Errorf("%s's last parameter is not %q", s, geom)
		}
	}
}

// TestStridedOpCodes: every elementwise kernel, copy and fill has a code
// of cgtviz_strided, and the codes are kernels.cu's (CGT_OP_*). (The
// PTX's branches are checked on the GPU, by devicetest's Strided.)
func TestStridedOpCodes(t *testing.T) {
	cu := kernelsCU(t)
	for _, k := range ops.All() {
		code, ok := StridedOp(k)
		if k == ops.Sum || k == ops.Matmul {
			if ok {
				t.Errorf("%s has op code %d; it has an entry of its own", k, code)
			}
			continue
		}
		if !ok {
			t.Errorf("%s has no op code", k)
			continue
		}
		if back, _ := StridedKernel(code); back != k {
			t.Errorf("StridedKernel(%d) = %s, want %s", code, back, k)
		}
		def := fmt.Sprintf("#define CGT_OP_%s %d\n", strings.ToUpper(k.String()), code)
		if !strings.Contains(cu, def) {
			t.Errorf("kernels.cu lacks %q", strings.TrimSpace(def))
		}
	}
	if !strings.Contains(cu, fmt.Sprintf("#define CGT_MAX_RANK %d\n", ops.MaxRank)) {
		t.Errorf("kernels.cu's CGT_MAX_RANK is not ops.MaxRank (%d)", ops.MaxRank)
	}
	if _, ok := StridedKernel(int32(len(stridedOps))); ok {
		t.Error("StridedKernel past the last code: ok")
	}
}

func kernelsCU(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("kernels.cu")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
