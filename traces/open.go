package traces

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/zstd"
)

// Stdin is the path that names standard input, as in most tools.
const Stdin = "-"

// StdinName is how standard input is named in problems and reports.
const StdinName = "<stdin>"

// Input is a trace opened for reading: a file, standard input or a pipe,
// decompressed when it is gzip or zstd (told by its first bytes, so a
// compressed pipe works too). It is read once, front to back: nothing
// seeks, so every kind of input behaves the same.
type Input struct {
	r     io.Reader // the trace's text
	name  string
	size  int64 // bytes of the input as stored; -1 when unknown (a pipe)
	read  atomic.Int64
	close []func() error
}

// Open opens the trace at path: Stdin ("-") for standard input; a
// directory, a missing or unreadable file is a *Problem naming path.
func Open(path string) (*Input, error) {
	return open(context.Background(), path, false, 0)
}

// OpenFollow opens the trace at path to follow it while it is still being
// written, as `tail -f` and `less +F` do: at the end of a regular file it
// waits for more instead of ending. It ends (io.EOF) when ctx is done, or
// when nothing new has come for idle (0: wait for ever). A pipe or FIFO
// ends when its writer closes it, as it always does.
func OpenFollow(ctx context.Context, path string, idle time.Duration) (*Input, error) {
	return open(ctx, path, true, idle)
}

func open(ctx context.Context, path string, follow bool, idle time.Duration) (*Input, error) {
	in := &Input{name: path, size: -1}
	var f *os.File
	if path == Stdin {
		f = os.Stdin
		in.name = StdinName
	} else {
		var err error
		if f, err = os.Open(path); err != nil {
			return nil, pathProblem(path, err)
		}
		in.close = append(in.close, f.Close)
	}
	st, err := f.Stat()
	if err != nil {
		in.Close()
		return nil, pathProblem(in.name, err)
	}
	if st.IsDir() {
		in.Close()
		return nil, &Problem{File: in.name, Msg: "is a directory, not a trace"}
	}
	var raw io.Reader = f
	if st.Mode().IsRegular() {
		in.size = st.Size()
		if follow {
			raw = &follower{ctx: ctx, r: f, idle: idle}
		}
	}
	if err := in.wrap(&counter{r: raw, n: &in.read}); err != nil {
		in.Close()
		return nil, err
	}
	return in, nil
}

// NewInput reads a trace from r (named file in problems), decompressing it
// as Open does.
func NewInput(r io.Reader, file string) (*Input, error) {
	in := &Input{name: file, size: -1}
	if err := in.wrap(&counter{r: r, n: &in.read}); err != nil {
		return nil, err
	}
	return in, nil
}

// Magic numbers of the compressed formats an input may be in.
var (
	gzipMagic = []byte{0x1f, 0x8b}
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
)

// wrap puts the decompressor the first bytes of raw ask for, if any, in
// front of it.
func (in *Input) wrap(raw io.Reader) error {
	br := bufio.NewReaderSize(raw, 64<<10)
	head, err := br.Peek(4)
	if err != nil && err != io.EOF && !errors.Is(err, bufio.ErrBufferFull) {
		return &Problem{File: in.name, Line: 1, Msg: "read error: " + err.Error()}
	}
	switch {
	case bytes.HasPrefix(head, gzipMagic):
		zr, err := gzip.NewReader(br)
		if err != nil {
			return &Problem{File: in.name, Msg: "gzip: " + err.Error()}
		}
		in.close = append(in.close, zr.Close)
		in.r = &decompressErr{r: zr, what: "gzip"}
	case bytes.HasPrefix(head, zstdMagic):
		// One goroutine: a trace is read front to back and the decoder's
		// own concurrency only costs memory here.
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
		if err != nil {
			return &Problem{File: in.name, Msg: "zstd: " + err.Error()}
		}
		in.close = append(in.close, func() error { zr.Close(); return nil })
		in.r = &decompressErr{r: zr, what: "zstd"}
	default:
		in.r = br
	}
	return nil
}

// Read reads the trace's text (decompressed).
func (in *Input) Read(p []byte) (int, error) { return in.r.Read(p) }

// Name is the input's name for problems: the path, or StdinName.
func (in *Input) Name() string { return in.name }

// Size is the size of the input as stored (compressed, if it is), or -1
// when it is not known in advance (a pipe, standard input from one).
func (in *Input) Size() int64 { return in.size }

// Offset is how many bytes of the stored input have been read so far: with
// Size, the progress of a long read. It is safe to call from another
// goroutine while the input is read.
func (in *Input) Offset() int64 { return in.read.Load() }

// Close closes the input (standard input stays open).
func (in *Input) Close() error {
	var errs []error
	for i := len(in.close) - 1; i >= 0; i-- {
		errs = append(errs, in.close[i]())
	}
	in.close = nil
	return errors.Join(errs...)
}

// ReadPath opens, checks and reads the trace at path (Stdin included) in
// one pass; a trace that does not check is refused whole, with Problems.
func ReadPath(path string) (*Trace, error) {
	in, err := Open(path)
	if err != nil {
		return nil, Problems{*asProblem(err, path)}
	}
	defer in.Close()
	return ReadChecked(in, in.Name())
}

// ReadChecked checks and reads the trace r gives in one pass (file names
// it in problems): the records, or Problems with every problem.
func ReadChecked(r io.Reader, file string) (*Trace, error) {
	cr, err := NewCheckedReader(r, file)
	if err != nil {
		return nil, Problems{*asProblem(err, file)}
	}
	t := &Trace{File: file, Header: cr.Header()}
	for {
		rec, err := cr.Next()
		if err == io.EOF {
			return t, nil
		}
		if err != nil {
			return nil, err
		}
		t.Records = append(t.Records, rec)
	}
}

// pathProblem turns an error opening path into a problem naming it once
// (the *fs.PathError's own text would name it twice).
func pathProblem(path string, err error) *Problem {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &Problem{File: path, Msg: err.Error()}
}

// counter counts the bytes read through it.
type counter struct {
	r io.Reader
	n *atomic.Int64
}

func (c *counter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// decompressErr names the format in a decompressor's errors: "gzip:
// unexpected EOF" says the file was cut, where "unexpected EOF" would not.
type decompressErr struct {
	r    io.Reader
	what string
}

func (d *decompressErr) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("%s: %w", d.what, err)
	}
	return n, err
}

// followPoll is how often a followed file is looked at for new data.
const followPoll = 100 * time.Millisecond

// follower reads a file that is still growing: at its end it waits for
// more rather than ending, until ctx is done or idle has passed with
// nothing new.
type follower struct {
	ctx  context.Context
	r    io.Reader
	idle time.Duration
}

func (f *follower) Read(p []byte) (int, error) {
	var quiet time.Duration
	for {
		n, err := f.r.Read(p)
		if n > 0 || (err != nil && err != io.EOF) {
			return n, err
		}
		if f.idle > 0 && quiet >= f.idle {
			return 0, io.EOF
		}
		t := time.NewTimer(followPoll)
		select {
		case <-f.ctx.Done():
			t.Stop()
			return 0, io.EOF
		case <-t.C:
		}
		quiet += followPoll
	}
}
