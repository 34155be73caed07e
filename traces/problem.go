package traces

import (
	"fmt"
	"strings"
)

// Problem is one thing wrong with a trace, at a place in its file. The
// reader and the checker report every refusal as a Problem, so tools can
// print them all in one form: file:line: msg, or file:line:col: msg for JSON
// syntax errors, where the column helps to find a stray comma.
type Problem struct {
	File string
	// Line is 1-based; 0 when the problem is about the whole file.
	Line int
	// Col is the 1-based byte column within the line; 0 when not known.
	Col int
	Msg string
}

// Error returns the problem as file:line: msg.
func (p *Problem) Error() string { return p.String() }

// String returns the problem as file:line: msg (or file:line:col: msg).
// File and Msg are printed through Printable: a message quotes what the
// trace holds, which must not reach a terminal as control characters.
func (p Problem) String() string {
	p.File, p.Msg = Printable(p.File), Printable(p.Msg)
	switch {
	case p.Line <= 0:
		return fmt.Sprintf("%s: %s", p.File, p.Msg)
	case p.Col <= 0:
		return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Msg)
	default:
		return fmt.Sprintf("%s:%d:%d: %s", p.File, p.Line, p.Col, p.Msg)
	}
}

// Problems is every problem found in a trace, in file order. It is the error
// Read and ReadFile return, so a caller can print all of them at once.
type Problems []Problem

// Error returns the problems one per line.
func (ps Problems) Error() string {
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p.String())
	}
	return b.String()
}
