package traces

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"sync"
	"time"
)

// Index is a trace on disk read on demand: the header, and the byte offset
// of every record line, found by one pass in the background that also
// checks the trace with the rules of Check. A record is parsed from the
// file when asked for (a small cache keeps the recent ones), so memory is
// about 4 bytes a record however long the trace: a debugger can open a
// trace of MaxRecords records without holding them.
//
// Checked records are those before the first problem: only they may be
// run (Checked). Problems found later are kept with their lines
// (Progress). In follow mode the pass waits at the end of the file for
// more, as OpenFollow does, so records appear as they land.
//
// All methods are safe for concurrent use.
type Index struct {
	file string
	hdr  Header
	f    *os.File // read with ReadAt: the pass has its own handle
	size int64    // at open; -1 when following (the file grows)

	ctx    context.Context // ends the pass (Close)
	cancel context.CancelFunc
	done   chan struct{}

	mu sync.Mutex
	// Record i starts at blocks[b].base + int64(rel[i]) for the block b
	// holding i: 4 bytes a record rather than 8. A new block starts
	// whenever an offset does not fit in 32 bits of its block's base.
	blocks []indexBlock
	rel    offsets
	end    int64 // end of the last record line indexed
	// Line of record i is i+2 plus the extra of the last fix at or before
	// i: blank lines are rare, so only the changes are kept.
	fixes   []lineFix
	cfgs    []cfgAt // configs in force from a record on, ascending
	checked int     // records before the first problem
	probs   []Problem
	read    int64 // bytes the pass has read
	defs    []string
	defSeen map[string]bool
	fin     bool
	err     error // an I/O error that ended the pass

	cache    map[int]*Record
	cacheAge []int // insertion order, for eviction

	fol       *follower    // the followed file's reader; nil when not followed
	closeFile func() error // closes f (and a spool's input)
}

// offsets is a growing list of 32-bit offsets kept in fixed chunks: one
// slice doubled as it grows would hold up to twice its length, and copy
// itself each time, at 50M records hundreds of MB.
type offsets struct {
	chunks [][]uint32
	n      int
}

const offsetChunk = 1 << 16

func (o *offsets) push(v uint32) {
	if o.n%offsetChunk == 0 {
		o.chunks = append(o.chunks, make([]uint32, 0, offsetChunk))
	}
	c := &o.chunks[len(o.chunks)-1]
	*c = append(*c, v)
	o.n++
}

func (o *offsets) at(i int) uint32 { return o.chunks[i/offsetChunk][i%offsetChunk] }

type indexBlock struct {
	first int
	base  int64
}

type lineFix struct{ rec, extra int }

type cfgAt struct {
	rec int // the config applies to records after rec
	cfg Config
}

// indexCache is how many parsed records an Index keeps: a screen of the
// trace pane, a timeline's samples and the way back of a session.
const indexCache = 4096

// ErrNotIndexable is returned by OpenIndex for an input that cannot be
// read at random: standard input, a pipe, a compressed file. Such traces
// are read whole instead (ReadPath).
var ErrNotIndexable = errors.New("not a plain file: cannot be read on demand")

