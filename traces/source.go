package traces

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// Source is a record's "src": where in the user's program it came from
// (added to version 1: a recorder's note of the Python frame that made
// the call, the def of the compiled function, the tensor's birth, the
// host read). A trace without it reads as before; it changes no
// decision, and is there for what is shown and said (PyTorch's errors
// name the user's line: "File "model.py", line 73, in forward").
type Source struct {
	// File is the frame's file as the recorder found it (co_filename:
	// a path, or "<stdin>"): non-empty, at most MaxSrcFileLen bytes.
	File string
	// Line is the 1-based line in File.
	Line int
	// Fn is the frame's function ("forward", "<module>"); "" when absent.
	Fn string
}

// Limits of a src's strings: a path and a function name, not a payload.
const (
	MaxSrcFileLen = 4096
	MaxSrcFnLen   = 1024
)

// String gives the source as file:line (in fn).
func (s Source) String() string {
	if s.Fn == "" {
		return s.File + ":" + strconv.Itoa(s.Line)
	}
	return fmt.Sprintf("%s:%d (in %s)", s.File, s.Line, s.Fn)
}

// rawSource is "src" as decoded.
type rawSource struct {
	File *string `json:"file"`
	Line *int64  `json:"line"`
	Fn   *string `json:"fn"`
}

// parseSource reads a record's "src" (its raw JSON, present and not
// null) and returns it, or a message saying what is wrong.
func parseSource(raw []byte) (*Source, string) {
	if kindOf(raw) != "object" {
		return nil, fmt.Sprintf(`field "src": want an object {"file": ..., "line": ...}, got %s`, jsonKind(kindOf(raw)))
	}
	var s rawSource
	if m := decodeStrict(raw, &s, "src"); m != "" {
		return nil, "src: " + m + " (src fields: file, line, fn)"
	}
	switch {
	case s.File == nil:
		return nil, `src: missing "file"`
	case s.Line == nil:
		return nil, `src: missing "line"`
	case *s.File == "":
		return nil, "src: file is empty"
	case len(*s.File) > MaxSrcFileLen:
		return nil, fmt.Sprintf("src: file is %d bytes, want at most %d (MaxSrcFileLen)", len(*s.File), MaxSrcFileLen)
	case *s.Line < 1 || *s.Line > 1<<31-1:
		return nil, fmt.Sprintf("src: line is %d, want 1 or more", *s.Line)
	case hasControl(*s.File):
		return nil, "src: file " + quoteShort(*s.File) + " holds a control character"
	}
	out := &Source{File: *s.File, Line: int(*s.Line)}
	if s.Fn != nil {
		switch {
		case len(*s.Fn) > MaxSrcFnLen:
			return nil, fmt.Sprintf("src: fn is %d bytes, want at most %d (MaxSrcFnLen)", len(*s.Fn), MaxSrcFnLen)
		case hasControl(*s.Fn):
			return nil, "src: fn " + quoteShort(*s.Fn) + " holds a control character"
		}
		out.Fn = *s.Fn
	}
	return out, ""
}

// hasControl reports whether s holds a control character: a source is
// shown on terminals, where one could move the cursor or set the title.
func hasControl(s string) bool {
	return strings.IndexFunc(s, unicode.IsControl) >= 0
}

// src writes a record's "src", when it has one.
func (e *enc) src(s *Source) {
	if s == nil {
		return
	}
	e.key("src")
	e.b = append(e.b, `{"file": `...)
	e.str(s.File)
	e.b = append(e.b, `, "line": `...)
	e.b = strconv.AppendInt(e.b, int64(s.Line), 10)
	if s.Fn != "" {
		e.b = append(e.b, `, "fn": `...)
		e.str(s.Fn)
	}
	e.b = append(e.b, '}')
}
