package ui

import (
	"fmt"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/cgtviz/cgtviz/engine"
)

// Issue 34: the TUI on real programs. The screens are goldens of a
// recorded program (train_compiled_opt: a compiled training step with its
// optimizer, 16 params) at the three sizes.

const trainOpt = "../examples/recorded/train_compiled_opt.cgt.jsonl"

// issue34Sizes are the sizes the issue tried.
var issue34Sizes = []struct{ w, h int }{{80, 24}, {120, 40}, {200, 60}}

// screenAt renders a moment of trace at every size, checks its width and
// height and the texts it must (and must not) show, and compares it with
// its golden.
func screenAt(t *testing.T, trace, name string, opts Options, setup func(*testing.T, *Model), want, unwanted []string) {
	t.Helper()
	screenAtSizes(t, issue34Sizes, trace, name, opts, setup, want, unwanted)
}

// screenAtSizes is screenAt at the given sizes only.
func screenAtSizes(t *testing.T, sizes []struct{ w, h int }, trace, name string, opts Options, setup func(*testing.T, *Model), want, unwanted []string) {
	t.Helper()
	for _, sz := range sizes {
		t.Run(fmt.Sprintf("%s-%dx%d", name, sz.w, sz.h), func(t *testing.T) {
			m := newModel(t, trace, sz.w, sz.h, opts)
			setup(t, m)
			got := screenText(m)
			lines := strings.Split(got, "\n")
			if len(lines) != sz.h {
				t.Errorf("%d lines, want %d", len(lines), sz.h)
			}
			for i, l := range lines {
				if w := ansi.StringWidth(l); w > sz.w {
					t.Errorf("line %d is %d cells wide, more than %d", i+1, w, sz.w)
				}
			}
			flat := strings.Join(strings.Fields(got), " ")
			for _, w := range want {
				if !strings.Contains(flat, w) {
					t.Errorf("screen lacks %q:\n%s", w, got)
				}
			}
			for _, w := range unwanted {
				if strings.Contains(flat, w) {
					t.Errorf("screen shows %q:\n%s", w, got)
				}
			}
			checkGolden(t, fmt.Sprintf("i34-%s-%dx%d", name, sz.w, sz.h), got)
		})
	}
}

// TestIssue34Start (item 1): at the start, one generation on screen. The
// device has seen no call, so its details say so instead of "current gen
// -1 ... the 1st step".
func TestIssue34Start(t *testing.T) {
	screenAt(t, trainOpt, "start", Options{}, func(t *testing.T, m *Model) {
		press(t, m, "1") // the tree, so that its device line is selected and details show it
	}, []string{"no call yet", "generation now is 0"}, []string{"current gen -1", "1st step"})
	// After the first step record and before any call: still no call.
	m := newModel(t, trainOpt, 120, 40, Options{})
	command(t, m, "line 5")
	press(t, m, "1")
	if d := strings.Join(m.detailsLines(1000), " "); !strings.Contains(d, "no call yet") || !strings.Contains(d, "generation now is -1") {
		t.Errorf("after the step record, before any call:\n%s", d)
	}
}

// TestIssue34StepBack (item 2): after going back, records not run at the
// position show no outcome, in the trace pane nor in the timeline.
func TestIssue34StepBack(t *testing.T) {
	for _, opts := range []Options{{}, {Color: true}} {
		name := "stepback"
		if opts.Color {
			name += "-color"
		}
		screenAt(t, seedA, name, opts, func(t *testing.T, m *Model) {
			command(t, m, "line 32")
			command(t, m, "line 15")
		}, []string{"line 15/41", "·····"}, []string{"record #1", "R──R", "replay #0"})
	}
}

