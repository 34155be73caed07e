package unpickle

import "testing"

// FuzzDecode: no input makes the decoder panic or loop.
func FuzzDecode(f *testing.F) {
	f.Add([]byte("\x80\x04}(\x8c\x01aK\x01u."))
	f.Add([]byte("\x80\x04](K\x01J\xff\xff\xff\xff\x8a\x06\x00\x00\x00\x00\x00\x01e."))
	f.Add([]byte("\x80\x04(K\x01K\x02\x86."))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := Decode(b)
		if err != nil {
			return
		}
		if b[len(b)-1] != '.' {
			t.Fatalf("%q decoded without a final stop", b)
		}
		if _, ok := v.(mark); ok {
			t.Fatalf("%q decoded to a mark", b)
		}
	})
}

func TestDecodeErrors(t *testing.T) {
	for _, b := range []string{
		"", "\x80\x05N.", "\x80\x04", "\x80\x04NN.", "\x80\x04N.x", "\x80\x04u.", "\x80\x04}(K\x01K\x02u.",
		"\x80\x04I1\n.", "(.", "\x80\x04\x8c\x05ab.", "\x80\x04\x86.", "\x80\x04\x8a\x0a" + "0123456789.",
	} {
		if v, err := Decode([]byte(b)); err == nil {
			t.Errorf("%q decoded to %v", b, v)
		}
	}
}
