package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
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
