package engine_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cgtviz/cgtviz/engine"
)

// TestWarnOnUnableToStart checks check_warn_on_unable_to_start_executing:
// with a backward pending no generation can start, and PyTorch warns once
// per function when the path repeats the function without repeating its
// parents. The current node's parent counts (PyTorch adds current_node to
// the nodes whose parents it collects), so two forwards alternating warn
// only once the path holds a function three times, while one forward
// called again and again warns at its third call. Each case runs with the
// current node a warmup node (warmup_runs 1) and a recorded graph node
// (warmup_runs 0): the two branches that build the path.
func TestWarnOnUnableToStart(t *testing.T) {
	tests := []struct {
		name  string
		calls []string // the forward called at each step, outputs kept alive
		warn  string   // the function warned about ("" none)
	}{
		{"two forwards alternating", []string{"fa", "fb", "fa", "fb", "fa"}, ""},
		{"two forwards alternating, a third fa", []string{"fa", "fb", "fa", "fb", "fa", "fb", "fa"}, "fa"},
		{"one forward repeated", []string{"fa", "fa", "fa"}, "fa"},
		{"a forward whose parents repeat", []string{"fa", "fb", "fb", "fa", "fb", "fb"}, "fb"},
	}
	for _, tt := range tests {
		for _, warmups := range []int{1, 0} {
			t.Run(fmt.Sprintf("%s/warmup_runs=%d", tt.name, warmups), func(t *testing.T) {
				var b strings.Builder
				fmt.Fprintf(&b, `{"cgtviz": 1, "config": {"warmup_runs": %d}}`+"\n", warmups)
				for _, fn := range []string{"fa", "fb"} {
					fmt.Fprintf(&b, `{"op": "def", "fn": %q, "mode": "forward", "params": ["x"], "body": [{"out": "y", "k": "mul", "a": "x", "b": 2}], "returns": ["y"]}`+"\n", fn)
				}
				b.WriteString(`{"op": "tensor", "name": "x", "shape": [4], "init": "ones"}` + "\n")
				for i, fn := range tt.calls {
					fmt.Fprintf(&b, `{"op": "call", "fn": %q, "args": ["x"], "out": ["o%d"]}`+"\n", fn, i)
				}
				steps, _ := runText(t, b.String(), engine.Options{})
				var warned []string
				for line := 1; line <= len(steps)+1; line++ {
					s := steps[line]
					if s == nil {
						continue
					}
					if s.Err != nil {
						t.Fatalf("line %d: %v", line, s.Err)
					}
					for _, ev := range s.Events {
						if ev.Kind == engine.EvWarning && strings.Contains(ev.Msg, "Unable to hit fast path") {
							warned = append(warned, fmt.Sprintf("%s at line %d", ev.Fn, line))
						}
					}
				}
				switch {
				case tt.warn == "" && len(warned) > 0:
					t.Errorf("warned %v, PyTorch does not", warned)
				case tt.warn != "" && (len(warned) != 1 || !strings.HasPrefix(warned[0], tt.warn+" ")):
					t.Errorf("warned %v, want once for %s", warned, tt.warn)
				}
			})
		}
	}
}

