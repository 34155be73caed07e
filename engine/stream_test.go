package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/engine/device/sim"
	"github.com/cgtviz/cgtviz/traces"
	"github.com/cgtviz/cgtviz/traces/gen"
)

// stepDigest is what a test compares of a Step: everything a caller sees,
// copied out (RunStream's Steps are reused buffers).
func stepDigest(s *engine.Step) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %d %s %s dev%d %s node%d parent%d cp%v", s.Index, s.Line, s.Op, s.Fn, s.Device, s.Action, s.Node, s.Parent, s.Checkpoint)
	if s.Err != nil {
		fmt.Fprintf(&b, " err=%q", s.Err.Error())
	}
	for _, ev := range s.Events {
		fmt.Fprintf(&b, "\n  %s %s %v %v", ev.Kind, ev.Text(), ev.Tensors, ev.Ptrs)
	}
	for _, f := range s.ExpectFailures {
		fmt.Fprintf(&b, "\n  expect %s", f.Msg)
	}
	return b.String()
}

// failingRecords yields recs, then fails with err instead of record k (a
// reader meeting a bad line).
type failingRecords struct {
	recs []traces.Record
	k    int
	err  error
	i    int
}

func (f *failingRecords) Next() (traces.Record, error) {
	if f.i == f.k {
		return traces.Record{}, f.err
	}
	if f.i >= len(f.recs) {
		return traces.Record{}, io.EOF
	}
	f.i++
	return f.recs[f.i-1], nil
}

// TestRunStreamMatchesRun runs every scenario trace and random traces with
// Run and with RunStream (reused Steps, records read ahead on a goroutine):
// the steps, their events and the final state must be the same, and so
// must an error of the source at any record (it comes after the records
// before it) and an early stop.
func TestRunStreamMatchesRun(t *testing.T) {
	type trace struct {
		name string
		tr   *traces.Trace
	}
	var trs []trace
	for _, f := range scenarioFiles(t) {
		tr, err := traces.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		trs = append(trs, trace{filepath.Base(f), tr})
	}
	for seed := int64(1); seed <= 20; seed++ {
		trs = append(trs, trace{fmt.Sprintf("random %d", seed), gen.Trace(seed, gen.Options{Records: 400, Additions: seed%2 == 0})})
	}
	errBad := errors.New("line 9: a bad record")
	for _, x := range trs {
		n := len(x.tr.Records)
		for _, tc := range []struct {
			name   string
			failAt int // the source fails instead of this record (-1: never)
			stopAt int // each returns false at this step (-1: never)
		}{
			{"whole", -1, -1},
			{"source fails at the start", 0, -1},
			{"source fails midway", n / 2, -1},
			{"stopped midway", -1, n / 3},
		} {
			run := func(stream bool) ([]string, string, error) {
				var digests []string
				src := &failingRecords{recs: x.tr.Records, k: tc.failAt, err: errBad}
				opts := engine.Options{Devices: simDevices(x.tr.Header.Devices), File: x.name}
				each := func(s *engine.Step) bool {
					digests = append(digests, stepDigest(s))
					return len(digests)-1 != tc.stopAt
				}
				var e *engine.Engine
				var err error
				if stream {
					e, err = engine.RunStream(context.Background(), x.tr.Header, src, opts, each)
				} else {
					e, err = engine.Run(context.Background(), x.tr.Header, src, opts, each)
				}
				if e == nil {
					return digests, "", err
				}
				// The whole view of the end state, the last step's
				// checkpoint included (it reads the last Step's events).
				state, jerr := json.Marshal(e.State())
				if jerr != nil {
					t.Fatal(jerr)
				}
				return digests, string(state), err
			}
			wantSteps, wantState, wantErr := run(false)
			gotSteps, gotState, gotErr := run(true)
			if testDevices != nil {
				// Real devices: each run allocates its own memory, so
				// the two runs' addresses differ; everything else must not.
				wantSteps, wantState = maskAddrs(wantSteps), maskAddr(wantState)
				gotSteps, gotState = maskAddrs(gotSteps), maskAddr(gotState)
			}
			if !errors.Is(gotErr, wantErr) && !(gotErr == nil && wantErr == nil) {
				t.Errorf("%s, %s: RunStream's error %v, Run's %v", x.name, tc.name, gotErr, wantErr)
			}
			if !reflect.DeepEqual(gotSteps, wantSteps) {
				t.Errorf("%s, %s: RunStream gave %d steps, Run %d; first difference:\n%s", x.name, tc.name, len(gotSteps), len(wantSteps), firstDiff(gotSteps, wantSteps))
			}
			if gotState != wantState {
				t.Errorf("%s, %s: RunStream ends in %s, Run in %s", x.name, tc.name, gotState, wantState)
			}
		}
	}
}

