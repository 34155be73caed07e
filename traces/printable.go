package traces

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Printable returns s safe to print on a terminal: every control
// character (C0, DEL and C1: ESC, BEL, NUL, CSI and the rest) is written
// as its Go escape (\x1b, \a, \x00, \u009b), and invalid UTF-8 as U+FFFD,
// so that a string from a trace (its name, a note, an expected error)
// can neither move the cursor, set the window's title nor start an escape
// sequence of the terminal's. Newlines and tabs are escaped too: every
// such string is printed within one line. A string with nothing to clean
// is returned as it is, without copying.
//
// It is the one cleaner of trace text: the terminal UI, the reports and
// the DOT output (render) all print through it.
func Printable(s string) string {
	if printableAlready(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	// range yields U+FFFD for each invalid byte.
	for _, r := range s {
		switch {
		case isControl(r):
			q := strconv.QuoteRune(r) // '\x1b', '\a', '\u009b'
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// isControl reports whether r is a C0 or C1 control character or DEL.
func isControl(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) }

// printableAlready reports whether Printable would return s unchanged.
func printableAlready(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			// Anything not printable ASCII is looked at rune by rune.
			for _, r := range s[i:] {
				if r == utf8.RuneError || isControl(r) {
					return false
				}
			}
			return true
		}
	}
	return true
}
