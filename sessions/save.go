package sessions

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/examples"
	"github.com/cgtviz/cgtviz/traces"
)

// DemoSource is the trace source that names the embedded demo
// (examples.Demo) in Options.Source and in saved sessions.
const DemoSource = examples.DemoSource

// saveVersion is the version of the session file format.
const saveVersion = 1

// maxSaveBytes bounds a session file: it holds a path, a position and a few
// breakpoints and bookmarks, so anything larger is not a session file.
const maxSaveBytes = 1 << 20

// file is the JSON form of a saved session. Keys are exact: readFile
// refuses keys in another case, unknown keys and repeated keys.
type file struct {
	Version     int            `json:"cgtviz_session"`
	Trace       string         `json:"trace"`
	TraceSize   *int64         `json:"trace_size,omitempty"`
	TraceSHA256 string         `json:"trace_sha256,omitempty"`
	Position    int            `json:"position"`
	Handoff     string         `json:"handoff,omitempty"` // "raise" or "version"; absent: "preserve"
	Breakpoints []fileBreak    `json:"breakpoints,omitempty"`
	Bookmarks   []fileBookmark `json:"bookmarks,omitempty"`
}

type fileBreak struct {
	Line int    `json:"line,omitempty"`
	Fn   string `json:"fn,omitempty"`
	Kind string `json:"kind,omitempty"`
	Node *int   `json:"node,omitempty"`
}

type fileBookmark struct {
	Name string `json:"name"`
	Pos  int    `json:"position"`
}

// The keys each object of a session file may have, exactly.
var (
	fileKeys     = []string{"cgtviz_session", "trace", "trace_size", "trace_sha256", "position", "handoff", "breakpoints", "bookmarks"}
	breakKeys    = []string{"line", "fn", "kind", "node"}
	bookmarkKeys = []string{"name", "position"}
)

// Fingerprint identifies a trace's bytes as stored: its size and SHA-256.
// A session saved against one trace is refused on another, or on the same
// file edited since, even when the length is the same.
type Fingerprint struct {
	Size   int64
	SHA256 string // hex
}

// OpenTrace reads the trace named by a source: DemoSource for the embedded
// demo, "-" for standard input, otherwise a file path (gzip and zstd
// decompressed).
func OpenTrace(src string) (*traces.Trace, error) {
	tr, _, err := OpenTraceFingerprint(src)
	return tr, err
}

