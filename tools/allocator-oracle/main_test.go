package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/cgtviz/cgtviz/engine/alloc"
	"github.com/cgtviz/cgtviz/engine/device"
)

// TestCommittedFilesCurrent: sequences.json and expected.json are what the
// generator and engine/alloc give now, so the GPU comparison tests the
// current code. After a deliberate change: go run ./tools/allocator-oracle.
func TestCommittedFilesCurrent(t *testing.T) {
	dir := t.TempDir()
	if err := run(dir, 60, 2026); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"sequences.json", "expected.json"} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run go run ./tools/allocator-oracle", name)
		}
	}
}

// TestSequencesMix: both pools, both streams, frees and huge sizes occur.
func TestSequencesMix(t *testing.T) {
	seqs := Generate(60, 2026)
	var private, stream1, frees, huge, boundary int
	for _, s := range seqs {
		if s.Pool == "private" {
			private++
		}
		for _, op := range s.Ops {
			if op[0] == "f" {
				frees++
				continue
			}
			if op[3].(int) == 1 {
				if s.Pool == "private" {
					t.Fatalf("%s: private sequence on stream 1", s.Name)
				}
				stream1++
			}
			n := op[2].(int64)
			if n >= 10<<20 {
				huge++
			}
			for _, b := range boundaries {
				if n == b {
					boundary++
				}
			}
		}
	}
	if len(seqs) != 60 || private != 30 || stream1 == 0 || frees == 0 || huge == 0 || boundary == 0 {
		t.Errorf("mix: %d sequences, %d private, %d on stream 1, %d frees, %d huge, %d boundary sizes", len(seqs), private, stream1, frees, huge, boundary)
	}
}

// descending is a SegmentSource whose segments get decreasing addresses.
type descending struct{ next device.Ptr }

func (d *descending) MallocSegment(size int64) (device.Ptr, error) {
	d.next -= device.Ptr((size + 2<<20 - 1) / (2 << 20) * (2 << 20))
	return d.next, nil
}
func (d *descending) FreeSegment(device.Ptr) error { return nil }
func (d *descending) MemInfo() (int64, int64)      { return 1 << 40, 1 << 40 }

// run1Order is the order in which run 1's replay.py really freed: it kept
// the last tensor in a local variable, so a free of the last allocated
// tensor happened only after the next allocation (or when the sequence
// ended, before the snapshot).
func run1Order(s Sequence) Sequence {
	out := Sequence{Name: s.Name, Pool: s.Pool}
	last, pending := -1, false
	for _, op := range s.Ops {
		id := op[1].(int)
		switch op[0] {
		case "a":
			out.Ops = append(out.Ops, op)
			if pending {
				out.Ops = append(out.Ops, []any{"f", last})
				pending = false
			}
			last = id
		case "f":
			if id == last {
				pending = true
				continue
			}
			out.Ops = append(out.Ops, op)
		}
	}
	if pending {
		out.Ops = append(out.Ops, []any{"f", last})
	}
	return out
}

func normalize(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var x any
	if err := json.Unmarshal(b, &x); err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(x)
	return string(b)
}

// TestRun1Explained: engine/alloc reproduces every layout of the first GPU
// run (h200-run1-actual.json, 34/60 "matches" then) once two faults of the
// comparison, not of the allocator, are modelled: run 1 freed the last
// tensor one allocation late (run1Order), and the real segment addresses
// were not increasing, which decides best-fit ties between equal free
// blocks of different segments (increasing or decreasing addresses cover
// all 60).
func TestRun1Explained(t *testing.T) {
	b, err := os.ReadFile("h200-run1-actual.json")
	if err != nil {
		t.Fatal(err)
	}
	var actual []struct {
		Name     string `json:"name"`
		Segments any    `json:"segments"`
	}
	if err := json.Unmarshal(b, &actual); err != nil {
		t.Fatal(err)
	}
	seqs, err := ReadSequences("sequences.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(actual) != len(seqs) {
		t.Fatalf("%d results for %d sequences", len(actual), len(seqs))
	}
	var asIs, late, ties int
	for i, s := range seqs {
		if actual[i].Name != s.Name {
			t.Fatalf("result %d is %s, sequence %s", i, actual[i].Name, s.Name)
		}
		want := normalize(t, actual[i].Segments)
		r, err := Predict(s)
		if err != nil {
			t.Fatal(err)
		}
		if normalize(t, r.Segments) == want {
			asIs++
		}
		up, err := Predict(run1Order(s))
		if err != nil {
			t.Fatal(err)
		}
		down, err := predictOn(run1Order(s), &descending{next: 1 << 46})
		if err != nil {
			t.Fatal(err)
		}
		switch want {
		case normalize(t, up.Segments):
			late++
		case normalize(t, down.Segments):
			late++
			ties++
		default:
			t.Errorf("%s: PyTorch's run-1 layout is not reproduced", s.Name)
		}
	}
	t.Logf("run 1: %d/60 as compared then, %d/60 with its late frees, %d of them with decreasing segment addresses", asIs, late, ties)
	if asIs != 34 {
		t.Errorf("%d/60 match as run 1 compared them, run 1 reported 34", asIs)
	}
}

