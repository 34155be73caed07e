package pickle

import (
	"bytes"
	"math"
	"reflect"
	"testing"

	"github.com/cgtviz/cgtviz/engine/alloc/internal/unpickle"
)

func encode(t *testing.T, f func(e *Encoder)) []byte {
	t.Helper()
	e := NewEncoder()
	f(e)
	b, err := e.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBytes checks the exact bytes of small values against hand-computed
// pickles (what Python's pickle writes at protocol 4, less FRAME and memo).
func TestBytes(t *testing.T) {
	for _, c := range []struct {
		name string
		f    func(e *Encoder)
		want string
	}{
		{"0", func(e *Encoder) { e.Int(0) }, "K\x00"},
		{"255", func(e *Encoder) { e.Int(255) }, "K\xff"},
		{"256", func(e *Encoder) { e.Int(256) }, "M\x00\x01"},
		{"65535", func(e *Encoder) { e.Int(65535) }, "M\xff\xff"},
		{"65536", func(e *Encoder) { e.Int(65536) }, "J\x00\x00\x01\x00"},
		{"-1", func(e *Encoder) { e.Int(-1) }, "J\xff\xff\xff\xff"},
		{"maxint32", func(e *Encoder) { e.Int(math.MaxInt32) }, "J\xff\xff\xff\x7f"},
		{"2^31", func(e *Encoder) { e.Int(1 << 31) }, "\x8a\x05\x00\x00\x00\x80\x00"},
		{"-2^31-1", func(e *Encoder) { e.Int(-1<<31 - 1) }, "\x8a\x05\xff\xff\xff\x7f\xff"},
		{"address", func(e *Encoder) { e.Int(0x7f0000200000) }, "\x8a\x06\x00\x00\x20\x00\x00\x7f"},
		{"2^47", func(e *Encoder) { e.Int(1 << 47) }, "\x8a\x07\x00\x00\x00\x00\x00\x80\x00"},
		{"maxint64", func(e *Encoder) { e.Int(math.MaxInt64) }, "\x8a\x08\xff\xff\xff\xff\xff\xff\xff\x7f"},
		{"minint64", func(e *Encoder) { e.Int(math.MinInt64) }, "\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x80"},
		{"uint64", func(e *Encoder) { e.Uint(1 << 63) }, "\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x80\x00"},
		{"1.5", func(e *Encoder) { e.Float(1.5) }, "G\x3f\xf8\x00\x00\x00\x00\x00\x00"},
		{"str", func(e *Encoder) { e.String("alloc") }, "\x8c\x05alloc"},
		{"true", func(e *Encoder) { e.Bool(true) }, "\x88"},
		{"false", func(e *Encoder) { e.Bool(false) }, "\x89"},
		{"none", func(e *Encoder) { e.None() }, "N"},
		{"empty dict", func(e *Encoder) { e.BeginDict(); e.EndDict() }, "}"},
		{"empty list", func(e *Encoder) { e.BeginList(); e.EndList() }, "]"},
		{"empty tuple", func(e *Encoder) { e.BeginTuple(); e.EndTuple() }, ")"},
		{"dict", func(e *Encoder) {
			e.BeginDict()
			e.String("a")
			e.Int(1)
			e.String("b")
			e.Bool(false)
			e.EndDict()
		}, "}(\x8c\x01aK\x01\x8c\x01b\x89u"},
		{"list", func(e *Encoder) { e.BeginList(); e.Int(1); e.Int(2); e.EndList() }, "](K\x01K\x02e"},
		{"pool id", func(e *Encoder) { e.BeginTuple(); e.Int(0); e.Int(1); e.EndTuple() }, "K\x00K\x01\x86"},
		{"tuple4", func(e *Encoder) {
			e.BeginTuple()
			e.Int(1)
			e.Int(2)
			e.Int(3)
			e.Int(4)
			e.EndTuple()
		}, "(K\x01K\x02K\x03K\x04t"},
		{"nested", func(e *Encoder) {
			e.BeginList()
			e.BeginTuple()
			e.Int(0)
			e.Int(0)
			e.EndTuple()
			e.BeginDict()
			e.EndDict()
			e.EndList()
		}, "](K\x00K\x00\x86}e"},
	} {
		got := encode(t, c.f)
		want := "\x80\x04" + c.want + "."
		if string(got) != want {
			t.Errorf("%s: got % x\nwant % x", c.name, got, []byte(want))
		}
	}
}

func TestLongString(t *testing.T) {
	s := string(bytes.Repeat([]byte("x"), 300))
	got := encode(t, func(e *Encoder) { e.String(s) })
	if want := "\x80\x04X\x2c\x01\x00\x00" + s + "."; string(got) != want {
		t.Errorf("got % x", got[:10])
	}
}

func TestUnbalanced(t *testing.T) {
	for name, f := range map[string]func(e *Encoder){
		"open dict":     func(e *Encoder) { e.BeginDict() },
		"wrong close":   func(e *Encoder) { e.BeginList(); e.EndDict() },
		"key no value":  func(e *Encoder) { e.BeginDict(); e.String("k"); e.EndDict() },
		"close nothing": func(e *Encoder) { e.EndTuple() },
	} {
		e := NewEncoder()
		f(e)
		if _, err := e.Bytes(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// FuzzRoundTrip: ints, floats and strings written in a dict of a list and
// a tuple read back equal.
func FuzzRoundTrip(f *testing.F) {
	f.Add(int64(0), uint64(0), 0.0, "")
	f.Add(int64(-1), uint64(1<<63), 1.5, "segment_alloc")
	f.Add(int64(math.MinInt64), uint64(math.MaxUint64), math.Inf(1), "ü")
	f.Fuzz(func(t *testing.T, i int64, u uint64, x float64, s string) {
		e := NewEncoder()
		e.BeginDict()
		e.String("l")
		e.BeginList()
		e.Int(i)
		e.Uint(u)
		e.Float(x)
		e.EndList()
		e.String("k" + s)
		e.BeginTuple()
		e.Int(i)
		e.String(s)
		e.EndTuple()
		e.EndDict()
		b, err := e.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		v, err := unpickle.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		var wantU any = int64(u)
		if u > math.MaxInt64 {
			wantU = u
		}
		d := v.(*unpickle.Dict)
		l := d.Vals["l"].([]any)
		if l[0] != i || l[1] != wantU || !(l[2] == x || math.IsNaN(x) && math.IsNaN(l[2].(float64))) {
			t.Fatalf("list %v, want %v %v %v", l, i, u, x)
		}
		if !reflect.DeepEqual(d.Vals["k"+s], unpickle.Tuple{i, s}) {
			t.Fatalf("tuple %v", d.Vals["k"+s])
		}
	})
}
