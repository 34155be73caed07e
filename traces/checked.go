package traces

import (
	"errors"
	"io"
)

// CheckedReader reads a trace one record at a time and checks each record
// as it comes, with the rules of Check, before handing it on. It is the one
// pass `cgtviz run` makes over its input: a record is only returned once
// everything before it and the record itself have checked, so a caller that
// acts on what Next returns never acts on a bad record, and the input (a
// pipe, say) is read once.
//
// At the first problem Next stops handing out records: it reads and checks
// the rest of the input, as Check does, and returns every problem as a
// Problems error (at most MaxProblems, then "too many errors"). After that,
// and after the last record, it returns io.EOF.
type CheckedReader struct {
	rd   *Reader
	c    *checker
	n    int
	done bool
	cut  *Cut
}

// Cut returns how the trace was cut, once Next has returned io.EOF for a
// trace that ends mid-record (nil otherwise).
func (cr *CheckedReader) Cut() *Cut { return cr.cut }

// NewCheckedReader reads the header of a trace from r; file names it in
// problems. A bad header is a *Problem.
func NewCheckedReader(r io.Reader, file string) (*CheckedReader, error) {
	rd, err := NewReader(r, file)
	if err != nil {
		return nil, err
	}
	return &CheckedReader{rd: rd, c: newChecker(file, rd.Header())}, nil
}

// newChecker is a checker with empty symbol tables for a trace's header.
func newChecker(file string, hdr Header) *checker {
	return &checker{
		file:    file,
		hdr:     hdr,
		funcs:   map[string]int32{},
		names:   map[string]*binding{},
		deleted: map[string]deadName{},
		memo:    map[string]*bodyResult{},
		cfg:     hdr.Config,
	}
}

// Header returns the trace's header.
func (cr *CheckedReader) Header() Header { return cr.rd.Header() }

// Records returns how many records have been read so far (all of them
// once Next has returned io.EOF or the problems).
func (cr *CheckedReader) Records() int { return cr.n }

// Next returns the next record, once it has checked; io.EOF after the last
// one; or, at the first problem, Problems with every problem of the trace.
func (cr *CheckedReader) Next() (Record, error) {
	if cr.done {
		return Record{}, io.EOF
	}
	rec, err := cr.rd.Next()
	if err == io.EOF {
		cr.done = true
		return Record{}, io.EOF
	}
	if c := (*Cut)(nil); errors.As(err, &c) {
		cr.done, cr.cut = true, c
		return Record{}, io.EOF
	}
	cr.n++
	if err != nil {
		cr.c.add(*asProblem(err, cr.c.file))
		cr.c.recover(&rec)
	} else {
		cr.c.record(&rec)
	}
	if len(cr.c.probs) == 0 {
		return rec, nil
	}
	// The first problem: the rest is checked, not run, so that every
	// problem is reported, as `cgtviz check` would.
	cr.done = true
	for !cr.c.full {
		rec, err := cr.rd.Next()
		if err == io.EOF {
			break
		}
		if IsCut(err) {
			break
		}
		cr.n++
		if err != nil {
			cr.c.add(*asProblem(err, cr.c.file))
			cr.c.recover(&rec)
			continue
		}
		cr.c.record(&rec)
	}
	return Record{}, Problems(cr.c.probs)
}

// IsProblems reports whether err carries trace problems (a *Problem or
// Problems), as opposed to a failure of the program reading them.
func IsProblems(err error) bool {
	var p *Problem
	var ps Problems
	return errors.As(err, &p) || errors.As(err, &ps)
}