// TestIssue34GG (item 10): gg goes to the top of the focused pane and G to
// its bottom; g then digits and enter is still the prompt; g then another
// letter does what the letter does.
func TestIssue34GG(t *testing.T) {
	m := newModel(t, trainOpt, 120, 40, Options{})
	press(t, m, "G")
	if m.trace.cursor != m.recs.len()-1 {
		t.Fatalf("G: trace cursor %d, want the last record %d", m.trace.cursor, m.recs.len()-1)
	}
	press(t, m, "g", "g")
	if m.trace.cursor != 0 || m.mode != modeNormal {
		t.Fatalf("gg: trace cursor %d mode %d, want 0 and no prompt", m.trace.cursor, m.mode)
	}
	if m.msgErr {
		t.Errorf("gg says %q", m.msg)
	}
	press(t, m, "g", "1", "1", "enter")
	if m.lineOf(m.Pos()) != 11 {
		t.Errorf("g 11 enter: at line %d", m.lineOf(m.Pos()))
	}
	press(t, m, "g", "n") // g then n: the prompt leaves, n steps
	if m.mode != modeNormal || m.lineOf(m.Pos()) != 12 {
		t.Errorf("g n: mode %d, line %d, want no prompt and line 12", m.mode, m.lineOf(m.Pos()))
	}
	if h := strings.Join(m.help.fullLines(&m.keys, 200), "\n"); !strings.Contains(h, "trace: run to cursor") || !strings.Contains(h, "home/gg") {
		t.Errorf("the help does not say what enter does in the trace, or gg:\n%s", h)
	}
}

// TestIssue34DecisionFirst (item 4): on a call with params, the details
// tell the decision and its cause before the arguments, and fold the
// params into a count that enter in the pane expands.
func TestIssue34DecisionFirst(t *testing.T) {
	screenAt(t, trainOpt, "decision-first", Options{}, func(t *testing.T, m *Model) {
		command(t, m, "line 39")
		press(t, m, "5")
	}, []string{"record #0 fn_0: new root", "args: in + 4 params"}, nil)
	m := newModel(t, trainOpt, 120, 40, Options{})
	command(t, m, "line 39")
	d := strings.Join(plainLines(m.detailsLines(116)), "\n")
	if strings.Index(d, "new root") > strings.Index(d, "args:") {
		t.Errorf("the arguments come before the decision:\n%s", d)
	}
	press(t, m, "5", "enter")
	if d := strings.Join(plainLines(m.detailsLines(116)), "\n"); !strings.Contains(d, "args: in, param, param_1, param_2, param_3") || !strings.Contains(d, "1 param ") {
		t.Errorf("enter in the details does not list every argument and input:\n%s", d)
	}
}

// TestIssue34Words (item 9): warmup nodes by their function, not
// PyTorch's negative ids; a placeholder's death in words; the path's
// outputs by name.
func TestIssue34Words(t *testing.T) {
	screenAt(t, trainOpt, "warmup-words", Options{}, func(t *testing.T, m *Model) {
		command(t, m, "line 35")
	}, []string{"warmup of opt_step_2"}, []string{"warmup -"})
	if got := placeholderWords("foo input 0 (placeholder of #0)"); got != "#0's recording, as its own copy of foo's input 0 (each replay copies the input there)" {
		t.Errorf("placeholderWords: %q", got)
	}
	ds := &engine.DeviceState{Nodes: []engine.NodeView{
		{ID: 0, Parent: -1, Depth: 0, Outputs: []engine.OutputView{{Index: 0, Tensor: "k_cache"}, {Index: 1}}},
		{ID: 1, Parent: 0, Depth: 1, Outputs: []engine.OutputView{{Index: 0, Tensor: "logits"}}},
	}}
	got := outputNames(ds, &ds.Nodes[1], []engine.OutputIndex{{Depth: 0, Index: 0}, {Depth: 0, Index: 1}, {Depth: 1, Index: 0}, {Depth: 5, Index: 0}})
	if want := "k_cache (#0 output 0), #0 output 1, logits (#1 output 0), (5,0)"; got != want {
		t.Errorf("outputNames: %q, want %q", got, want)
	}
}

