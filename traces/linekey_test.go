package traces

import (
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// keyReuseTrace is a trace whose reader hands the key of "call f0" to
// "call f1", and f1's to f0's, once its memo is remade: defs of one and two params, a call of
// each, then distinct notes enough to fill the memo, then the calls again
// in the other order. A cache by LineKey that did not check the name would
// take f1's call for f0's (an arity problem).
func keyReuseTrace() string {
	var b strings.Builder
	b.WriteString(`{"cgtviz": 1}` + "\n")
	b.WriteString(`{"op": "def", "fn": "f0", "params": ["x"], "body": [{"out": "y", "k": "add", "a": "x", "b": 1}], "returns": ["y"]}` + "\n")
	b.WriteString(`{"op": "def", "fn": "f1", "params": ["x", "z"], "body": [{"out": "y", "k": "add", "a": "x", "b": "z"}], "returns": ["y"]}` + "\n")
	b.WriteString(`{"op": "tensor", "name": "x", "shape": [4], "init": "ones"}` + "\n")
	b.WriteString(`{"op": "call", "fn": "f0", "args": ["x"], "out": ["y"]}` + "\n")
	b.WriteString(`{"op": "call", "fn": "f1", "args": ["x", "x"], "out": ["y"]}` + "\n")
	// The tensor and the two calls are keys 1 to 3, the notes 4 on: the
	// memo is full at the note that would be its 16,385th line, which
	// is remade with that note as key 1, so that the calls after the
	// last note get keys 2 and 3 again, in the other order.
	for i := 0; i < memoLines-2; i++ {
		fmt.Fprintf(&b, `{"op": "note", "text": "n%d"}`+"\n", i)
	}
	b.WriteString(`{"op": "call", "fn": "f1", "args": ["x", "x"], "out": ["y"]}` + "\n")
	b.WriteString(`{"op": "call", "fn": "f0", "args": ["x"], "out": ["y"]}` + "\n")
	b.WriteString(`{"op": "call", "fn": "f1", "args": ["x", "x"], "out": ["y"]}` + "\n")
	return b.String()
}

// TestLineKey checks the reader's line keys: one per distinct text, in
// the order the texts first came, shared by the records of one text, none
// for a def (its line does not come again), and handed out anew once the
// memo is remade.
func TestLineKey(t *testing.T) {
	text := `{"cgtviz": 1}
{"op": "def", "fn": "f", "params": ["x"], "body": [{"out": "y", "k": "add", "a": "x", "b": 1}], "returns": ["y"]}
{"op": "tensor", "name": "x", "shape": [4], "init": "ones"}
{"op": "step"}
{"op": "call", "fn": "f", "args": ["x"], "out": ["y"]}
{"op": "step"}
{"op": "call", "fn": "f", "args": ["x"], "out": ["y"]}
{"op": "call", "fn": "f", "args": ["x"], "out": ["z"]}
`
	tr, err := readAll(strings.NewReader(text), "t")
	if err != nil {
		t.Fatal(err)
	}
	var keys []int
	for _, rec := range tr.Records {
		keys = append(keys, rec.LineKey())
	}
	if want := []int{0, 1, 2, 3, 2, 3, 4}; fmt.Sprint(keys) != fmt.Sprint(want) {
		t.Errorf("keys %v, want %v", keys, want)
	}
	if k := (&Record{Op: OpStep}).LineKey(); k != 0 {
		t.Errorf("a record built in code has key %d, want 0", k)
	}

	if tr, err = readAll(strings.NewReader(keyReuseTrace()), "t"); err != nil {
		t.Fatal(err)
	}
	calls := map[string][]int{}
	for _, rec := range tr.Records {
		if rec.Op == OpCall {
			calls[rec.Fn] = append(calls[rec.Fn], rec.LineKey())
		}
	}
	if got := fmt.Sprint(calls); got != "map[f0:[2 3] f1:[3 2 2]]" {
		t.Errorf("call keys %s, want f0 [2 3] and f1 [3 2 2] (the memo remade once)", got)
	}
}

// TestCheckLineKeyReused checks that the checker's cache by line key finds
// a call's def by its name when a key comes again for another text.
func TestCheckLineKeyReused(t *testing.T) {
	if ps := Check(strings.NewReader(keyReuseTrace()), "t"); len(ps) > 0 {
		t.Fatalf("want no problem, got:\n%s", Problems(ps).Error())
	}
	bad := strings.Replace(keyReuseTrace(), `{"op": "call", "fn": "f0", "args": ["x"], "out": ["y"]}`+"\n"+`{"op": "call", "fn": "f1"`, `{"op": "call", "fn": "f0", "args": ["x"], "out": ["y"]}`+"\n"+`{"op": "call", "fn": "f0", "args": ["x", "x"], "out": ["y"]}`+"\n"+`{"op": "call", "fn": "f1"`, 1)
	if ps := Check(strings.NewReader(bad), "t"); len(ps) != 1 || !strings.Contains(ps[0].Msg, "f0") {
		t.Fatalf("want one problem about f0's arity, got %v", ps)
	}
}

// TestMemoPrediction reads lines drawn at random from a few, in runs that
// repeat (a loop) and runs that break the loop, with a def, a bad line
// and a config record among them (each of which the memo does not hold,
// or drops): every record must be what the line alone reads as, whichever
// way the memo found it (the entry after the last one, the one two after
// the one before, or the map).
func TestMemoPrediction(t *testing.T) {
	lines := []string{
		`{"op": "step"}`,
		`{"op": "call", "fn": "f", "args": ["x"], "out": ["y"]}`,
		`{"op": "call", "fn": "g", "args": ["y"], "out": ["z"]}`,
		`{"op": "del", "names": ["y"]}`,
		`{"op": "tensor", "name": "x", "shape": [4], "init": "ones"}`,
		`{"op": "call", "fn": "f", "args": ["x"], "out": ["y"]} `,
		`{"op": "note", "text": "a"}`,
	}
	odd := []string{
		`{"op": "def", "fn": "h", "params": ["x"], "body": [{"out": "y", "k": "add", "a": "x", "b": 1}], "returns": ["y"]}`,
		`{"op": "bogus"}`,
		`{"op": "config", "warmup_runs": 1}`,
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var text []string
	loop := []int{0, 1, 0, 2, 3}
	for len(text) < 3000 {
		switch r := rng.IntN(10); {
		case r < 6: // the loop, from its start
			for _, i := range loop {
				text = append(text, lines[i])
			}
		case r < 9:
			text = append(text, lines[rng.IntN(len(lines))])
		default:
			text = append(text, odd[rng.IntN(len(odd))])
		}
	}
	head := `{"cgtviz": 1}`
	rd, err := NewReader(strings.NewReader(head+"\n"+strings.Join(text, "\n")+"\n"), "t")
	if err != nil {
		t.Fatal(err)
	}
	alone := func(line string) (Record, error) {
		r, err := NewReader(strings.NewReader(head+"\n"+line+"\n"), "t")
		if err != nil {
			t.Fatal(err)
		}
		return r.Next()
	}
	for i, line := range text {
		got, gerr := rd.Next()
		want, werr := alone(line)
		if (gerr == nil) != (werr == nil) {
			t.Fatalf("line %d %s: error %v, alone %v", i+2, line, gerr, werr)
		}
		got.Line, want.Line = 0, 0
		if !reflect.DeepEqual(sansKey(got), sansKey(want)) {
			t.Fatalf("line %d %s:\n got %+v\nwant %+v", i+2, line, got, want)
		}
	}
	if _, err := rd.Next(); err != io.EOF {
		t.Fatalf("after the last line: %v", err)
	}
}
