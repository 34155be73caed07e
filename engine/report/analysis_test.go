package report_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/engine/device/sim"
	"github.com/cgtviz/cgtviz/engine/report"
	"github.com/cgtviz/cgtviz/traces"
)

// exampleFiles are every example trace, the recorded ones included.
func exampleFiles(t *testing.T) []string {
	t.Helper()
	a, _ := filepath.Glob("../../examples/*.cgt.jsonl")
	b, _ := filepath.Glob("../../examples/recorded/*.cgt.jsonl")
	if len(a) == 0 || len(b) == 0 {
		t.Fatal("no example traces")
	}
	return append(a, b...)
}

// analyze streams path as cgtviz report does and returns the report, its
// analysis, and the report made the plain way (Add on every Step).
func analyze(t *testing.T, path string, lim report.Limits) (*report.Report, *report.Analysis, *report.Report) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := traces.NewReader(f, path)
	if err != nil {
		t.Fatal(err)
	}
	hdr := r.Header()
	e, err := engine.New(hdr, engine.Options{Devices: sim.Devices(max(hdr.Devices, 1)), File: path})
	if err != nil {
		t.Fatal(err)
	}
	rep, whole := report.New(hdr.Name, "sim"), report.New(hdr.Name, "sim")
	col := rep.Collect(hdr, e, lim)
	if _, err := e.Stream(t.Context(), r, func(s *engine.Step) bool {
		col.Step(s)
		whole.Add(s)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	st := e.State()
	whole.Finish(st)
	return rep, col.Finish(st), whole
}

// TestAnalysisAgreesWithReport checks, on every example, that the
// analysis says what the run's report says: its functions' counts sum to
// the report's counters, its rows are the report's entries, and the
// report it filled equals the one made with Add. Three engine scenarios
// add calls that raise inside a warmup, a recording and a replay, whose
// steps name the action they raised in: those count as no action.
func TestAnalysisAgreesWithReport(t *testing.T) {
	files := append(exampleFiles(t), "../testdata/warmup-out-of-memory.cgt.jsonl", "../testdata/recording-out-of-memory.cgt.jsonl",
		"../testdata/static-input-moved.cgt.jsonl")
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			rep, a, whole := analyze(t, path, report.Limits{})
			var sum engine.Counters
			calls := 0
			for _, f := range a.Functions {
				sum.Warmups += f.Warmups
				sum.Recordings += f.Recordings
				sum.Replays += f.Replays
				sum.Eager += f.Eager
				sum.Rerecords += f.Rerecords
				sum.Checkpoints += f.Checkpoints
				calls += f.Calls
				if f.Warmups+f.Recordings+f.Replays+f.Eager > f.Calls {
					t.Errorf("%s: %d actions in %d calls", f.Fn, f.Warmups+f.Recordings+f.Replays+f.Eager, f.Calls)
				}
			}
			c := rep.Counters
			want := engine.Counters{Warmups: c.Warmups, Recordings: c.Recordings, Replays: c.Replays, Eager: c.Eager, Rerecords: c.Rerecords, Checkpoints: c.Checkpoints}
			if sum != want {
				t.Errorf("functions sum to %+v, the counters say %+v", sum, want)
			}
			if !reflect.DeepEqual(rep.Counters, whole.Counters) || !reflect.DeepEqual(rep.Nodes, whole.Nodes) || !reflect.DeepEqual(rep.Expectations, whole.Expectations) {
				t.Error("the collected report differs from the one made with Add")
			}
			if a.Records != len(whole.Steps) {
				t.Errorf("Records %d, the report has %d steps", a.Records, len(whole.Steps))
			}
			byLine := map[int]report.Step{}
			rowsWanted := 0
			for _, s := range whole.Steps {
				byLine[s.Line] = s
				if s.Op == "call" {
					rowsWanted++
				}
			}
			if len(a.Rows) < rowsWanted || a.RowsTotal != len(a.Rows) {
				t.Errorf("%d rows (of %d), want every call's (%d) and no more than there are", len(a.Rows), a.RowsTotal, rowsWanted)
			}
			for i, r := range a.Rows {
				if i > 0 && a.Rows[i-1].Index >= r.Index {
					t.Fatalf("rows out of order at %d", i)
				}
				if !reflect.DeepEqual(r.Step, byLine[r.Line]) {
					t.Errorf("row of line %d is %+v, the report's entry %+v", r.Line, r.Step, byLine[r.Line])
				}
				if (r.Error != nil || (r.Action != nil && *r.Action == "record")) && (!r.Notable || r.Note == "") {
					t.Errorf("line %d: a recording or error row is not notable, or says no why", r.Line)
				}
			}
			if len(a.Memory) == 0 || a.Memory[len(a.Memory)-1].Index != a.Records-1 {
				t.Errorf("memory not sampled after the last record")
			}
			if len(a.Verdicts) == 0 {
				t.Error("no verdict")
			}
		})
	}
}