// TestIssue34Tensors (item 5): the params come last by default; o orders
// the rows otherwise, f filters them, and the title says so.
func TestIssue34Tensors(t *testing.T) {
	screenAt(t, trainOpt, "tensors", Options{}, func(t *testing.T, m *Model) {
		command(t, m, "line 39")
		press(t, m, "6")
	}, []string{"Tensors · 22 · outputs first", "fn_0_c2_0"}, nil)
	m := newModel(t, trainOpt, 120, 40, Options{})
	command(t, m, "line 39")
	press(t, m, "6")
	rows := m.tensors.rows(m.snap.state)
	if rows[0].Owner == "param" || rows[len(rows)-1].Owner != "param" {
		t.Errorf("outputs first: the first row is %v, the last %v", rows[0].Names, rows[len(rows)-1].Names)
	}
	press(t, m, "o") // by size
	rows = m.tensors.rows(m.snap.state)
	for i := 1; i < len(rows); i++ {
		if rows[i].Bytes > rows[i-1].Bytes {
			t.Fatalf("by size: row %d (%d B) after a smaller one (%d B)", i, rows[i].Bytes, rows[i-1].Bytes)
		}
	}
	press(t, m, append(append([]string{"f"}, typed("fn_0")...), "enter")...)
	rows = m.tensors.rows(m.snap.state)
	if len(rows) == 0 {
		t.Fatal("the filter fn_0 keeps no row")
	}
	for _, r := range rows {
		if !strings.Contains(tensorRowText(&r), "fn_0") {
			t.Errorf("the filter fn_0 keeps %v", r.Names)
		}
	}
	if got := m.tensors.title(m.ctx()); !strings.Contains(got, fmt.Sprintf("%d of 22 match \"fn_0\"", len(rows))) || !strings.Contains(got, "by size") {
		t.Errorf("title %q", got)
	}
	press(t, m, "f", "enter")
	if len(m.tensors.rows(m.snap.state)) != 22 {
		t.Error("an empty filter does not show every row again")
	}
}

// TestIssue34Zoom (item 6): + gives the focused pane the whole body, so a
// call's arguments show whole at 80x24; + again lays every pane out.
func TestIssue34Zoom(t *testing.T) {
	screenAt(t, trainOpt, "zoom", Options{}, func(t *testing.T, m *Model) {
		command(t, m, "line 39")
		press(t, m, "4", "+")
	}, []string{"call fn_0(in, param, param_1, param_2, param_3)", "Trace zoomed"}, []string{"1 Tree"})
	m := newModel(t, trainOpt, 120, 40, Options{})
	press(t, m, "+", "+")
	if !strings.Contains(screenText(m), "1 Tree") {
		t.Error("+ twice does not show every pane again")
	}
}

// TestIssue34MemoryAxis (item 11): the memory timeline has an x-axis of
// trace lines, its labels whole at 120 columns, and a click on a column
// goes to that column's position.
func TestIssue34MemoryAxis(t *testing.T) {
	screenAt(t, trainOpt, "memory", Options{}, func(t *testing.T, m *Model) {
		command(t, m, "line 90")
		press(t, m, "M")
	}, []string{"trace line │start", "max 2.0 MiB"}, nil)
	m := newModel(t, trainOpt, 120, 40, Options{})
	command(t, m, "line 90")
	press(t, m, "M")
	r := m.layout().rects[panePool]
	for _, l := range plainLines(m.mem.lines(m.styles, m.recs.len(), m.Pos(), m.snap.executed, 0, r.w-2, m.lineOf)) {
		if strings.Contains(l, "…") {
			t.Errorf("a label of the chart is cut at 120 columns: %q", l)
		}
	}
	col := 20
	want := memColumnAt(col, m.recs.len(), r.w-2)
	x, y := r.x+1+memLabelW+col, r.y+1+m.mem.titleRows+1
	_, cmd := m.Update(tea.MouseClickMsg{X: x, Y: y, Button: tea.MouseLeft})
	runCmd(m, cmd)
	if m.Pos() != want || want <= 0 {
		t.Errorf("a click on column %d of the chart: at position %d, want %d", col, m.Pos(), want)
	}
	// The axis labels the column clicked with the line gone to.
	axis := memAxis(memPositions(m.recs.len(), memChartCols(r.w-2)), r.w-2, m.lineOf)
	if !strings.Contains(axis, fmt.Sprintf("│%d", m.lineOf(memColumnAt(20, m.recs.len(), r.w-2)))) {
		t.Errorf("axis %q lacks the line of column 20 (%d)", axis, m.lineOf(want))
	}
}