// OpenTraceFingerprint is OpenTrace, and the fingerprint of the bytes it
// read (read once: the hash is taken as the trace streams).
func OpenTraceFingerprint(src string) (*traces.Trace, Fingerprint, error) {
	var r io.Reader
	name := src
	if src == DemoSource {
		r, name = examples.OpenDemo()
	} else if src == traces.Stdin {
		r, name = os.Stdin, traces.StdinName
	} else {
		f, err := os.Open(src)
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return nil, Fingerprint{}, fmt.Errorf("open trace: %w", traces.Problems{{File: src, Msg: err.Error()}})
		}
		defer f.Close()
		if st, err := f.Stat(); err == nil && st.IsDir() {
			return nil, Fingerprint{}, fmt.Errorf("open trace: %w", traces.Problems{{File: src, Msg: "is a directory, not a trace"}})
		}
		r = f
	}
	h := sha256.New()
	cnt := &countWriter{}
	in, err := traces.NewInput(io.TeeReader(r, io.MultiWriter(h, cnt)), name)
	if err != nil {
		return nil, Fingerprint{}, fmt.Errorf("open trace: %w", err)
	}
	defer in.Close()
	tr, err := traces.ReadChecked(in, name)
	if err != nil {
		if src == DemoSource {
			return nil, Fingerprint{}, fmt.Errorf("demo trace: %w", err)
		}
		return nil, Fingerprint{}, fmt.Errorf("open trace: %w", err)
	}
	// The trace may end before its input does (a gzip trailer): the whole
	// input is the fingerprint.
	if _, err := io.Copy(io.Discard, io.TeeReader(r, io.MultiWriter(h, cnt))); err != nil {
		return nil, Fingerprint{}, fmt.Errorf("open trace: %w", err)
	}
	return tr, Fingerprint{Size: cnt.n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// fingerprintOf hashes the trace at src as Save finds it, for sessions made
// without Options.Fingerprint.
func fingerprintOf(src string) (Fingerprint, error) {
	var r io.Reader
	if src == DemoSource {
		r, _ = examples.OpenDemo()
	} else {
		f, err := os.Open(src)
		if err != nil {
			return Fingerprint{}, err
		}
		defer f.Close()
		// A pipe's bytes are gone once read, and /dev/zero never ends:
		// only a file can be found again as it was.
		if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
			if err != nil {
				return Fingerprint{}, err
			}
			return Fingerprint{}, fmt.Errorf("%s is not a regular file: it cannot be read again to be recognised", src)
		}
		r = f
	}
	h := sha256.New()
	n, err := io.Copy(h, r)
	if err != nil {
		return Fingerprint{}, err
	}
	return Fingerprint{Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// Save writes the session (trace source, position, breakpoints, bookmarks)
// to path as JSON. A trace path is made absolute so the file can be loaded
// from anywhere.
func (s *Session) Save(path string) error {
	src := s.opts.Source
	if src == "" {
		return fmt.Errorf("save session %s: the session has no trace source (Options.Source)", path)
	}
	if src != DemoSource {
		abs, err := filepath.Abs(src)
		if err != nil {
			return fmt.Errorf("save session %s: %w", path, err)
		}
		src = abs
	}
	if src == traces.Stdin {
		return fmt.Errorf("save session %s: the trace came from standard input, which cannot be opened again: save the trace to a file and open that", path)
	}
	fp := s.opts.Fingerprint
	if fp.SHA256 == "" {
		var err error
		if fp, err = fingerprintOf(s.opts.Source); err != nil {
			return fmt.Errorf("save session %s: fingerprint of the trace: %w", path, err)
		}
	}
	f := file{Version: saveVersion, Trace: src, Position: s.pos, TraceSize: &fp.Size, TraceSHA256: fp.SHA256}
	if s.opts.Handoff != engine.HandoffPreserve {
		f.Handoff = s.opts.Handoff.String()
	}
	for _, b := range s.bps {
		fb := fileBreak{Line: b.Line, Fn: b.Fn}
		if b.Kind != 0 {
			fb.Kind = KindName(b.Kind)
		}
		if b.Kind == engine.EvReplay && b.Node >= 0 {
			n := b.Node
			fb.Node = &n
		}
		f.Breakpoints = append(f.Breakpoints, fb)
	}
	for _, m := range s.Bookmarks() {
		f.Bookmarks = append(f.Bookmarks, fileBookmark(m))
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("save session %s: %w", path, err)
	}
	data = append(data, '\n')
	// Whole or not at all: a failed save never leaves half a file where a
	// good one was, nor a temporary file beside it.
	if err := WriteFileAtomic(path, data, 0o644); err != nil {
		return fmt.Errorf("save session: %w", err)
	}
	return nil
}

// Load reads a session file, reopens its trace, restores breakpoints and
// bookmarks and moves to the saved position. opts.Source and opts.Handoff
// are taken from the file.
func Load(path string, opts Options) (*Session, error) {
	return LoadContext(context.Background(), path, opts)
}

// LoadContext is Load, given up when ctx is done. The trace is read on
// demand (traces.Index), not held: its whole check is waited for, as a
// session is resumed only on a trace that checks.
func LoadContext(ctx context.Context, path string, opts Options) (*Session, error) {
	f, err := readFile(path)
	if err != nil {
		return nil, err
	}
	h, err := engine.ParseHandoff(f.Handoff)
	if err != nil {
		return nil, fmt.Errorf("load session %s: %w", path, err)
	}
	opts.Handoff = h
	src, closeSrc, fp, err := openSaved(ctx, f.Trace)
	if err != nil {
		return nil, fmt.Errorf("load session %s: %w", path, err)
	}
	if err := f.sameTrace(fp); err != nil {
		closeSrc()
		return nil, fmt.Errorf("load session %s: %w", path, err)
	}
	opts.Source = f.Trace
	opts.Fingerprint = fp
	s, err := NewRecords(src, opts)
	if err != nil {
		closeSrc()
		return nil, fmt.Errorf("load session %s: %w", path, err)
	}
	s.closeSrc = closeSrc
	for i, fb := range f.Breakpoints {
		b := Breakpoint{Line: fb.Line, Fn: fb.Fn, Node: AnyNode}
		if fb.Kind != "" {
			k, ok := ParseKind(fb.Kind)
			if !ok {
				return nil, fmt.Errorf("load session %s: breakpoint %d: unknown event kind %q", path, i+1, fb.Kind)
			}
			b.Kind = k
		}
		if fb.Node != nil {
			b.Node = *fb.Node
		}
		if err := s.AddBreakpoint(b); err != nil {
			return nil, fmt.Errorf("load session %s: breakpoint %d: %w", path, i+1, err)
		}
	}
	for _, m := range f.Bookmarks {
		if err := s.setBookmark(m.Name, m.Pos); err != nil {
			return nil, fmt.Errorf("load session %s: %w", path, err)
		}
	}
	if f.Position < 0 || f.Position > s.Len() {
		return nil, fmt.Errorf("load session %s: position %d out of range 0..%d of trace %s", path, f.Position, s.Len(), f.Trace)
	}
	if err := s.Goto(f.Position); err != nil {
		return nil, fmt.Errorf("load session %s: %w", path, err)
	}
	return s, nil
}

// openSaved opens the trace of a saved session: the demo in memory, a file
// read on demand once its check has ended (a trace with problems is
// refused with them), with the fingerprint of its bytes.
func openSaved(ctx context.Context, src string) (Records, func() error, Fingerprint, error) {
	if src == DemoSource {
		tr, fp, err := OpenTraceFingerprint(src)
		if err != nil {
			return nil, nil, Fingerprint{}, err
		}
		return InMemory(tr), func() error { return nil }, fp, nil
	}
	fp, err := fingerprintOf(src)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = traces.Problems{{File: src, Msg: pe.Err.Error()}}
		}
		return nil, nil, Fingerprint{}, fmt.Errorf("open trace: %w", err)
	}
	ix, err := OpenIndexed(ctx, src, false)
	if err != nil {
		return nil, nil, Fingerprint{}, fmt.Errorf("open trace: %w", err)
	}
	select {
	case <-ix.Done():
	case <-ctx.Done():
		ix.Close()
		return nil, nil, Fingerprint{}, ctx.Err()
	}
	pr := ix.Progress()
	if len(pr.Problems) > 0 {
		ix.Close()
		return nil, nil, Fingerprint{}, fmt.Errorf("open trace: %w", traces.Problems(pr.Problems))
	}
	if pr.Err != nil {
		ix.Close()
		return nil, nil, Fingerprint{}, fmt.Errorf("open trace: %w", pr.Err)
	}
	return Indexed(ix), ix.Close, fp, nil
}