// TestAnalysisVerdicts checks the verdicts on examples that show each
// problem, and on one that shows none.
func TestAnalysisVerdicts(t *testing.T) {
	tests := []struct {
		file string
		want []report.VerdictKind
	}{
		{"s18-managed-input-rerecord.cgt.jsonl", []report.VerdictKind{report.VerdictRerecord, report.VerdictCheckpoint}},
		{"s28-param-swap.cgt.jsonl", []report.VerdictKind{report.VerdictRerecord}},
		{"s25-mutation-skip.cgt.jsonl", []report.VerdictKind{report.VerdictSkip}},
		{"s30-rerecord-limit.cgt.jsonl", []report.VerdictKind{report.VerdictSkip}},
		{"s24-pending-backward.cgt.jsonl", []report.VerdictKind{report.VerdictPendingBackward}},
		{"s08-overwritten-errors.cgt.jsonl", []report.VerdictKind{report.VerdictOverwritten}},
		{"seed-a-checkpoint.cgt.jsonl", []report.VerdictKind{report.VerdictCheckpoint}},
		{"recorded/train_mlp.cgt.jsonl", []report.VerdictKind{report.VerdictNone}},
		{"recorded/diffusion_sample.cgt.jsonl", []report.VerdictKind{report.VerdictIntSizes}},
		{"recorded/diffusion_tensor_t.cgt.jsonl", []report.VerdictKind{report.VerdictNone}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			_, a, _ := analyze(t, filepath.Join("../../examples", tc.file), report.Limits{})
			var got []report.VerdictKind
			for _, v := range a.Verdicts {
				got = append(got, v.Kind)
				if v.Text == "" {
					t.Errorf("%s: no text", v.Kind)
				}
			}
			for _, k := range tc.want {
				if !slices.Contains(got, k) {
					t.Errorf("verdicts %v, want %s among them", got, k)
				}
			}
			if slices.Contains(got, report.VerdictNone) && len(got) > 1 {
				t.Errorf("verdicts %v: no problem and a problem", got)
			}
		})
	}
}

// TestIntSizesVerdict: a sampler that passes its timestep as a Python int
// (diffusion_sample) is told that its graph got a function for each value
// (t=17 to 0 warmed up in the first sample and recorded in the second, and
// 19 again, which the second sample's first call warms up),
// with what those calls did and the line of the first; a trace whose
// dynamic graph's sizes are real shapes (varlen_infer, inference_kv) is
// not.
func TestIntSizesVerdict(t *testing.T) {
	for _, tc := range []struct {
		file, want string
	}{
		{"recorded/diffusion_sample.cgt.jsonl", "Int sizes: Denoiser_1's compiled graph got a function of its own for 19 more sizes " +
			"whose tensors all have its shapes, each warmed up and recorded before it replays (their 37 calls: 19 warmups, 18 recordings, 0 replays)"},
		{"recorded/varlen_infer.cgt.jsonl", ""},
		{"recorded/inference_kv.cgt.jsonl", ""},
	} {
		t.Run(tc.file, func(t *testing.T) {
			_, a, _ := analyze(t, filepath.Join("../../examples", tc.file), report.Limits{})
			var got *report.Verdict
			for i, v := range a.Verdicts {
				if v.Kind == report.VerdictIntSizes {
					got = &a.Verdicts[i]
				}
			}
			if tc.want == "" {
				if got != nil {
					t.Fatalf("an int-sizes verdict where the sizes are shapes: %s", got.Text)
				}
				return
			}
			if got == nil {
				t.Fatalf("no int-sizes verdict among %v", a.Verdicts)
			}
			if !strings.HasPrefix(got.Text, tc.want) || !strings.Contains(got.Text, `torch.tensor(t, device="cuda")`) {
				t.Errorf("verdict %q, want it to start %q and say what to pass", got.Text, tc.want)
			}
			if got.Line <= 0 {
				t.Errorf("verdict at line %d", got.Line)
			}
		})
	}
}