// TestIssue34Overwrite (item 8): the silent cached-object overwrite is a
// breakpoint kind and a timeline mark, and :freed finds a del.
func TestIssue34Overwrite(t *testing.T) {
	const s08 = "../examples/s08-overwritten-errors.cgt.jsonl"
	m := newModel(t, s08, 120, 40, Options{})
	command(t, m, "b overwrite")
	press(t, m, "c")
	if got := m.lineOf(m.Pos()); got != 14 {
		t.Fatalf("c with an overwrite breakpoint stops at line %d, want 14 (%s)", got, m.Message())
	}
	if !strings.Contains(m.Message(), "breakpoint overwrite hit at line 14") {
		t.Errorf("message %q", m.Message())
	}
	if !strings.Contains(strings.Join(plainLines(m.detailsLines(116)), " "), "same cached object") {
		t.Error("the details do not warn of the overwrite the breakpoint stopped on")
	}
	m.timeline.drawnFor = stripKey{}
	strip := ansi.Strip(m.timeline.view(m.styles, m.snap.n, 120, m.snap.pos-1))
	if !strings.Contains(strip, "O") || !strings.Contains(strip, "O overw") {
		t.Errorf("the timeline does not mark the overwrite: %q", strip)
	}
	screenAt(t, s08, "overwrite", Options{}, func(t *testing.T, m *Model) {
		command(t, m, "b overwrite")
		press(t, m, "c")
	}, []string{"breakpoint overwrite hit at line 14", "is the same cached object as"}, nil)

	// :freed right after del a: the del freed it.
	d := newModel(t, seedA, 120, 40, Options{})
	command(t, d, "line 18")
	command(t, d, "freed a")
	if d.lineOf(d.Pos()) != 17 || !strings.Contains(d.Message(), "line 17 deleted a, the last reference to its tensor") {
		t.Errorf(":freed a after del a: at line %d, %q", d.lineOf(d.Pos()), d.Message())
	}
}