// OpenIndexed opens a trace to be read on demand: a plain file indexed in
// place (traces.OpenIndex; followed with follow), anything else (standard
// input, a pipe or FIFO, a gzip or zstd file) read once into a temporary
// file and indexed there (traces.SpoolIndex). A followed trace must be a
// plain file (traces.ErrNotIndexable).
func OpenIndexed(ctx context.Context, src string, follow bool) (*traces.Index, error) {
	ix, err := traces.OpenIndex(ctx, src, follow)
	if err == nil || follow || !errors.Is(err, traces.ErrNotIndexable) {
		return ix, err
	}
	return traces.SpoolIndex(ctx, src)
}

// looksLikeTrace reports whether data starts as a trace does: a first line
// that is an object with the "cgtviz" format key (or starts compressed).
func looksLikeTrace(data []byte) bool {
	if bytes.HasPrefix(data, []byte{0x1f, 0x8b}) || bytes.HasPrefix(data, []byte{0x28, 0xb5, 0x2f, 0xfd}) {
		return true
	}
	first, _, _ := bytes.Cut(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")), []byte("\n"))
	var hdr map[string]json.RawMessage
	if json.Unmarshal(first, &hdr) != nil {
		return false
	}
	_, ok := hdr["cgtviz"]
	return ok
}

// sameTrace refuses a trace that is not the one the session was saved
// against: its position, breakpoints and bookmarks name records of that
// trace, which another would give another meaning.
func (f *file) sameTrace(fp Fingerprint) error {
	if f.TraceSize == nil {
		return nil // saved before fingerprints: nothing to compare
	}
	const advice = "its position, breakpoints and bookmarks may not fit it; open the trace itself to start afresh"
	if *f.TraceSize != fp.Size {
		return fmt.Errorf("trace %s changed since the session was saved (%d bytes then, %d now): %s", f.Trace, *f.TraceSize, fp.Size, advice)
	}
	if !strings.EqualFold(f.TraceSHA256, fp.SHA256) {
		return fmt.Errorf("trace %s changed since the session was saved (same size, %d bytes, other contents: SHA-256 %.12s… then, %.12s… now): %s", f.Trace, fp.Size, f.TraceSHA256, fp.SHA256, advice)
	}
	return nil
}

// strictKeys checks the keys of the JSON object data: each one of allowed,
// spelled exactly (encoding/json would match "Position" to "position"),
// none twice (encoding/json would keep the last).
func strictKeys(data []byte, allowed []string, what string) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("%s: want a JSON object", what)
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		k, _ := tok.(string)
		if !slices.Contains(allowed, k) {
			return fmt.Errorf("%s: unknown key %q (keys: %s)", what, k, strings.Join(allowed, ", "))
		}
		if seen[k] {
			return fmt.Errorf("%s: key %q given twice", what, k)
		}
		seen[k] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("%s: %q: %w", what, k, err)
		}
	}
	return nil
}