// TestAnalysisLimits checks that a small budget bounds the rows and
// samples, keeps the notable rows first, and keeps samples evenly spread.
func TestAnalysisLimits(t *testing.T) {
	path := "../../examples/recorded/train_compiled_opt.cgt.jsonl"
	_, full, _ := analyze(t, path, report.Limits{})
	_, a, _ := analyze(t, path, report.Limits{Rows: 4, Samples: 6, Functions: 1})
	if len(a.Rows) != 4 || a.RowsTotal != full.RowsTotal {
		t.Errorf("%d rows of %d, want 4 of %d", len(a.Rows), a.RowsTotal, full.RowsTotal)
	}
	notable := 0
	for _, r := range a.Rows {
		if r.Notable {
			notable++
		}
	}
	if notable != min(4, full.NotableTotal) {
		t.Errorf("%d notable rows kept, want %d", notable, min(4, full.NotableTotal))
	}
	if len(a.Memory) > 6 || len(a.Memory) < 3 {
		t.Errorf("%d samples, want 3 to 6", len(a.Memory))
	}
	for i, s := range a.Memory[:len(a.Memory)-1] {
		if s.Index != i*a.SampleEvery {
			t.Errorf("sample %d at record %d, want %d", i, s.Index, i*a.SampleEvery)
		}
	}
	if len(full.Functions) > 1 {
		if len(a.Functions) != 1 || a.OtherFunctionsCount != len(full.Functions)-1 {
			t.Errorf("%d functions detailed and %d summed, want 1 and %d", len(a.Functions), a.OtherFunctionsCount, len(full.Functions)-1)
		}
		calls := a.Functions[0].Calls + a.OtherFunctions.Calls
		all := 0
		for _, f := range full.Functions {
			all += f.Calls
		}
		if calls != all {
			t.Errorf("detailed and summed calls %d, want %d", calls, all)
		}
	}
}

