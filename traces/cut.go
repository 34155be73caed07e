package traces

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Cut says a trace ends mid-record: its last line has no line ending and
// is JSON broken off at its end. That is what a recording that stopped
// mid-write leaves (the recorder writes the trace as the program runs, so
// a program that crashed, was killed or ran out of memory leaves its
// records up to the last whole line): the records before it are the
// trace. Reader.Next returns it (a *Cut, which unwraps to its Problem for
// a caller that takes every error as one) after the last whole record;
// CheckedReader ends there (io.EOF) and keeps it for Cut.
type Cut struct {
	Problem
	// Records is how many records came before the cut line.
	Records int
}

// Error returns the cut as file:line: msg.
func (c *Cut) Error() string { return c.Problem.String() }

// Unwrap gives the cut as a *Problem.
func (c *Cut) Unwrap() error { return &c.Problem }

// IsCut reports whether err says the trace was cut (a *Cut).
func IsCut(err error) bool {
	var c *Cut
	return errors.As(err, &c)
}

// cutLine returns the Cut for a last line without a line ending (line
// number n, after records whole records) that does not parse, or nil when
// it is not broken off at its end (JSON that is wrong before its end is a
// problem like any other).
func cutLine(file string, n, records int, line []byte) *Cut {
	// A decoder fed the line says io.ErrUnexpectedEOF exactly when the
	// line is right as far as it goes and ends inside a value.
	var v any
	if err := json.NewDecoder(bytes.NewReader(line)).Decode(&v); err != io.ErrUnexpectedEOF {
		return nil
	}
	return &Cut{Problem: Problem{File: file, Line: n, Msg: fmt.Sprintf(
		"the trace ends mid-record (cut: the recording stopped, e.g. the program crashed); "+
			"the %d records before it are checked", records)}, Records: records}
}

// UnendedNote is what cgtviz says of a trace whose recording did not end
// (Header.Unended): the records are the trace up to where the program
// stopped.
const UnendedNote = "the recording did not end (the program died, was killed or exited before the recorder " +
	"finished): the trace holds what was recorded up to its last line"

// Unended reports whether the header says its recording did not end: the
// meta object's "journal" key, which a recorder that writes the trace as
// the program runs (cgtrace) puts in the header it writes first and leaves
// out of the one it writes when the recording ends. For a trace whose last
// line is whole nothing else says the program died after it; one cut
// mid-line also has a Cut.
func (h Header) Unended() bool {
	if len(h.Meta) == 0 {
		return false
	}
	var m struct {
		Journal json.RawMessage `json:"journal"`
	}
	if json.Unmarshal(h.Meta, &m) != nil {
		return false
	}
	return len(m.Journal) > 0 && string(m.Journal) != "null" && string(m.Journal) != "false"
}