// TestPredictAt: PyTorch's addresses replace the increasing ones, and a
// best-fit tie between two whole free segments follows them (seq00 of run 1:
// the later segment had the lower address and took the allocation).
func TestPredictAt(t *testing.T) {
	s := Sequence{Name: "tie", Pool: "default", Ops: [][]any{
		{"a", 0, int64(82946680), 0}, {"a", 1, int64(82639245), 0},
		{"f", 0}, {"f", 1}, {"a", 2, int64(26411116), 0},
	}}
	first := `[{"segment_size":83886080,"blocks":[[0,26411520,true],[26411520,57474560,false]]},{"segment_size":83886080,"blocks":[[0,83886080,false]]}]`
	second := `[{"segment_size":83886080,"blocks":[[0,83886080,false]]},{"segment_size":83886080,"blocks":[[0,26411520,true],[26411520,57474560,false]]}]`
	for _, c := range []struct {
		addrs []uint64
		want  string
	}{
		{[]uint64{0x7f0000000000, 0x7f0010000000}, first},
		{[]uint64{0x7f0010000000, 0x7f0000000000}, second},
		{nil, first},
		{[]uint64{0x7f0010000000}, first}, // past PyTorch's: fresh, higher
	} {
		r, err := PredictAt(s, c.addrs)
		if err != nil {
			t.Fatal(err)
		}
		if got := normalize(t, r.Segments); got != normalize(t, json.RawMessage(c.want)) {
			t.Errorf("addresses %#x:\n got %s\nwant %s", c.addrs, got, c.want)
		}
	}
}

// TestPredictWith: -predict reads sequences.json back and, given the
// addresses the increasing source hands out, prints expected.json's
// layouts.
func TestPredictWith(t *testing.T) {
	seqs, err := ReadSequences("sequences.json")
	if err != nil {
		t.Fatal(err)
	}
	if normalize(t, seqs) != normalize(t, Generate(60, 2026)) {
		t.Fatal("ReadSequences differs from Generate")
	}
	var addrs []Addresses
	for _, s := range seqs[:6] {
		src := &bump{next: 1 << 40}
		var got []uint64
		rec := recorder{src: src, addrs: &got}
		if _, err := predictOn(s, rec); err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, Addresses{Name: s.Name, SegmentAddresses: got})
	}
	path := filepath.Join(t.TempDir(), "addresses.json")
	b, _ := json.Marshal(addrs)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := predictWith(&out, "sequences.json", path); err != nil {
		t.Fatal(err)
	}
	var got, want []Result
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile("expected.json")
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if normalize(t, got) != normalize(t, want[:6]) {
		t.Errorf("-predict with the increasing addresses differs from expected.json")
	}
	if err := predictWith(&out, "sequences.json", "no-such-file.json"); err == nil {
		t.Error("missing addresses file: no error")
	}
}

// recorder records the addresses a SegmentSource hands out.
type recorder struct {
	src   alloc.SegmentSource
	addrs *[]uint64
}

func (r recorder) MallocSegment(size int64) (device.Ptr, error) {
	p, err := r.src.MallocSegment(size)
	*r.addrs = append(*r.addrs, uint64(p))
	return p, err
}
func (r recorder) FreeSegment(p device.Ptr) error { return r.src.FreeSegment(p) }
func (r recorder) MemInfo() (int64, int64)        { return r.src.MemInfo() }

// TestRun2: the second GPU run (after the replay fix), offline: given the
// addresses PyTorch's segments got, engine/alloc predicts every layout.
func TestRun2(t *testing.T) {
	b, err := os.ReadFile("h200-run2-actual.json")
	if err != nil {
		t.Fatal(err)
	}
	var actual []struct {
		Name             string   `json:"name"`
		Segments         any      `json:"segments"`
		SegmentAddresses []uint64 `json:"segment_addresses"`
	}
	if err := json.Unmarshal(b, &actual); err != nil {
		t.Fatal(err)
	}
	seqs, err := ReadSequences("sequences.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(actual) != len(seqs) {
		t.Fatalf("%d results for %d sequences", len(actual), len(seqs))
	}
	static := 0
	for i, s := range seqs {
		if actual[i].Name != s.Name || actual[i].Segments == nil {
			t.Fatalf("result %d: %s, no layout for %s", i, actual[i].Name, s.Name)
		}
		want := normalize(t, actual[i].Segments)
		r, err := PredictAt(s, actual[i].SegmentAddresses)
		if err != nil {
			t.Fatal(err)
		}
		if normalize(t, r.Segments) != want {
			t.Errorf("%s: PyTorch's layout is not predicted", s.Name)
		}
		if r, _ = Predict(s); normalize(t, r.Segments) == want {
			static++
		}
	}
	if static != 55 {
		t.Errorf("%d/60 match expected.json, run 2 reported 55", static)
	}
}
