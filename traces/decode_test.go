package traces

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	gojson "github.com/goccy/go-json"
)

// FuzzDecoders holds the fast decoder (goccy/go-json) to encoding/json's
// verdict on every line: both accept it or both refuse it, and what they
// accept decodes to the same record. The reader trusts the fast one's
// success, so a line one accepts and the other refuses would change what
// a trace means.
func FuzzDecoders(f *testing.F) {
	addSeeds(f)
	for _, s := range []string{
		`{"op":"call","fn":"f","args":["x"],"out":["y"]}`,
		`{"op":"call","fn":"f","args":["x"],"out":"y"}`,
		`{"OP":"step"}`, `{"op":"step"} x`, `{"op":"st\u0065p"}`, `{"op":"step",}`,
		`{"shape":[1e3]}`, `{"seed":9223372036854775808}`, `{"op":1}`, `[]`, `null`,
		`{"op":"step","op":"del"}`, `{"b":"\ud800"}`, `{"values":[1,2,NaN]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, line := range bytes.Split(data, []byte{'\n'}) {
			var fast, std rawRecord
			errFast := gojson.Unmarshal(line, &fast)
			errStd := json.Unmarshal(line, &std)
			if (errFast == nil) != (errStd == nil) {
				t.Fatalf("%q: go-json error %v, encoding/json error %v", line, errFast, errStd)
			}
			if errFast == nil && !reflect.DeepEqual(fast, std) {
				t.Fatalf("%q: go-json decodes\n%+v\nencoding/json\n%+v", line, fast, std)
			}
		}
	})
}