func firstDiff(got, want []string) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("step %d: got\n%s\nwant\n%s", i, got[i], want[i])
		}
	}
	return "one is a prefix of the other"
}

// addrRE matches device addresses as the engine prints them: hex, or the
// decimal of a JSON pointer field (12 digits or more; sizes and counts are
// far shorter).
var addrRE = regexp.MustCompile(`0x[0-9a-f]{6,}|\b[0-9]{12,}\b`)

// oomRE matches the part of an out-of-memory message that reads the
// device's free memory at that moment, which differs from run to run.
var oomRE = regexp.MustCompile(` GPU [0-9]+ has a total capacity of .*?(  \(https://[^)]*\))`)

// maskAddr replaces every device address in s by "ADDR", and the memory
// figures of a real device's out-of-memory message by "...".
func maskAddr(s string) string {
	return addrRE.ReplaceAllString(oomRE.ReplaceAllString(s, " GPU ...$1"), "ADDR")
}

func maskAddrs(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = maskAddr(s)
	}
	return out
}

// TestReuseSteps applies scenario and random traces with ReuseSteps
// switched on and off every few records (as a session's long move does):
// every step, read when Apply returns, and the final state are those of
// an engine that never reuses; a Step kept from before the switch (Steps
// of their own) is unchanged by the records after it, and a clone taken
// while Steps are reused is unaffected by the original's next records.
func TestReuseSteps(t *testing.T) {
	var trs []*traces.Trace
	for _, f := range scenarioFiles(t) {
		tr, err := traces.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		trs = append(trs, tr)
	}
	for seed := int64(1); seed <= 20; seed++ {
		trs = append(trs, gen.Trace(seed, gen.Options{Records: 400, Additions: seed%2 == 0}))
	}
	for _, tr := range trs {
		newEngine := func() *engine.Engine {
			// Simulated devices even under CGTVIZ_DEVICE=cuda: the two
			// engines' Steps are compared byte for byte, addresses
			// included, and two GPUs opened one after the other hand out
			// different ones; reusing a Step is the engine's business,
			// the same on any device.
			e, err := engine.New(tr.Header, engine.Options{Devices: sim.Devices(max(tr.Header.Devices, 1)), File: tr.File})
			if err != nil {
				t.Fatal(err)
			}
			return e
		}
		plain, reused := newEngine(), newEngine()
		var kept *engine.Step
		var keptDigest string
		var clone *engine.Engine
		cloneAt := -1
		for i := range tr.Records {
			on := i/3%2 == 1 // three records each way
			reused.ReuseSteps(on)
			want := stepDigest(plain.Apply(&tr.Records[i]))
			got := reused.Apply(&tr.Records[i])
			if d := stepDigest(got); d != want {
				t.Fatalf("%s: record %d (reused %v):\n%s\nwant\n%s", tr.File, i, on, d, want)
			}
			if !on && kept == nil && len(got.Events) > 0 {
				kept, keptDigest = got, want
			}
			if on && clone == nil && i > len(tr.Records)/2 {
				c, err := reused.Clone()
				if err != nil {
					t.Fatal(err)
				}
				clone, cloneAt = c, i+1
			}
		}
		if kept != nil && stepDigest(kept) != keptDigest {
			t.Errorf("%s: a Step of its own changed after reuse:\n%s\nwas\n%s", tr.File, stepDigest(kept), keptDigest)
		}
		state := func(e *engine.Engine) string {
			b, err := json.Marshal(e.State())
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
		if got, want := state(reused), state(plain); got != want {
			t.Errorf("%s: reused ends in %s, plain in %s", tr.File, got, want)
		}
		if clone == nil {
			continue
		}
		// The clone runs the rest as the original did.
		ref := newEngine()
		for i := range cloneAt {
			ref.Apply(&tr.Records[i])
		}
		for i := cloneAt; i < len(tr.Records); i++ {
			if got, want := stepDigest(clone.Apply(&tr.Records[i])), stepDigest(ref.Apply(&tr.Records[i])); got != want {
				t.Fatalf("%s: the clone's record %d:\n%s\nwant\n%s", tr.File, i, got, want)
			}
		}
	}
}