// OpenIndex opens the plain trace file at path, reads its header and
// starts indexing and checking it in the background. With follow, the pass
// waits at the end of the file for more until ctx is done or Close. A bad
// header is a *Problem; a pipe or compressed file is ErrNotIndexable
// (SpoolIndex reads those).
func OpenIndex(ctx context.Context, path string, follow bool) (*Index, error) {
	if path == Stdin {
		return nil, ErrNotIndexable
	}
	// Looked at before it is opened: opening a FIFO waits for its writer
	// and takes that writer's data, which a second open (SpoolIndex's)
	// would never see.
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() && !st.IsDir() {
		return nil, ErrNotIndexable
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, pathProblem(path, err)
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		f.Close()
		if err != nil {
			return nil, pathProblem(path, err)
		}
		return nil, ErrNotIndexable
	}
	var magic [4]byte
	n, _ := f.ReadAt(magic[:], 0)
	if compressed(magic[:n]) {
		f.Close()
		return nil, ErrNotIndexable
	}
	scan, err := os.Open(path)
	if err != nil {
		f.Close()
		return nil, pathProblem(path, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	var src io.Reader = scan
	size := st.Size()
	var fol *follower
	if follow {
		fol = &follower{ctx: ctx, r: scan, f: scan, path: path}
		src = fol
		size = -1
	}
	return startIndex(ctx, cancel, path, f, src, size, fol, scan.Close)
}

// SpoolIndex indexes a trace that cannot be read at random, what
// OpenIndex refuses: standard input ("-"), a pipe or FIFO (opened once:
// its first writer's data is what is read), a gzip or zstd file. The
// input is read once, as it comes, and its text copied to a temporary
// file, unlinked at once, that the Index reads records from: memory stays
// that of an Index (about 4 bytes a record), and the disk holds the text
// (decompressed) until Close. It returns once the header is read, or
// with ctx's error when ctx ends first (a FIFO with no writer waits).
// The pass reads until the input ends, as a followed file's would: a
// pipe's records appear as they land.
func SpoolIndex(ctx context.Context, path string) (*Index, error) {
	// The input is read under the index's own ctx, so that Close ends a
	// read that waits on a pipe.
	ctx, cancel := context.WithCancel(ctx)
	in, err := OpenContext(ctx, path)
	if err != nil {
		cancel()
		return nil, err
	}
	tmp, err := os.CreateTemp("", "cgtviz-spool-*.cgt.jsonl")
	if err != nil {
		cancel()
		in.Close()
		return nil, &Problem{File: in.Name(), Msg: "spool the trace to a temporary file: " + err.Error()}
	}
	// Unlinked while open: nothing is left behind, whatever ends the
	// process. (Where the system will not remove an open file, Close
	// does.)
	removed := os.Remove(tmp.Name()) == nil
	closeAll := func() error {
		err := errors.Join(in.Close(), tmp.Close())
		if !removed {
			os.Remove(tmp.Name())
		}
		return err
	}
	ix, err := startIndex(ctx, cancel, in.Name(), tmp, &spoolWriter{r: in, w: tmp}, -1, nil, func() error { return nil })
	if err != nil {
		closeAll()
		return nil, err
	}
	ix.closeFile = closeAll
	return ix, nil
}

// spoolWriter is the text of a spooled input as it is read, written to
// the spool file first, so that a record the pass indexes is there to be
// read back.
type spoolWriter struct {
	r io.Reader
	w io.Writer
}

func (s *spoolWriter) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if n > 0 {
		if _, werr := s.w.Write(p[:n]); werr != nil {
			return 0, fmt.Errorf("spool to a temporary file: %w", werr)
		}
	}
	return n, err
}

// startIndex reads the header from src and starts the pass; f is read at
// random for records, closeScan ends what src reads.
func startIndex(ctx context.Context, cancel context.CancelFunc, file string, f *os.File, src io.Reader, size int64, fol *follower, closeScan func() error) (*Index, error) {
	ix := &Index{file: file, f: f, size: size, ctx: ctx, cancel: cancel, done: make(chan struct{}), cache: map[int]*Record{}, defSeen: map[string]bool{}, fol: fol}
	ix.closeFile = f.Close
	cnt := &indexCounter{r: src}
	rd, err := NewReader(cnt, file)
	if err != nil {
		cancel()
		f.Close()
		closeScan()
		return nil, err
	}
	ix.hdr = rd.Header()
	ix.end = cnt.n - int64(rd.br.Buffered())
	go func() {
		defer close(ix.done)
		defer closeScan()
		// A panic here, in a pass over any input, would end the process
		// with the terminal UI's screen still set up: it ends the pass,
		// with what was indexed, as an I/O error does.
		defer func() {
			if r := recover(); r != nil {
				ix.mu.Lock()
				ix.err = fmt.Errorf("internal error indexing %s: %v", file, r)
				ix.fin = true
				ix.mu.Unlock()
			}
		}()
		ix.scan(rd, cnt)
	}()
	return ix, nil
}

// compressed reports whether the first bytes of a file are gzip's or zstd's
// magic number.
func compressed(b []byte) bool {
	return bytes.HasPrefix(b, []byte{0x1f, 0x8b}) || bytes.HasPrefix(b, []byte{0x28, 0xb5, 0x2f, 0xfd})
}

// indexCounter counts the bytes read through it; the pass alone reads it
// (the Index's read field is what others see).
type indexCounter struct {
	r io.Reader
	n int64
}

func (c *indexCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// indexBatch is how many records the pass indexes between taking the
// lock: publishing each one would cost a lock a record.
const indexBatch = 4096

// scan is the background pass: the offset of each record, the checker's
// problems, and the configs in force.
func (ix *Index) scan(rd *Reader, cnt *indexCounter) {
	c := newChecker(ix.file, ix.hdr)
	type pending struct {
		off  int64
		line int
	}
	var batch []pending
	var defs []string
	var cfgs []cfgAt
	n := 0       // records read
	badLine := 0 // line of the first problem, 0 while there is none
	firstBad := -1
	prevEnd := ix.end
	flush := func(end int64) {
		ix.mu.Lock()
		defer ix.mu.Unlock()
		for _, p := range batch {
			ix.add(p.off, p.line)
		}
		ix.end = end
		ix.read = cnt.n
		ix.cfgs = append(ix.cfgs, cfgs...)
		for _, d := range defs {
			if !ix.defSeen[d] {
				ix.defSeen[d] = true
				ix.defs = append(ix.defs, d)
			}
		}
		if len(c.probs) > len(ix.probs) {
			ix.probs = append(ix.probs, c.probs[len(ix.probs):]...)
		}
		if badLine > 0 && firstBad < 0 {
			firstBad = sort.Search(ix.rel.n, func(i int) bool { return ix.lineLocked(i) >= badLine })
		}
		if firstBad < 0 {
			ix.checked = ix.rel.n
		} else {
			ix.checked = firstBad
		}
		batch, defs, cfgs = batch[:0], defs[:0], nil
	}
	last := time.Now()
	for {
		if n%indexBatch == 0 && ix.ctx.Err() != nil {
			break // closed: the rest is not wanted
		}
		rec, err := rd.Next()
		end := cnt.n - int64(rd.br.Buffered())
		if err == io.EOF || IsCut(err) { // (a cut trace: the records before it)
			break
		}
		if err != nil && ix.ctx.Err() != nil {
			break // closed while the read waited: not a problem of the trace
		}
		probs := len(c.probs)
		if err != nil {
			var p *Problem
			if !errors.As(err, &p) {
				ix.mu.Lock()
				ix.err = err
				ix.mu.Unlock()
				break
			}
			if !c.full {
				c.add(*p)
			}
			c.recover(&rec)
		} else if !c.full {
			c.record(&rec)
		}
		if len(c.probs) > probs && badLine == 0 {
			// The first problem: records before its line checked.
			badLine = c.probs[probs].Line
			if badLine <= 0 || badLine > rec.Line {
				badLine = rec.Line
			}
		}
		if err != nil && ix.fol != nil && ix.fol.truncated.Load() {
			// The truncation is said (a problem at the line after the
			// last); there is no record there.
			break
		}
		if err == nil {
			if rec.Op == OpDef {
				defs = append(defs, rec.Fn)
			}
			if rec.Op == OpConfig {
				cfgs = append(cfgs, cfgAt{rec: n, cfg: rd.cfg})
			}
		}
		batch = append(batch, pending{off: prevEnd, line: rec.Line})
		prevEnd = end
		n++
		// Published in batches, and whenever the next line is not in the
		// buffer: the read may wait (a followed file), and what was read
		// must show meanwhile.
		if len(batch) >= indexBatch || (badLine > 0 && firstBad < 0) || rd.br.Buffered() == 0 || time.Since(last) > 50*time.Millisecond {
			flush(end)
			last = time.Now()
		}
	}
	flush(prevEnd)
	ix.mu.Lock()
	ix.fin = true
	ix.mu.Unlock()
}

// add publishes one record's offset and line; ix.mu is held.
func (ix *Index) add(off int64, line int) {
	i := ix.rel.n
	nb := len(ix.blocks)
	if nb == 0 || off-ix.blocks[nb-1].base > math.MaxUint32 {
		ix.blocks = append(ix.blocks, indexBlock{first: i, base: off})
		nb++
	}
	ix.rel.push(uint32(off - ix.blocks[nb-1].base))
	if extra := line - (i + 2); extra != ix.extraLocked(i) {
		ix.fixes = append(ix.fixes, lineFix{rec: i, extra: extra})
	}
}

func (ix *Index) extraLocked(i int) int {
	j := sort.Search(len(ix.fixes), func(j int) bool { return ix.fixes[j].rec > i })
	if j == 0 {
		return 0
	}
	return ix.fixes[j-1].extra
}

func (ix *Index) lineLocked(i int) int { return i + 2 + ix.extraLocked(i) }

func (ix *Index) offLocked(i int) int64 {
	b := sort.Search(len(ix.blocks), func(b int) bool { return ix.blocks[b].first > i }) - 1
	return ix.blocks[b].base + int64(ix.rel.at(i))
}

// File names the trace in problems: its path.
func (ix *Index) File() string { return ix.file }

// Header returns the trace's header, with config defaults filled in.
func (ix *Index) Header() Header { return ix.hdr }

// Len returns how many records have been indexed so far.
func (ix *Index) Len() int {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.rel.n
}

// Checked returns how many records may be run: those indexed before the
// first problem.
func (ix *Index) Checked() int {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.checked
}

// Line returns the line number of record i (0 ≤ i < Len) without parsing it.
func (ix *Index) Line(i int) int {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.lineLocked(i)
}

// RecordAtLine returns the index of the first record at or after line.
func (ix *Index) RecordAtLine(line int) int {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return sort.Search(ix.rel.n, func(i int) bool { return ix.lineLocked(i) >= line })
}

// Defs returns the names of the functions defined so far, in order.
func (ix *Index) Defs() []string {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return append([]string(nil), ix.defs...)
}

// IndexProgress is where the background pass stands.
type IndexProgress struct {
	Records int   // indexed
	Checked int   // before the first problem
	Bytes   int64 // read by the pass
	Size    int64 // of the file at open; -1 when followed
	Done    bool  // the pass has ended (in follow mode: ctx is done)
	// Problems found so far, at most MaxProblems (then "too many errors").
	Problems []Problem
	// Err is an I/O error that ended the pass early.
	Err error
}

// Progress returns where the background pass stands.
func (ix *Index) Progress() IndexProgress {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return IndexProgress{
		Records: ix.rel.n, Checked: ix.checked, Bytes: ix.read, Size: ix.size,
		Done: ix.fin, Problems: append([]Problem(nil), ix.probs...), Err: ix.err,
	}
}

// Done is closed when the background pass ends.
func (ix *Index) Done() <-chan struct{} { return ix.done }

// Wait blocks until the background pass ends (at the end of the file; in
// follow mode when ctx is done or Close is called).
func (ix *Index) Wait() { <-ix.done }

// Close stops the background pass and closes the file.
func (ix *Index) Close() error {
	ix.cancel()
	<-ix.done
	return ix.closeFile()
}

// Record parses record i (0 ≤ i < Len) from the file. Records are
// read-only and may be shared. A record with a problem returns it as a
// *Problem with what could be decoded, as Reader.Next does.
func (ix *Index) Record(i int) (*Record, error) {
	if ix.fol != nil && ix.fol.truncated.Load() {
		ix.mu.Lock()
		r, ok := ix.cache[i]
		ix.mu.Unlock()
		if ok {
			return r, nil
		}
		// The offsets are the old file's: what lies there now is not
		// record i.
		return nil, &Problem{File: ix.file, Line: ix.Line(i), Msg: (&TruncatedError{File: ix.file, Read: ix.fol.off}).Error()}
	}
	ix.mu.Lock()
	if i < 0 || i >= ix.rel.n {
		n := ix.rel.n
		ix.mu.Unlock()
		return nil, fmt.Errorf("%s: record %d out of range 0..%d", ix.file, i, n-1)
	}
	if r, ok := ix.cache[i]; ok {
		ix.mu.Unlock()
		return r, nil
	}
	start := ix.offLocked(i)
	end := ix.end
	if i+1 < ix.rel.n {
		end = ix.offLocked(i + 1)
	}
	line := ix.lineLocked(i)
	cfg := ix.hdr.Config
	if j := sort.Search(len(ix.cfgs), func(j int) bool { return ix.cfgs[j].rec >= i }); j > 0 {
		cfg = ix.cfgs[j-1].cfg
	}
	ix.mu.Unlock()

	// The record is the last line of its span (blank lines may come
	// before it): no more than the longest line is read, so that a line
	// over the limit is refused without being read whole.
	from := start
	if end-start > MaxLineBytes+2 {
		from = end - (MaxLineBytes + 2)
	}
	buf := make([]byte, end-from)
	if n, err := ix.f.ReadAt(buf, from); n < len(buf) {
		return nil, &Problem{File: ix.file, Line: line, Msg: fmt.Sprintf("read error: %d of %d bytes at offset %d: %v", n, len(buf), from, err)}
	}
	text := trimEOL(buf)
	if k := bytes.LastIndexByte(text, '\n'); k >= 0 {
		text = text[k+1:] // the blank lines before the record
	} else if from > start {
		text = buf // no line's start in reach: too long
	}
	text = trimEOL(text)
	if len(text) > MaxLineBytes {
		return &Record{Line: line}, &Problem{File: ix.file, Line: line, Msg: fmt.Sprintf("line is longer than %s (MaxLineBytes)", formatBytes(MaxLineBytes))}
	}
	rd := &Reader{file: ix.file, line: line, hdr: ix.hdr, cfg: cfg, maxRecords: MaxRecords}
	rec, p := rd.parseRecord(text)
	rec.Line = line
	if p != nil {
		return &rec, p
	}
	r := &rec
	ix.mu.Lock()
	if len(ix.cacheAge) >= indexCache {
		delete(ix.cache, ix.cacheAge[0])
		ix.cacheAge = ix.cacheAge[1:]
	}
	if _, ok := ix.cache[i]; !ok {
		ix.cache[i] = r
		ix.cacheAge = append(ix.cacheAge, i)
	}
	ix.mu.Unlock()
	return r, nil
}
