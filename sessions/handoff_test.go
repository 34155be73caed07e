package sessions

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/cgtviz/cgtviz/engine"
)

// TestHandoffRaiseSession runs the chained-call example under PyTorch 2.11's
// rule: the failure of line 6 keeps what it changed, going back over it and
// forward again gives the same states, with keyframes or by re-running, and
// a saved session reopens under the same rule.
func TestHandoffRaiseSession(t *testing.T) {
	const s07 = "../examples/s07-chain-handoff.cgt.jsonl"
	var calls int
	for _, opts := range []Options{
		{Handoff: engine.HandoffRaise},
		{Handoff: engine.HandoffRaise, NewDevices: opaqueDevices(&calls)},
	} {
		s := open(t, s07, opts)
		var states []*engine.State
		states = append(states, s.State())
		for {
			if _, ok := s.Step(); !ok {
				break
			}
			states = append(states, s.State())
		}
		// Line 6 (record 4) raised and left fee's failed warmup current.
		st := s.StepAt(4)
		if st == nil || st.Line != 6 || !strings.Contains(st.ErrText(), "overwritten") {
			t.Fatalf("record 4: %+v", st)
		}
		after := states[5].Devices[0]
		if len(after.Warmups) != 1 || !after.Warmups[0].Failed {
			t.Fatalf("after line 6: warmups %+v", after.Warmups)
		}
		for _, pos := range []int{3, 5, 4, 9, 0, len(states) - 1} {
			if err := s.Goto(pos); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(s.State(), states[pos]) {
				t.Fatalf("position %d reached again differs", pos)
			}
		}
		if s.Handoff() != engine.HandoffRaise {
			t.Errorf("Handoff() = %v", s.Handoff())
		}
		path := filepath.Join(t.TempDir(), "s.json")
		if err := s.Goto(6); err != nil {
			t.Fatal(err)
		}
		if err := s.Save(path); err != nil {
			t.Fatal(err)
		}
		l, err := Load(path, Options{NewDevices: opts.NewDevices})
		if err != nil {
			t.Fatal(err)
		}
		if l.Handoff() != engine.HandoffRaise || !reflect.DeepEqual(l.State(), states[6]) {
			t.Errorf("loaded: handoff %v, same state %v", l.Handoff(), reflect.DeepEqual(l.State(), states[6]))
		}
		l.Close()
		s.Close()
	}
	if calls < 2 {
		t.Errorf("the opaque devices were opened %d times: going back did not re-run", calls)
	}
}

func TestLoadBadHandoff(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(path, []byte(`{"cgtviz_session": 1, "trace": "demo", "position": 0, "handoff": "sometimes"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path, Options{}); err == nil || !strings.Contains(err.Error(), `unknown handoff rule "sometimes"`) {
		t.Errorf("Load: %v", err)
	}
}

// TestHandoffByVersionSession: a session asked for the recording PyTorch's
// rule runs s07 recorded on 2.11 as --handoff raise does, says raise, and a
// saved session keeps "version" (so a trace re-recorded on another PyTorch
// gets that one's rule when it reopens).
func TestHandoffByVersionSession(t *testing.T) {
	data, err := os.ReadFile("../examples/s07-chain-handoff.cgt.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	trace := filepath.Join(dir, "s07-211.cgt.jsonl")
	data = []byte(strings.Replace(string(data), `"meta": {`, `"meta": {"torch": "2.11.0+cu130", `, 1))
	if err := os.WriteFile(trace, data, 0o644); err != nil {
		t.Fatal(err)
	}
	s := open(t, trace, Options{Handoff: engine.HandoffByVersion})
	defer s.Close()
	if s.Handoff() != engine.HandoffRaise {
		t.Errorf("Handoff() = %v, want raise", s.Handoff())
	}
	for {
		if _, ok := s.Step(); !ok {
			break
		}
	}
	if st := s.StepAt(4); st == nil || !strings.Contains(st.ErrText(), "overwritten") {
		t.Fatalf("record 4 under 2.11's rule: %+v", st)
	}
	path := filepath.Join(dir, "s.json")
	if err := s.Save(path); err != nil {
		t.Fatal(err)
	}
	saved, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(saved), `"handoff": "version"`) && !strings.Contains(string(saved), `"handoff":"version"`) {
		t.Errorf("saved session lacks handoff version:\n%s", saved)
	}
	l, err := Load(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.Handoff() != engine.HandoffRaise {
		t.Errorf("loaded: Handoff() = %v, want raise", l.Handoff())
	}
}
