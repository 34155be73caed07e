// Command allocator-oracle writes random allocation sequences and the
// layout engine/alloc predicts for each, to compare with PyTorch's real
// caching allocator on a GPU (replay.py):
//
//	go run ./tools/allocator-oracle -out tools/allocator-oracle
//	go build -o .bin/allocator-oracle-predict ./tools/allocator-oracle
//	python3 tools/allocator-oracle/replay.py tools/allocator-oracle/sequences.json \
//	    --expected tools/allocator-oracle/expected.json \
//	    --predictor .bin/allocator-oracle-predict --out actual.json
//
// A sequence runs in a fresh state, in the default pool (streams 0 and 1)
// or in one private pool (stream 0). Its result is the pool's segments in
// the order of the first allocation that landed in each, as offsets within
// the segment.
//
// Offsets alone do not make a layout address-free: best fit breaks a tie
// between free blocks of equal size by address, also between segments, and
// the addresses cudaMalloc hands out are not increasing. expected.json uses
// increasing addresses; -predict redoes the prediction with the segment
// addresses PyTorch got (replay.py records them), which is the faithful
// comparison:
//
//	allocator-oracle -predict addresses.json [-sequences sequences.json]
//
// reads [{"name", "segment_addresses"}] (the addresses of a sequence's
// segments in the order they were created) and prints the predicted
// layouts as JSON.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
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
	predict := flag.String("predict", "", "predict with PyTorch's segment addresses from this JSON file ([{name, segment_addresses}]) and print the layouts")
	seqPath := flag.String("sequences", "", "the sequences for -predict (default: OUT/sequences.json)")
	flag.Parse()
	if *predict != "" {
		if *seqPath == "" {
			*seqPath = filepath.Join(*out, "sequences.json")
		}
		if err := predictWith(os.Stdout, *seqPath, *predict); err != nil {
			fmt.Fprintln(os.Stderr, "allocator-oracle:", err)
			os.Exit(1)
		}
		return
	}
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

// given is a SegmentSource that hands out the addresses PyTorch's
// cudaMalloc returned, in order; past them (the prediction made more
// segments than PyTorch) fresh addresses above all of them.
type given struct {
	addrs []device.Ptr
	k     int
	next  device.Ptr
}

func newGiven(addrs []uint64) *given {
	g := &given{next: 1 << 40}
	for _, a := range addrs {
		g.addrs = append(g.addrs, device.Ptr(a))
		g.next = max(g.next, device.Ptr(a)+1<<40)
	}
	return g
}

func (g *given) MallocSegment(size int64) (device.Ptr, error) {
	if g.k < len(g.addrs) {
		g.k++
		return g.addrs[g.k-1], nil
	}
	p := g.next
	g.next += device.Ptr((size + 2<<20 - 1) / (2 << 20) * (2 << 20))
	return p, nil
}
func (g *given) FreeSegment(device.Ptr) error { return nil }
func (g *given) MemInfo() (int64, int64)      { return 1 << 40, 1 << 40 }

// Predict runs a sequence through engine/alloc, with increasing segment
// addresses.
func Predict(s Sequence) (Result, error) {
	return predictOn(s, &bump{next: 1 << 40})
}

// PredictAt runs a sequence through engine/alloc whose segments get the
// given addresses, in the order they are created: those PyTorch's segments
// got, so that best fit breaks ties between segments as on the GPU.
func PredictAt(s Sequence, addrs []uint64) (Result, error) {
	return predictOn(s, newGiven(addrs))
}

func predictOn(s Sequence, src alloc.SegmentSource) (Result, error) {
	a := alloc.New(src, 0, alloc.Options{})
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

// Addresses is an entry of -predict's input: the addresses of a
// sequence's segments in PyTorch, in the order they were created.
type Addresses struct {
	Name             string   `json:"name"`
	SegmentAddresses []uint64 `json:"segment_addresses"`
}

// ReadSequences reads a sequences.json.
func ReadSequences(path string) ([]Sequence, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var raw []struct {
		Name string              `json:"name"`
		Pool string              `json:"pool"`
		Ops  [][]json.RawMessage `json:"ops"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	seqs := make([]Sequence, 0, len(raw))
	for _, r := range raw {
		s := Sequence{Name: r.Name, Pool: r.Pool}
		for i, op := range r.Ops {
			var kind string
			var nums [3]int64
			want := 2
			if len(op) > 0 {
				if err := json.Unmarshal(op[0], &kind); err != nil {
					return nil, fmt.Errorf("%s op %d: %w", r.Name, i, err)
				}
			}
			if kind == "a" {
				want = 4
			}
			if len(op) != want || (kind != "a" && kind != "f") {
				return nil, fmt.Errorf("%s op %d: malformed", r.Name, i)
			}
			for j := 1; j < want; j++ {
				if err := json.Unmarshal(op[j], &nums[j-1]); err != nil {
					return nil, fmt.Errorf("%s op %d: %w", r.Name, i, err)
				}
			}
			if kind == "a" {
				s.Ops = append(s.Ops, []any{"a", int(nums[0]), nums[1], int(nums[2])})
			} else {
				s.Ops = append(s.Ops, []any{"f", int(nums[0])})
			}
		}
		seqs = append(seqs, s)
	}
	return seqs, nil
}

// predictWith writes, as JSON, the layout of every sequence named in the
// addresses file, predicted with those addresses.
func predictWith(w io.Writer, seqPath, addrPath string) error {
	seqs, err := ReadSequences(seqPath)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(addrPath)
	if err != nil {
		return err
	}
	var addrs []Addresses
	if err := json.Unmarshal(b, &addrs); err != nil {
		return fmt.Errorf("%s: %w", addrPath, err)
	}
	byName := map[string]Sequence{}
	for _, s := range seqs {
		byName[s.Name] = s
	}
	results := []Result{}
	for _, ad := range addrs {
		s, ok := byName[ad.Name]
		if !ok {
			return fmt.Errorf("%s: no sequence %q in %s", addrPath, ad.Name, seqPath)
		}
		r, err := PredictAt(s, ad.SegmentAddresses)
		if err != nil {
			return fmt.Errorf("sequence %s: %w", s.Name, err)
		}
		results = append(results, r)
	}
	out, err := json.MarshalIndent(results, "", " ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(out, '\n'))
	return err
}
