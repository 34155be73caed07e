package traces

import (
	"encoding/json"
	"fmt"
	"strings"
)

// knownKeys is every field name the format has, at any level, each to
// itself. The scanner uses it to refuse keys that differ from one only in
// case (encoding/json matches keys case-insensitively, the format does
// not), and hands out the map's string for a known top-level key rather
// than a new one made from the line's bytes (a def's ten keys were ten
// allocations).
var knownKeys = map[string]string{}

func init() {
	for k := range fieldWant {
		knownKeys[k] = k
	}
	knownKeys["b"] = "b"
}

// scanner walks a line's bytes before it is decoded, in one pass and
// without allocating in the common case. It bounds nesting (encoding/json
// would recurse first), refuses repeated keys in an object (encoding/json
// keeps the last one silently) and keys spelled in the wrong case, and
// collects the top-level keys in order so the reader can check which
// fields a record has. Anything under the header's "meta" is free-form and
// skipped. On malformed JSON it stops quietly: the decoder reports that.
// maxFields bounds the fields of one object (outside "meta"): no object
// of the format has more than a dozen, and the duplicate check is quadratic.
const maxFields = 64

type scanner struct {
	frames []frame
	top    []string
}

type frame struct {
	obj  bool
	skip bool
	keys [][]byte
}

// run returns the top-level keys, a message for the first bad key ("" if
// none), and whether the nesting is too deep.
func (s *scanner) run(line []byte) (top []string, keyMsg string, deep bool) {
	s.frames = s.frames[:0]
	s.top = s.top[:0]
	for i := 0; i < len(line); i++ {
		switch c := line[i]; c {
		case '"':
			j, esc := i+1, false
			for j < len(line) && line[j] != '"' {
				if line[j] == '\\' {
					esc = true
					j++
				}
				j++
			}
			if j >= len(line) {
				return s.top, keyMsg, false
			}
			str := line[i+1 : j]
			i = j
			n := len(s.frames)
			if n == 0 || !s.frames[n-1].obj || !followedByColon(line, j+1) {
				continue
			}
			f := &s.frames[n-1]
			if esc {
				var u string
				if json.Unmarshal(line[i-len(str)-1:j+1], &u) != nil {
					continue
				}
				str = []byte(u)
			}
			name, known := knownKeys[string(str)]
			if n == 1 && len(s.top) < maxFields {
				if !known {
					name = string(str)
				}
				s.top = append(s.top, name)
			}
			if f.skip || keyMsg != "" {
				if n > 1 || len(f.keys) < maxFields {
					f.keys = append(f.keys, str)
				}
				continue
			}
			if len(f.keys) >= maxFields {
				keyMsg = fmt.Sprintf("an object has more than %d fields", maxFields)
			}
			for _, k := range f.keys {
				if keyMsg == "" && string(k) == string(str) {
					keyMsg = fmt.Sprintf("field %q appears twice", str)
				}
			}
			if keyMsg == "" && !known {
				for k := range knownKeys {
					if strings.EqualFold(k, string(str)) {
						keyMsg = fmt.Sprintf("unknown field %q (field names are lowercase: %q)", str, k)
						break
					}
				}
			}
			f.keys = append(f.keys, str)
		case '{', '[':
			n := len(s.frames)
			if n >= MaxNesting {
				return s.top, keyMsg, true
			}
			skip := n > 0 && s.frames[n-1].skip
			if n == 1 && len(s.frames[0].keys) > 0 && string(s.frames[0].keys[len(s.frames[0].keys)-1]) == "meta" {
				skip = true
			}
			if n < cap(s.frames) {
				s.frames = s.frames[:n+1]
				s.frames[n].keys = s.frames[n].keys[:0]
			} else {
				s.frames = append(s.frames, frame{})
			}
			s.frames[n].obj = c == '{'
			s.frames[n].skip = skip
		case '}', ']':
			if len(s.frames) > 0 {
				s.frames = s.frames[:len(s.frames)-1]
			}
		}
	}
	return s.top, keyMsg, false
}

func followedByColon(line []byte, i int) bool {
	for ; i < len(line); i++ {
		switch line[i] {
		case ' ', '\t', '\r', '\n':
			continue
		case ':':
			return true
		default:
			return false
		}
	}
	return false
}
