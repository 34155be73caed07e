package ui

import (
	"strconv"
	"strings"
	"testing"
)

// TestDetailsSourceLine: a record the recorder noted the user's line for
// shows it in the details (issue 33 item 3), for a call and a read.
func TestDetailsSourceLine(t *testing.T) {
	m := newModel(t, "../traces/testdata/good/src.cgt.jsonl", 160, 48, Options{})
	gotoStep(t, m, "4") // the first call, line 5
	if got := screenText(m); !strings.Contains(got, "at train.py:73 (in step)") {
		t.Errorf("after the call at line 5, the details lack its source line:\n%s", got)
	}
	gotoStep(t, m, "6") // the read, line 7
	if got := screenText(m); !strings.Contains(got, "at train.py:74 (in step)") {
		t.Errorf("after the read at line 7, the details lack its source line:\n%s", got)
	}
}

// TestDetailsNameMutatedInputs: a node whose graph writes inputs in place
// (the compiled AdamW step of train_compiled_opt writes its parameters and
// their moments) names them in the details (issue 34 item 7).
func TestDetailsNameMutatedInputs(t *testing.T) {
	m := newModel(t, "../examples/recorded/train_compiled_opt.cgt.jsonl", 160, 48, Options{})
	if err := m.sess.Goto(m.sess.Len()); err != nil {
		t.Fatal(err)
	}
	st := m.sess.State()
	found := false
	for _, n := range st.Devices[0].Nodes {
		if len(n.Mutated) == 0 {
			continue
		}
		found = true
		text := strings.Join(nodeLines(st, treeLine{kind: treeNode, dev: 0, id: n.ID}, nil, m.styles, 200), "\n")
		name := n.Inputs[n.Mutated[0]].Name
		if !strings.Contains(text, "writes in place: "+name+" (input "+strconv.Itoa(n.Mutated[0])+")") {
			t.Errorf("node #%d %s's details do not name %s as written in place:\n%s", n.ID, n.Fn, name, text)
		}
	}
	if !found {
		t.Fatal("no node of train_compiled_opt writes an input in place: the test sees nothing")
	}
}
