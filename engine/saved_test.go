package engine_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/cgtviz/cgtviz/engine"
)

// TestSavedRefusesWhatTheTreeDoesNotHold checks the engine's side of a
// saved record: only a cached output of a replay (which the tree keeps
// while counting it dead) can be named again; a plain tensor a del
// unbound is gone, and the record fails with the reason, changing nothing.
func TestSavedRefusesWhatTheTreeDoesNotHold(t *testing.T) {
	const pre = `{"cgtviz": 1}
{"op": "def", "fn": "f", "params": ["x"], "body": [{"out": "y", "k": "relu", "a": "x"}, {"out": "a", "k": "mul", "a": "x", "b": 2}], "returns": ["y", "a"]}
{"op": "tensor", "name": "x", "shape": [4], "init": "rand"}
`
	call := `{"op": "call", "fn": "f", "args": ["x"], "out": ["y", "a"]}
`
	tests := []struct {
		name, body string
		line       int
		want       string // "" when the saved record succeeds
	}{
		{"a warmup's output", call + `{"op": "del", "names": ["a"]}
{"op": "saved", "name": "s", "of": "a"}
`, 6, "is not a cached output of a replay that the tree still holds"},
		{"a recording's output", call + call + `{"op": "del", "names": ["a"]}
{"op": "saved", "name": "s", "of": "a"}
`, 7, "is not a cached output"},
		{"a replay's cached output", call + call + call + `{"op": "del", "names": ["a"]}
{"op": "saved", "name": "s", "of": "a"}
`, 8, ""},
		{"a plain tensor", `{"op": "del", "names": ["x"]}
{"op": "saved", "name": "s", "of": "x"}
`, 5, "is not a cached output"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			steps, e := runText(t, pre+tc.body, engine.Options{})
			st := steps[tc.line]
			if st == nil {
				t.Fatalf("no step at line %d", tc.line)
			}
			switch {
			case tc.want == "" && st.Err != nil:
				t.Fatalf("saved failed: %v", st.Err)
			case tc.want != "" && (st.Err == nil || !strings.Contains(st.Err.Error(), tc.want)):
				t.Fatalf("got error %v, want one containing %q", st.Err, tc.want)
			}
			bound := slices.Contains(e.Names(), "s")
			if bound != (tc.want == "") {
				t.Errorf("s bound: %v, want %v", bound, tc.want == "")
			}
		})
	}
}
