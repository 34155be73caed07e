package sessions

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/traces"
	"github.com/cgtviz/cgtviz/traces/gen"
)

// TestLongMoveSameAsSteps (issue 34 item 15): a long move runs most of its
// records with reused Steps, read ahead, with the keyframes' spacing set
// for where it ends; a session that got there in one move must be the one
// that stepped there record by record: the same summaries, the same full
// Steps (cached or recomputed), the same keyframes, the same states when
// going back; and so after a move that starts past the frontier's start
// and after a canceled one. Continue, which runs live the same way, stops
// on a breakpoint with the Step of the record it stops on.
func TestLongMoveSameAsSteps(t *testing.T) {
	for _, seed := range []int64{3} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			tr := gen.Trace(seed, gen.Options{Records: 2*aheadMin + 1000, Steps: gen.StepsAlways})
			path := filepath.Join(t.TempDir(), "long.cgt.jsonl")
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := tr.Write(f); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			// Few keyframes: every clone of a big random tree is costly.
			ref := open(t, path, Options{MaxKeyframes: 64})
			var steps []string
			for {
				st, ok := ref.Step()
				if !ok {
					break
				}
				steps = append(steps, digest(st))
			}
			ix, err := traces.OpenIndex(context.Background(), path, false)
			if err != nil {
				t.Fatal(err)
			}
			defer ix.Close()
			ix.Wait()
			s, err := NewRecords(Indexed(ix), Options{Source: path, MaxKeyframes: 64})
			if err != nil {
				t.Fatal(err)
			}
			n := s.Len()
			if n != ref.Len() {
				t.Fatalf("%d records, want %d", n, ref.Len())
			}
			// A short move, a canceled long one, then the long move
			// to the end from where it stopped.
			if err := s.Goto(100); err != nil {
				t.Fatal(err)
			}
			s.Watch(func(done, total int) bool { return done < 2*watchEvery })
			if err := s.Goto(n); err != ErrCanceled {
				t.Fatalf("a canceled move: %v", err)
			}
			s.Watch(nil)
			if p := s.Pos(); p < 100+2*watchEvery || p >= n {
				t.Fatalf("the canceled move stopped at %d", p)
			}
			if err := s.Goto(n); err != nil {
				t.Fatal(err)
			}
			if got, want := fmt.Sprint(s.Keyframes()), fmt.Sprint(ref.Keyframes()); got != want {
				t.Errorf("keyframes (count, spacing) %s, want %s", got, want)
			}
			for i := range n {
				a, _ := s.Summary(i)
				b, _ := ref.Summary(i)
				if !reflect.DeepEqual(a, b) {
					t.Fatalf("summary %d: %+v, want %+v", i, a, b)
				}
			}
			for i := n - 1; i >= 0; i -= 1 + i%397 {
				if got := digest(s.StepAt(i)); got != steps[i] {
					t.Fatalf("StepAt(%d):\n%s\nwant\n%s", i, got, steps[i])
				}
			}
			// Continue runs live as a long move does: it stops on a
			// breakpoint near the end with that record's Step, then
			// runs to the end with the last one's.
			c, err := NewRecords(Indexed(ix), Options{Source: path, MaxKeyframes: 64})
			if err != nil {
				t.Fatal(err)
			}
			stop := n - 10
			if err := c.AddBreakpoint(Breakpoint{Line: tr.Records[stop].Line}); err != nil {
				t.Fatal(err)
			}
			hit, err := c.Continue()
			if err != nil || !hit.Found || hit.Index != stop || c.Pos() != stop+1 {
				t.Fatalf("continue: %+v, %v at %d, want a hit at %d", hit, err, c.Pos(), stop)
			}
			if got := digest(c.StepAt(stop)); got != steps[stop] {
				t.Fatalf("StepAt(%d) after continue:\n%s\nwant\n%s", stop, got, steps[stop])
			}
			c.RemoveBreakpoint(Breakpoint{Line: tr.Records[stop].Line})
			if hit, err := c.Continue(); err != nil || hit.Found || c.Pos() != n {
				t.Fatalf("continue to the end: %+v, %v at %d", hit, err, c.Pos())
			}
			for _, i := range []int{n - 1, n - 2, stop, n / 3} {
				if got := digest(c.StepAt(i)); got != steps[i] {
					t.Fatalf("StepAt(%d) after continue:\n%s\nwant\n%s", i, got, steps[i])
				}
				a, _ := c.Summary(i)
				b, _ := ref.Summary(i)
				if !reflect.DeepEqual(a, b) {
					t.Fatalf("summary %d after continue: %+v, want %+v", i, a, b)
				}
			}
			for _, p := range []int{n - stepCache - 3, n / 2} {
				if err := s.Goto(p); err != nil {
					t.Fatal(err)
				}
				if err := ref.Goto(p); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(canonical(s.State()), canonical(ref.State())) {
					t.Fatalf("at %d the state differs from the stepped session's", p)
				}
			}
		})
	}
}

// digest is what TestLongMoveSameAsSteps compares of a Step.
func digest(st *engine.Step) string {
	if st == nil {
		return "nil"
	}
	s := fmt.Sprintf("%d line %d %s %s %s node %d parent %d dev %d cp %v err %q", st.Index, st.Line, st.Op, st.Fn, st.Action, st.Node, st.Parent, st.Device, st.Checkpoint, st.ErrText())
	for _, ev := range st.Events {
		s += fmt.Sprintf("\n  %s %s %v", ev.Kind, ev.Text(), ev.Tensors)
	}
	for _, f := range st.ExpectFailures {
		s += "\n  expect " + f.Msg
	}
	return s
}
