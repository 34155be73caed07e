package sessions

import (
	"math/rand/v2"
	"testing"
)

// TestSeq pushes sequences of several shapes and reads every value back;
// a repeating one must be stored in a few bytes a chunk, one without a
// period whole.
func TestSeq(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	tests := []struct {
		name string
		n    int
		at   func(i int) uint32
		// maxBytes bounds Bytes once all are pushed (0: no bound).
		maxBytes int64
	}{
		{"empty", 0, nil, 0},
		{"short", 10, func(i int) uint32 { return uint32(i) }, 0},
		{"constant", 5*seqChunk + 7, func(int) uint32 { return 3 }, 4*seqChunk + 5*4},
		{"period 20, loop of 10 calls", 9*seqChunk + 1, func(i int) uint32 { return uint32(i % 20) }, 4*seqChunk + 9*20*4},
		// A period that does not divide the chunk: each chunk starts at
		// another phase.
		{"period 7,001", 6 * seqChunk, func(i int) uint32 { return uint32(i%7001) * 3 }, 4*seqChunk + 6*7001*4},
		{"growing, then steady", 4 * seqChunk, func(i int) uint32 {
			if i < seqChunk+100 {
				return uint32(i)
			}
			return uint32(i % 3)
		}, 4*seqChunk + 2*4*seqChunk + 2*3*4},
		{"random", 3*seqChunk + 5, func(int) uint32 { return r.Uint32N(4) }, 0},
		// Half a chunk is the longest period worth storing; past it the
		// chunk is kept whole.
		{"period of half a chunk", 2 * seqChunk, func(i int) uint32 { return uint32(i % (seqChunk / 2)) }, 4*seqChunk + 2*4*seqChunk/2},
		{"period past half a chunk", 2 * seqChunk, func(i int) uint32 { return uint32(i % (seqChunk/2 + 1)) }, 4*seqChunk + 2*4*seqChunk},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var q Seq[uint32]
			want := make([]uint32, tt.n)
			for i := range want {
				want[i] = tt.at(i)
				q.Push(want[i])
				if q.Len() != i+1 {
					t.Fatalf("Len %d after %d pushes", q.Len(), i+1)
				}
			}
			for i, w := range want {
				if got := q.At(i); got != w {
					t.Fatalf("At(%d) = %d, want %d", i, got, w)
				}
			}
			// Skim over ranges across chunks: the maximum and its first
			// index are those of a full pass, and no index is seen twice
			// or out of order.
			for _, rg := range [][2]int{{0, tt.n}, {3, tt.n - 3}, {seqChunk - 5, 2*seqChunk + 9}, {tt.n / 3, tt.n / 2}} {
				lo, hi := max(rg[0], 0), min(rg[1], tt.n)
				wantMax, wantAt := uint32(0), -1
				wantSet, gotSet := map[uint32]bool{}, map[uint32]bool{}
				for i := lo; i < hi; i++ {
					wantSet[want[i]] = true
					if wantAt < 0 || want[i] > wantMax {
						wantMax, wantAt = want[i], i
					}
				}
				gotMax, gotAt, prev := uint32(0), -1, lo-1
				q.Skim(lo, hi, func(i int, v uint32) {
					if i <= prev || i >= hi || v != want[i] {
						t.Fatalf("Skim(%d, %d) gave %d = %d after %d", lo, hi, i, v, prev)
					}
					prev = i
					gotSet[v] = true
					if gotAt < 0 || v > gotMax {
						gotMax, gotAt = v, i
					}
				})
				if len(gotSet) != len(wantSet) {
					t.Errorf("Skim(%d, %d) saw %d distinct values, want %d", lo, hi, len(gotSet), len(wantSet))
				}
				if gotMax != wantMax || gotAt != wantAt {
					t.Errorf("Skim(%d, %d): max %d at %d, want %d at %d", lo, hi, gotMax, gotAt, wantMax, wantAt)
				}
			}
			if b := q.Bytes(4); tt.maxBytes > 0 && b > tt.maxBytes {
				t.Errorf("%d values take %d bytes, want at most %d", tt.n, b, tt.maxBytes)
			}
		})
	}
}

// FuzzSeq: whatever is pushed reads back, repetitions included.
func FuzzSeq(f *testing.F) {
	f.Add([]byte{1, 2, 3}, uint16(100), uint32(3*seqChunk))
	f.Add([]byte{0}, uint16(1), uint32(seqChunk))
	f.Fuzz(func(t *testing.T, pattern []byte, noiseEvery uint16, n uint32) {
		if len(pattern) == 0 {
			return
		}
		n %= 4 * seqChunk
		var q Seq[uint8]
		want := make([]uint8, n)
		for i := range want {
			want[i] = pattern[i%len(pattern)]
			if noiseEvery > 0 && i%int(noiseEvery) == 0 {
				want[i] ^= 0x80
			}
			q.Push(want[i])
		}
		if q.Len() != len(want) {
			t.Fatalf("Len %d, want %d", q.Len(), len(want))
		}
		for i, w := range want {
			if got := q.At(i); got != w {
				t.Fatalf("At(%d) = %d, want %d", i, got, w)
			}
		}
	})
}
