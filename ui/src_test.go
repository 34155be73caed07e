package ui

import (
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