func TestParseMeta(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want report.Meta
	}{
		{"none", ``, report.Meta{}},
		{"not an object", `[1, 2]`, report.Meta{}},
		{"recorded", `{"source": "cgtrace", "torch": "2.11.0+cu130", "gpu": "NVIDIA H200", "script": "train.py"}`,
			report.Meta{Torch: "2.11.0+cu130", GPU: "NVIDIA H200", Script: "train.py"}},
		{"wrong types left out", `{"torch": 2, "sources": ["a"]}`, report.Meta{}},
		{"sources", `{"sources": {"fwd": "model.py:73:forward"}}`, report.Meta{Sources: map[string]string{"fwd": "model.py:73:forward"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := report.ParseMeta([]byte(tc.raw)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestReasonsBounded checks that a function given a new reason at every
// call keeps maxReasons of them, the last counting the rest.
func TestReasonsBounded(t *testing.T) {
	var rs []report.Reason
	for i := range 100 {
		rs = report.AddReason(rs, fmt.Sprintf("reason %d", i), i+1)
	}
	rs = report.AddReason(rs, "reason 3", 200)
	if len(rs) != 20 || rs[19].Text != "other reasons" || rs[19].Count != 81 || rs[3].Count != 2 {
		t.Fatalf("%d reasons, the last %+v, the fourth %+v", len(rs), rs[len(rs)-1], rs[3])
	}
}

// TestMemoryGrowthVerdict checks the verdict on a loop that keeps a new
// tensor every iteration, and its absence on one that keeps nothing.
func TestMemoryGrowthVerdict(t *testing.T) {
	for _, tc := range []struct {
		name string
		keep bool
	}{{"growing", true}, {"steady", false}} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			b.WriteString(`{"cgtviz": 1}` + "\n")
			for i := range 40 {
				fmt.Fprintf(&b, `{"op": "tensor", "name": "t%d", "shape": [262144], "init": "zeros"}`+"\n", i)
				if !tc.keep {
					fmt.Fprintf(&b, `{"op": "del", "names": ["t%d"]}`+"\n", i)
				}
			}
			path := filepath.Join(t.TempDir(), "t.cgt.jsonl")
			if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			_, a, _ := analyze(t, path, report.Limits{})
			found := false
			for _, v := range a.Verdicts {
				found = found || v.Kind == report.VerdictMemoryGrowth
			}
			if found != tc.keep {
				t.Errorf("memory growth verdict %v, want %v: %+v", found, tc.keep, a.Verdicts)
			}
		})
	}
}

// TestAnalysisSaysOrigin checks that the report explains a recording as
// the --log line does (engine.Origin.Note, issue 34 item 7): a function's
// reasons, counted alike without the line, and the decision's row, with
// it; a re-record's verdict still reads its own reason.
func TestAnalysisSaysOrigin(t *testing.T) {
	tests := []struct {
		file, fn, reason string
		line             int
		note             string
	}{
		{"recorded/graph_break.cgt.jsonl", "torch_dynamo_resume_in_forward_at_26_1",
			"path is recording (a graph after a graph break in Gate_0, in the same invocation)",
			24, "path is recording (a graph after a graph break in Gate_0, in the same invocation as line 19)"},
		{"recorded/train_mlp.cgt.jsonl", "MLP_bwd_1", "path is recording (the backward of MLP_0 (#0))",
			28, "path is recording (the backward of MLP_0 (#0))"},
		{"s12-shapes-are-functions.cgt.jsonl", "f", "new root (a new compiled graph of f (compile 2) for input shapes [40,40], [40,40], dynamic shapes)",
			15, "new root (a new compiled graph of f (compile 2) for input shapes [40,40], [40,40], dynamic shapes)"},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			_, a, _ := analyze(t, filepath.Join("../../examples", tc.file), report.Limits{})
			var reasons []string
			for _, f := range a.Functions {
				if f.Fn == tc.fn {
					for _, r := range f.Recorded {
						reasons = append(reasons, r.Text)
					}
				}
			}
			if !slices.Contains(reasons, tc.reason) {
				t.Errorf("%s recorded: %q, want %q among them", tc.fn, reasons, tc.reason)
			}
			found := false
			for _, r := range a.Rows {
				if r.Step.Line == tc.line {
					found = true
					if r.Note != tc.note {
						t.Errorf("line %d: note %q, want %q", tc.line, r.Note, tc.note)
					}
				}
			}
			if !found {
				t.Errorf("no row of line %d", tc.line)
			}
		})
	}
	_, a, _ := analyze(t, "../../examples/s18-managed-input-rerecord.cgt.jsonl", report.Limits{})
	for _, v := range a.Verdicts {
		if v.Kind == report.VerdictRerecord && strings.Contains(v.Text, "first recording") {
			t.Errorf("the re-record verdict reads a new root's note: %s", v.Text)
		}
	}
}

// TestNoCallsVerdict: a trace that calls no compiled function gets no
// "no problem found" (nothing ran to judge) but a verdict that says so,
// with its first note where it has one: a recording that could record
// nothing says why only there.
func TestNoCallsVerdict(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, records, want string
	}{
		{"notes", `{"op": "note", "text": "graphs made outside the trees"}` + "\n" + `{"op": "note", "text": "another"}` + "\n",
			"Nothing to judge: the trace calls no compiled function. Its first note, at line 2: graphs made outside the trees (and 1 more)"},
		{"bare", `{"op": "step"}` + "\n", "Nothing to judge: the trace calls no compiled function."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name+".cgt.jsonl")
			if err := os.WriteFile(path, []byte(`{"cgtviz": 1}`+"\n"+tc.records), 0o644); err != nil {
				t.Fatal(err)
			}
			_, a, _ := analyze(t, path, report.Limits{})
			if len(a.Verdicts) != 1 || a.Verdicts[0].Kind != report.VerdictNoCalls || a.Verdicts[0].Text != tc.want {
				t.Errorf("verdicts %+v, want one %q: %q", a.Verdicts, report.VerdictNoCalls, tc.want)
			}
		})
	}
	// A trace with calls never gets it.
	_, a, _ := analyze(t, "../../examples/recorded/train_mlp.cgt.jsonl", report.Limits{})
	for _, v := range a.Verdicts {
		if v.Kind == report.VerdictNoCalls {
			t.Errorf("a trace with calls got %+v", v)
		}
	}
}