// TestIssue34WhyRecorded (item 7): why a node was recorded, in PyTorch's
// terms, from the engine's facts (engine.Origin): a new compiled graph per
// shape (a def of its own, Dynamo's recompile with dynamic shapes, a new
// size of a dynamic graph), the resume function after a graph break in
// the same invocation, a backward; the old wording where the facts say
// none of these. Then the addresses of a node's CUDA graph and the inputs
// its outputs alias, by name.
func TestIssue34WhyRecorded(t *testing.T) {
	const kv = "../examples/recorded/inference_kv.cgt.jsonl"
	const gb = "../examples/recorded/graph_break.cgt.jsonl"
	const mlp = "../examples/recorded/train_mlp.cgt.jsonl"
	const dyn = "../examples/s36-rank-change-dynamic.cgt.jsonl"
	screenAt(t, kv, "why-shape", Options{}, func(t *testing.T, m *Model) {
		command(t, m, "line 50")
		press(t, m, "5")
	}, []string{"a new function of Block for"}, []string{"static shapes"})
	screenAt(t, gb, "why-resume", Options{}, func(t *testing.T, m *Model) {
		command(t, m, "line 24")
		press(t, m, "1")
	}, []string{"resume function after a"}, nil)
	at120 := []struct{ w, h int }{{120, 40}}
	screenAtSizes(t, at120, dyn, "why-recompile", Options{}, func(t *testing.T, m *Model) {
		command(t, m, "line 18")
		press(t, m, "5")
	}, []string{"a new compiled graph of f for"}, nil)
	screenAtSizes(t, at120, mlp, "why-backward", Options{}, func(t *testing.T, m *Model) {
		command(t, m, "line 28")
		press(t, m, "5")
	}, []string{"the backward of MLP_0 (#0)"}, []string{"resume function"})
	for _, tc := range []struct{ trace, line, want, unwanted string }{
		{kv, "line 50", "a new function of Block for shape [1,9,64], not yet recorded, so a root of its own: Block_1, one of 7 defs of Block (Block_0 … Block_6), one per PyTorch FunctionID (Dynamo's recompile, or a new size of a graph of dynamic shapes)", "compiled graph of Block"},
		{gb, "line 14", "warmup of torch_dynamo_resume_in_forward_at_26_1: Running warmup of function 1 resume function after a graph break in Gate_0, same invocation as line 7 (Dynamo's code of forward after line 26)", ""},
		{gb, "line 24", "resume function after a graph break in Gate_0, same invocation as line 19 (Dynamo's code of forward after line 26): one invocation starts no new generation, so the path was still recording and it is the child of #0 Gate_0", ""},
		{mlp, "line 28", "the backward of MLP_0 (#0), whose saved tensors it takes: a backward starts no generation of its own, so the path was still recording", "resume function"},
		{dyn, "line 15", "a new compiled graph of f for shape [3,3] (dynamic shapes): Dynamo's compile 2 of f, made dynamic where the sizes changed", "not yet recorded"},
		{dyn, "line 27", "a new size of f's compiled graph 2 (dynamic shapes) for shape [2,2], not yet recorded, so a root of its own: cudagraphify records a graph of dynamic shapes once per distinct input size", ""},
		// A size of a dynamic graph whose tensors kept their shapes: an int
		// argument's value (a sampler's timestep), said as such; one
		// whose tensors changed shape, as before.
		{"../examples/recorded/diffusion_sample.cgt.jsonl", "line 119", "size 2 of Denoiser_1's compiled graph for shape [4,256] (the tensor shapes of Denoiser_1 itself), not yet recorded, so a root of its own: the size that changed is not a tensor's shape but an int the graph takes as a symbolic size (an int argument, such as a step or a timestep, that Dynamo made dynamic; or a stride or an offset)", ""},
		{"../examples/recorded/varlen_infer.cgt.jsonl", "line 84", "size 2 of Model_1's compiled graph for shape [2,13], [2,1,13,13]: cudagraphify records a graph of dynamic shapes once per distinct input size", "not a tensor's shape"},
		// Another invocation found the path recording: no graph break.
		{trainOpt, "line 50", "record #2 opt_step_2: path is recording (parent #1) • a storage died", "resume function"},
		// No invocations in the trace: nothing said of them.
		{"../examples/s24-pending-backward.cgt.jsonl", "line 6", "warmup of fwd: Running eager of function 0 because ancestor needed to warm up args:", "resume function"},
	} {
		m := newModel(t, tc.trace, 120, 40, Options{})
		command(t, m, tc.line)
		d := strings.Join(strings.Fields(strings.Join(plainLines(m.detailsLines(300)), " ")), " ")
		if !strings.Contains(d, tc.want) {
			t.Errorf("%s %s: the details lack %q:\n%s", tc.trace, tc.line, tc.want, d)
		}
		if tc.unwanted != "" && strings.Contains(d, tc.unwanted) {
			t.Errorf("%s %s: the details say %q:\n%s", tc.trace, tc.line, tc.unwanted, d)
		}
	}
	m := newModel(t, "../examples/recorded/train_mlp.cgt.jsonl", 200, 60, Options{})
	command(t, m, "line 28")
	d := strings.Join(plainLines(nodeLines(m.snap.state, treeLine{kind: treeNode, dev: 0, id: 0}, nil, m.styles, 300)), "\n")
	for _, w := range []string{"(alias input 3, fc2_weight)", "dst=0x7f0000200000 (in_1's placeholder)"} {
		if !strings.Contains(d, w) {
			t.Errorf("node #0 of train_mlp lacks %q:\n%s", w, d)
		}
	}
}