// TestWarnDynamicShapesOnce checks maybe_warning_due_to_dynamic_shape:
// PyTorch warns once a compiled graph (cudagraphify_impl's has_warn), at
// the first size past cudagraph_dynamic_shape_warn_limit, not at every
// size after it (varlen_infer on an H100: 14 sizes, one warning, of 9).
// Sizes 3 (the static graph), then 4 to 8 of the dynamic one: with the
// limit at 2 it warns at size 6, its third; a config record that lowers the
// limit later does not warn again for that graph.
func TestWarnDynamicShapesOnce(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"cgtviz": 1, "config": {"dynamic_shape_warn_limit": 2}}` + "\n")
	b.WriteString(`{"op": "def", "fn": "f", "params": ["x"], "body": [{"out": "y", "k": "add", "a": "x", "b": 1}], "returns": ["y"]}` + "\n")
	line := 2
	at := map[int]int{} // size -> the line of its first call
	for i, n := range []int{3, 4, 5, 6, 7, 8} {
		if n == 8 {
			b.WriteString(`{"op": "config", "dynamic_shape_warn_limit": 1}` + "\n")
			line++
		}
		fmt.Fprintf(&b, `{"op": "step"}`+"\n"+`{"op": "tensor", "name": "x%d", "shape": [%d], "init": "ones"}`+"\n"+`{"op": "call", "fn": "f", "args": ["x%d"], "out": ["y%d"]}`+"\n", i, n, i, i)
		line += 3
		at[n] = line
	}
	steps, _ := runText(t, b.String(), engine.Options{})
	if warned := sizeWarnings(t, steps); len(warned) != 1 || warned[0] != fmt.Sprintf("line %d: observed 3 distinct", at[6]) {
		t.Errorf("warned %q, want once at line %d, of 3", warned, at[6])
	}
}

// sizeWarnings lists the dynamic-shape warnings of steps ("line L:
// observed N distinct"), failing the test at a step that raised.
func sizeWarnings(t *testing.T, steps map[int]*engine.Step) []string {
	t.Helper()
	var warned []string
	for l, s := range steps {
		if s.Err != nil {
			t.Fatalf("line %d: %v", l, s.Err)
		}
		for _, ev := range s.Events {
			if ev.Kind == engine.EvWarning && strings.Contains(ev.Msg, "distinct sizes") {
				warned = append(warned, fmt.Sprintf("line %d: %s", l, ev.Msg[strings.Index(ev.Msg, "observed"):strings.Index(ev.Msg, " sizes")]))
			}
		}
	}
	return warned
}

// TestWarnDynamicShapesOfNamedGraph checks the same warning on a recorded
// trace, which writes each size of a dynamic graph as a def of its own
// naming the graph's first (def's graph): the sizes of f (f, then g1 to
// g3 naming it) count together and warn once, at the third; h, a graph of
// its own, counts alone; the log names the graph's def and the size.
func TestWarnDynamicShapesOfNamedGraph(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"cgtviz": 1, "config": {"dynamic_shape_warn_limit": 2}}` + "\n")
	for i, d := range []struct{ fn, graph string }{{"f", ""}, {"h", ""}, {"g1", "f"}, {"g2", "f"}, {"g3", "f"}} {
		graph := ""
		if d.graph != "" {
			graph = fmt.Sprintf(`, "graph": %q`, d.graph)
		}
		fmt.Fprintf(&b, `{"op": "def", "fn": %q, "params": ["x"], "body": [{"out": "y", "k": "add", "a": "x", "b": %d}], "returns": ["y"]%s}`+"\n", d.fn, i+1, graph)
	}
	calls := []string{"f", "h", "g1", "g2", "g3"}
	for i, fn := range calls {
		fmt.Fprintf(&b, `{"op": "step"}`+"\n"+`{"op": "tensor", "name": "x%d", "shape": [%d], "init": "ones"}`+"\n"+`{"op": "call", "fn": %q, "args": ["x%d"], "out": ["y%d"]}`+"\n", i, i+3, fn, i, i)
	}
	steps, _ := runText(t, b.String(), engine.Options{})
	warned := sizeWarnings(t, steps)
	origin := ""
	for _, s := range steps {
		for _, ev := range s.Events {
			if ev.Kind == engine.EvWarmup && ev.Fn == "g2" && ev.Origin != nil {
				origin = fmt.Sprintf("%s %d", ev.Origin.Graph, ev.Origin.Size)
			}
		}
	}
	// g2's call is the fourth: the header, 5 defs, then 3 lines a call.
	if want := fmt.Sprintf("line %d: observed 3 distinct", 1+5+3*4); len(warned) != 1 || warned[0] != want {
		t.Errorf("warned %q, want once: %q", warned, want)
	}
	if origin != "f 3" {
		t.Errorf("g2's warmup: graph and size %q, want \"f 3\"", origin)
	}
}
