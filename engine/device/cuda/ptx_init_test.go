package cuda

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestEmbeddedPTXDefinesInitKernels: the init kernels (InitSymbols) have
// their .entry, as every kernel of the op set has.
func TestEmbeddedPTXDefinesInitKernels(t *testing.T) {
	entries := Entries(PTX)
	for _, s := range InitSymbols() {
		if !slices.Contains(entries, s) {
			t.Errorf("the embedded PTX has no .entry %s", s)
		}
	}
}

// TestRandPTXConstants: cgtviz_rand's PTX multiplies and adds by
// traces.Rand's constants (traces/rand.go), as the signed 64-bit
// immediates nvcc writes, and scales by 2^-24, with nothing else: the
// body can only be checked on a GPU (devicetest's Init), but a constant
// mistyped by hand is caught here.
func TestRandPTXConstants(t *testing.T) {
	body := entryBody(t, "cgtviz_rand")
	want := []uint64{0x9E3779B97F4A7C15, 0xD1B54A32D192ED03, 0x2545F4914F6CDD1D, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB}
	var got []uint64
	for _, m := range regexp.MustCompile(`(?m)^\s*(?:mul\.lo\.s64|add\.s64)\s+%rd\d+,\s*%rd\d+,\s*(-?\d+);`).FindAllStringSubmatch(body, -1) {
		v, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, uint64(v))
	}
	if !slices.Equal(got, want) {
		t.Errorf("cgtviz_rand's constants: %#x, want %#x", got, want)
	}
	for _, shift := range []string{"30;", "27;", "31;", "40;"} {
		if !regexp.MustCompile(`shr\.u64\s+%rd\d+,\s*%rd\d+,\s*` + shift).MatchString(body) {
			t.Errorf("cgtviz_rand shifts no value right by %s", shift)
		}
	}
	if !strings.Contains(body, "mul.rn.f32") || !strings.Contains(body, "0f33800000") {
		t.Error("cgtviz_rand does not scale by 2^-24 (0f33800000)")
	}
}

// entryBody returns the text of one .entry of the embedded PTX.
func entryBody(t *testing.T, name string) string {
	t.Helper()
	i := strings.Index(PTX, ".entry "+name+"(")
	if i < 0 {
		t.Fatalf("no .entry %s", name)
	}
	rest := PTX[i:]
	j := strings.Index(rest, "\n}\n")
	if j < 0 {
		t.Fatalf(".entry %s has no end", name)
	}
	return rest[:j]
}
