// Command allocator-oracle writes random allocation sequences and the
// layout engine/alloc predicts for each, to compare with PyTorch's real
// caching allocator on a GPU (replay.py):
//
//	go run ./tools/allocator-oracle -out tools/allocator-oracle
//	python3 tools/allocator-oracle/replay.py tools/allocator-oracle/sequences.json \
//	    --expected tools/allocator-oracle/expected.json --out actual.json
//
// A sequence runs in a fresh state, in the default pool (streams 0 and 1)
// or in one private pool (stream 0). Its result is the pool's segments in
// the order of the first allocation that landed in each, as offsets within
// the segment, so that addresses never matter.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"

	"github.com/cgtviz/cgtviz/engine/alloc"
	"github.com/cgtviz/cgtviz/engine/device"
)

// Sequence is one entry of sequences.json. Ops are ["a", id, bytes,
// stream] and ["f", id].
type Sequence struct {
	Name string  `json:"name"`
	Pool string  `json:"pool"`
	Ops  [][]any `json:"ops"`
}

// Segment is one segment of a result: its size and its blocks as [offset,
// size, allocated].
type Segment struct {
	SegmentSize int64    `json:"segment_size"`
	Blocks      [][3]any `json:"blocks"`
}

// Result is one entry of expected.json.
type Result struct {
	Name     string    `json:"name"`
	Segments []Segment `json:"segments"`
}

func main() {
	out := flag.String("out", "tools/allocator-oracle", "directory for sequences.json and expected.json")
	n := flag.Int("n", 60, "number of sequences")
	seed := flag.Uint64("seed", 2026, "random seed")
	flag.Parse()
	if err := run(*out, *n, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "allocator-oracle:", err)
		os.Exit(1)
	}
}

func run(out string, n int, seed uint64) error {
	seqs := Generate(n, seed)
	var results []Result
	for _, s := range seqs {
		r, err := Predict(s)
		if err != nil {
			return fmt.Errorf("sequence %s: %w", s.Name, err)
		}
		results = append(results, r)
	}
	if err := writeJSON(filepath.Join(out, "sequences.json"), seqs); err != nil {
		return err
	}
	return writeJSON(filepath.Join(out, "expected.json"), results)
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// boundaries are sizes at the edges of the allocator's rules.
var boundaries = []int64{1, 511, 512, 513, 1 << 20, 1<<20 + 1, 10 << 20, 10<<20 + 1, 11<<20 + 1, 20 << 20, 2<<20 - 512}

func randomSize(r *rand.Rand) int64 {
	switch r.IntN(12) {
	case 0:
		return boundaries[r.IntN(len(boundaries))]
	case 1, 2, 3, 4:
		return 1 + r.Int64N(8192)
	case 5, 6:
		return 1 + r.Int64N(1<<20+1<<19)
	case 7, 8, 9:
		return 1<<20 + r.Int64N(12<<20)
	default:
		return 10<<20 + r.Int64N(70<<20)
	}
}

// Generate makes n sequences, alternating pools.
func Generate(n int, seed uint64) []Sequence {
	r := rand.New(rand.NewPCG(seed, 11))
	var seqs []Sequence
	for i := 0; i < n; i++ {
		s := Sequence{Name: fmt.Sprintf("seq%02d", i), Pool: "default"}
		if i%2 == 1 {
			s.Pool = "private"
		}
		var live []int
		next := 0
		for k := 10 + r.IntN(60); k > 0; k-- {
			if len(live) > 0 && r.IntN(5) < 2 {
				j := r.IntN(len(live))
				s.Ops = append(s.Ops, []any{"f", live[j]})
				live = slices.Delete(live, j, j+1)
				continue
			}
			stream := 0
			if s.Pool == "default" {
				stream = r.IntN(2)
			}
			s.Ops = append(s.Ops, []any{"a", next, randomSize(r), stream})
			live = append(live, next)
			next++
		}
		seqs = append(seqs, s)
	}
	return seqs
}

// bump is a SegmentSource with plenty of memory and fresh addresses.
type bump struct{ next device.Ptr }

func (b *bump) MallocSegment(size int64) (device.Ptr, error) {
	p := b.next
	b.next += device.Ptr((size + 2<<20 - 1) / (2 << 20) * (2 << 20))
	return p, nil
}
func (b *bump) FreeSegment(device.Ptr) error { return nil }
func (b *bump) MemInfo() (int64, int64)      { return 1 << 40, 1 << 40 }

// Predict runs a sequence through engine/alloc.
func Predict(s Sequence) (Result, error) {
	a := alloc.New(&bump{next: 1 << 40}, 0, alloc.Options{})
	pool := alloc.DefaultPool
	if s.Pool == "private" {
		pool = a.NewPoolID()
		if err := a.BeginAllocateToPool(pool, 0); err != nil {
			return Result{}, err
		}
	}
	ptrs := map[int]device.Ptr{}
	var order []device.Ptr // allocation addresses in op order
	for i, op := range s.Ops {
		id := op[1].(int)
		switch op[0] {
		case "a":
			p, err := a.Malloc(op[2].(int64), device.Stream(op[3].(int)))
			if err != nil {
				return Result{}, fmt.Errorf("op %d: %w", i, err)
			}
			ptrs[id] = p
			order = append(order, p)
		case "f":
			if err := a.Free(ptrs[id]); err != nil {
				return Result{}, fmt.Errorf("op %d: %w", i, err)
			}
		}
	}
	segs := a.PoolSegments(pool)
	first := func(s alloc.Segment) int {
		for i, p := range order {
			if p >= s.Addr && p < s.Addr+device.Ptr(s.Size) {
				return i
			}
		}
		return len(order)
	}
	slices.SortStableFunc(segs, func(x, y alloc.Segment) int { return first(x) - first(y) })
	r := Result{Name: s.Name, Segments: []Segment{}}
	for _, sg := range segs {
		out := Segment{SegmentSize: sg.Size, Blocks: [][3]any{}}
		for _, b := range sg.Blocks {
			out.Blocks = append(out.Blocks, [3]any{int64(b.Addr - sg.Addr), b.Size, b.Allocated})
		}
		r.Segments = append(r.Segments, out)
	}
	return r, nil
}
