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

// OpenContext is Open for a reader that must stop when ctx is done (a
// command on SIGINT): from then on Read fails with an error that wraps
// ctx.Err(). An input that can keep a read waiting (a pipe, a FIFO with
// no writer yet, a terminal, /dev/zero's like) is opened and read on a
// goroutine of its own, so that the wait is given up at once too.
func OpenContext(ctx context.Context, path string) (*Input, error) {
	return open(ctx, path, false, 0)
}

// OpenFollow opens the trace at path to follow it while it is still being
// written, as `tail -f` and `less +F` do: at the end of a regular file it
// waits for more instead of ending. It ends (io.EOF) when ctx is done, or
// when nothing new has come for idle (0: wait for ever). A pipe or FIFO
// ends when its writer closes it, as it always does. A file truncated or
// replaced while followed ends the reading with a *TruncatedError.
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
		if f, err = openFile(ctx, path); err != nil {
			return nil, err
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
	switch {
	case st.Mode().IsRegular():
		in.size = st.Size()
		if follow {
			raw = &follower{ctx: ctx, r: f, f: f, path: path, idle: idle}
		} else if ctx.Done() != nil {
			raw = &ctxReader{ctx: ctx, r: f}
		}
	case ctx.Done() != nil:
		// A pipe ends when its writer closes it (followed or not), or
		// when ctx is done: a followed one then ends as a followed file
		// does, at io.EOF.
		a := newAsyncReader(ctx, f)
		a.eofOnDone = follow
		raw = a
		in.close = append(in.close, a.Close)
	}
	if err := in.wrap(&counter{r: raw, n: &in.read}); err != nil {
		in.Close()
		return nil, err
	}
	return in, nil
}

// openFile opens path for reading. Opening a FIFO waits for its writer,
// in the kernel: with a ctx that can end, the open is made on a goroutine
// so that the wait can be given up (the goroutine closes what it opens
// late).
func openFile(ctx context.Context, path string) (*os.File, error) {
	if ctx.Done() == nil {
		f, err := os.Open(path)
		if err != nil {
			return nil, pathProblem(path, err)
		}
		return f, nil
	}
	type opened struct {
		f   *os.File
		err error
	}
	ch := make(chan opened, 1)
	var gaveUp atomic.Bool
	go func() {
		f, err := os.Open(path)
		if err == nil && gaveUp.Load() {
			f.Close()
			return
		}
		ch <- opened{f, err}
	}()
	select {
	case o := <-ch:
		if o.err != nil {
			return nil, pathProblem(path, o.err)
		}
		return o.f, nil
	case <-ctx.Done():
		gaveUp.Store(true)
		select {
		case o := <-ch: // opened meanwhile
			if o.f != nil {
				o.f.Close()
			}
		default:
		}
		return nil, &Problem{File: path, Msg: "open: " + ctx.Err().Error()}
	}
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

// TruncatedError ends the reading of a followed file that became shorter
// than what was read of it, or was replaced by another file (a new inode
// at its path), as `tail -F` notices. The lines read so far are no longer
// the file's, and the new content's lines would be numbered on from the
// old ones: the reading stops rather than tell wrong line numbers.
type TruncatedError struct {
	File     string
	Replaced bool  // a new file at the path, rather than this one cut
	Read     int64 // bytes read before
}

func (e *TruncatedError) Error() string {
	if e.Replaced {
		return "file replaced while followed (a new file at its path): following stopped; open it again to read it from the start"
	}
	return fmt.Sprintf("file truncated while followed (shorter than the %d bytes read): following stopped; open it again to read it from the start", e.Read)
}

// follower reads a file that is still growing: at its end it waits for
// more rather than ending, until ctx is done or idle has passed with
// nothing new. Each time it finds nothing new it checks that the file was
// not truncated or replaced (TruncatedError).
type follower struct {
	ctx  context.Context
	r    io.Reader
	f    *os.File // the file r reads, for its size; nil: not checked
	path string   // its path, to notice a new file there
	idle time.Duration
	off  int64 // bytes read
	// truncated is set once a TruncatedError was returned.
	truncated atomic.Bool
}

func (f *follower) Read(p []byte) (int, error) {
	var quiet time.Duration
	for {
		if err := f.ctx.Err(); err != nil {
			return 0, io.EOF
		}
		n, err := f.r.Read(p)
		f.off += int64(n)
		if n > 0 || (err != nil && err != io.EOF) {
			return n, err
		}
		if te := f.changed(); te != nil {
			f.truncated.Store(true)
			return 0, te
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

// changed returns a TruncatedError when the file is shorter than what was
// read of it, or its path now names another file; nil otherwise.
func (f *follower) changed() *TruncatedError {
	if f.f == nil {
		return nil
	}
	st, err := f.f.Stat()
	if err != nil {
		return nil
	}
	if st.Size() < f.off {
		return &TruncatedError{File: f.path, Read: f.off}
	}
	if f.path != "" {
		if pst, err := os.Stat(f.path); err == nil && !os.SameFile(st, pst) {
			return &TruncatedError{File: f.path, Replaced: true, Read: f.off}
		}
	}
	return nil
}

// ctxReader stops reading a file once ctx is done: its reads never wait
// long, so a look at ctx before each is enough.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, fmt.Errorf("read stopped: %w", err)
	}
	return c.r.Read(p)
}

// asyncReader reads an input whose reads can wait for ever (a pipe with a
// quiet writer, a FIFO, a terminal) on a goroutine of its own, one read at
// a time, so that Read can give up the wait when ctx is done. The
// goroutine ends at the input's end or error; one left waiting in a read
// ends when the input is closed (or with the process, for standard input).
type asyncReader struct {
	ctx  context.Context
	req  chan struct{}
	res  chan asyncChunk
	buf  []byte // what is left of the last chunk
	err  error  // the input's error, after buf
	busy bool   // a read was asked for and not answered yet
	// eofOnDone ends the input at io.EOF when ctx is done, rather than
	// with an error (a followed pipe).
	eofOnDone bool
}

type asyncChunk struct {
	b   []byte
	err error
}

func newAsyncReader(ctx context.Context, r io.Reader) *asyncReader {
	a := &asyncReader{ctx: ctx, req: make(chan struct{}, 1), res: make(chan asyncChunk, 1)}
	go func() {
		// One buffer: the next read is only asked for once Read has
		// handed out all of the last one.
		buf := make([]byte, 64<<10)
		for range a.req {
			n, err := r.Read(buf)
			a.res <- asyncChunk{buf[:n], err}
			if err != nil {
				return
			}
		}
	}()
	return a
}

// stopped is what Read returns once ctx is done.
func (a *asyncReader) stopped() error {
	if a.eofOnDone {
		return io.EOF
	}
	return fmt.Errorf("read stopped: %w", a.ctx.Err())
}

// Close ends the goroutine once its read in progress, if any, returns.
func (a *asyncReader) Close() error {
	close(a.req)
	return nil
}

func (a *asyncReader) Read(p []byte) (int, error) {
	for len(a.buf) == 0 {
		if a.err != nil {
			return 0, a.err
		}
		if a.ctx.Err() != nil {
			return 0, a.stopped()
		}
		if !a.busy {
			a.busy = true
			a.req <- struct{}{}
		}
		select {
		case <-a.ctx.Done():
			return 0, a.stopped()
		case c := <-a.res:
			a.busy = false
			a.buf, a.err = c.b, c.err
		}
	}
	n := copy(p, a.buf)
	a.buf = a.buf[n:]
	return n, nil
}
