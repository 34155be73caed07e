package engine_test

import (
	"reflect"
	"testing"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/traces/gen"
)

func TestZZDbg(t *testing.T) {
	tr := gen.Trace(145, gen.Options{})
	e, _ := engine.New(tr.Header, engine.Options{Devices: simDevices(1), Check: true})
	ref, _ := engine.New(tr.Header, engine.Options{Devices: simDevices(1), Check: true})
	var c *engine.Engine
	var before *engine.State
	for i := range tr.Records {
		if i == 56 {
			c, _ = e.Clone()
			before = c.State()
		}
		e.Apply(&tr.Records[i])
		if i < 56 {
			ref.Apply(&tr.Records[i])
		}
		if c != nil {
			if st := c.State(); !reflect.DeepEqual(before, st) {
				t.Fatalf("applying line %d to the original changed the clone: %s", tr.Records[i].Line, stateDiff(before, st))
			}
		}
	}
	for i := 56; i < len(tr.Records); i++ {
		s := ref.Apply(&tr.Records[i])
		s2 := c.Apply(&tr.Records[i])
		if a, b := ref.State(), c.State(); !reflect.DeepEqual(a, b) {
			t.Logf("line %d %s %s %v: %s %s / %s %s", tr.Records[i].Line, tr.Records[i].Op, tr.Records[i].Fn, tr.Records[i].Out, s.Action, s.Err, s2.Action, s2.Err)
			t.Fatalf("differs: %s", stateDiff(a, b))
		}
	}
}