func readFile(path string) (file, error) {
	var f file
	fh, err := os.Open(path)
	if err != nil {
		return f, fmt.Errorf("load session: %w", err)
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, maxSaveBytes+1))
	if err != nil {
		return f, fmt.Errorf("load session %s: %w", path, err)
	}
	if len(data) > maxSaveBytes {
		return f, fmt.Errorf("load session %s: larger than %d bytes: not a session file", path, maxSaveBytes)
	}
	if looksLikeTrace(data) {
		return f, fmt.Errorf("load session %s: this is a trace, not a saved session: open it with `cgtviz %s`", path, path)
	}
	if err := strictKeys(data, fileKeys, "the session"); err != nil {
		return f, fmt.Errorf("load session %s: %w", path, err)
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return f, fmt.Errorf("load session %s: %w", path, err)
	}
	var lists struct {
		Breakpoints []json.RawMessage `json:"breakpoints"`
		Bookmarks   []json.RawMessage `json:"bookmarks"`
	}
	if err := json.Unmarshal(data, &lists); err != nil {
		return f, fmt.Errorf("load session %s: %w", path, err)
	}
	for i, b := range lists.Breakpoints {
		if err := strictKeys(b, breakKeys, fmt.Sprintf("breakpoint %d", i+1)); err != nil {
			return f, fmt.Errorf("load session %s: %w", path, err)
		}
	}
	seen := map[string]bool{}
	for i, m := range lists.Bookmarks {
		if err := strictKeys(m, bookmarkKeys, fmt.Sprintf("bookmark %d", i+1)); err != nil {
			return f, fmt.Errorf("load session %s: %w", path, err)
		}
		name := f.Bookmarks[i].Name
		if seen[name] {
			return f, fmt.Errorf("load session %s: bookmark %d: the name %q is taken by an earlier bookmark", path, i+1, name)
		}
		seen[name] = true
	}
	if (f.TraceSize == nil) != (f.TraceSHA256 == "") {
		return f, fmt.Errorf("load session %s: trace_size and trace_sha256 go together: one is missing", path)
	}
	if f.Version != saveVersion {
		return f, fmt.Errorf("load session %s: version %d, want %d (is it a session file?)", path, f.Version, saveVersion)
	}
	if f.Trace == "" {
		return f, errors.New("load session " + path + `: no "trace"`)
	}
	return f, nil
}
