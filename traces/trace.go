package traces

import (
	"bytes"
	"io"
)

// Trace is a whole trace in memory: what the engine and the UI step
// through. Make one with Read, ReadFile or a Builder.
type Trace struct {
	// File names the trace in problems: its path, or a name for one built in code.
	File    string
	Header  Header
	Records []Record
}

// ReadFile checks the trace at path and reads it, decompressed as Open
// does (.gz, zstd). A trace that does not check is refused whole: the
// error is Problems, every problem found.
func ReadFile(path string) (*Trace, error) {
	in, err := Open(path)
	if err != nil {
		return nil, Problems{*asProblem(err, path)}
	}
	defer in.Close()
	return Read(in, path)
}

// Read checks the trace r gives and reads it; see ReadFile. file names it
// in problems. The input is kept in memory while it is checked, since a
// reader cannot be read twice.
func Read(r io.Reader, file string) (*Trace, error) {
	var buf bytes.Buffer
	if ps := Check(io.TeeReader(r, &buf), file); len(ps) > 0 {
		return nil, Problems(ps)
	}
	return readAll(&buf, file)
}

func readAll(r io.Reader, file string) (*Trace, error) {
	rd, err := NewReader(r, file)
	if err != nil {
		return nil, Problems{*asProblem(err, file)}
	}
	t := &Trace{File: file, Header: rd.Header()}
	for {
		rec, err := rd.Next()
		if err == io.EOF {
			return t, nil
		}
		if err != nil {
			return nil, Problems{*asProblem(err, file)}
		}
		t.Records = append(t.Records, rec)
	}
}

// Write writes the trace in canonical form.
func (t *Trace) Write(w io.Writer) error { return Write(w, t.Header, t.Records) }

// Check writes the trace and checks what it wrote, so a trace built in
// code gets the same problems, at the same lines, as the file it would be.
func (t *Trace) Check() []Problem {
	var buf bytes.Buffer
	if err := t.Write(&buf); err != nil {
		return []Problem{{File: t.File, Msg: err.Error()}}
	}
	return Check(&buf, t.File)
}
