package sessions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/examples"
	"github.com/cgtviz/cgtviz/traces"
)

// DemoSource is the trace source that names the embedded demo
// (examples.Demo) in Options.Source and in saved sessions.
const DemoSource = "demo"

// saveVersion is the version of the session file format.
const saveVersion = 1

// maxSaveBytes bounds a session file: it holds a path, a position and a few
// breakpoints and bookmarks, so anything larger is not a session file.
const maxSaveBytes = 1 << 20

// file is the JSON form of a saved session.
type file struct {
	Version     int            `json:"cgtviz_session"`
	Trace       string         `json:"trace"`
	Position    int            `json:"position"`
	Handoff     string         `json:"handoff,omitempty"` // "raise"; absent: "preserve"
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

// OpenTrace reads the trace named by a source: DemoSource for the embedded
// demo, otherwise a file path.
func OpenTrace(src string) (*traces.Trace, error) {
	if src == DemoSource {
		tr, err := traces.Read(bytes.NewReader(examples.Demo()), examples.DemoName)
		if err != nil {
			return nil, fmt.Errorf("demo trace: %w", err)
		}
		return tr, nil
	}
	tr, err := traces.ReadFile(src)
	if err != nil {
		return nil, fmt.Errorf("open trace: %w", err)
	}
	return tr, nil
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
	f := file{Version: saveVersion, Trace: src, Position: s.pos}
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
		f.Bookmarks = append(f.Bookmarks, fileBookmark{Name: m.Name, Pos: m.Pos})
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("save session %s: %w", path, err)
	}
	data = append(data, '\n')
	// Write then rename, so that a failed save never leaves half a file
	// where a good one was.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("save session: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp) // best effort: the rename error is the one to report
		return fmt.Errorf("save session: %w", err)
	}
	return nil
}

// Load reads a session file, reopens its trace, restores breakpoints and
// bookmarks and moves to the saved position. opts.Source and opts.Handoff
// are taken from the file.
func Load(path string, opts Options) (*Session, error) {
	f, err := readFile(path)
	if err != nil {
		return nil, err
	}
	h, err := engine.ParseHandoff(f.Handoff)
	if err != nil {
		return nil, fmt.Errorf("load session %s: %w", path, err)
	}
	opts.Handoff = h
	tr, err := OpenTrace(f.Trace)
	if err != nil {
		return nil, fmt.Errorf("load session %s: %w", path, err)
	}
	opts.Source = f.Trace
	s, err := New(tr, opts)
	if err != nil {
		return nil, fmt.Errorf("load session %s: %w", path, err)
	}
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
	if err := json.Unmarshal(data, &f); err != nil {
		return f, fmt.Errorf("load session %s: %w", path, err)
	}
	if f.Version != saveVersion {
		return f, fmt.Errorf("load session %s: version %d, want %d (is it a session file?)", path, f.Version, saveVersion)
	}
	if f.Trace == "" {
		return f, errors.New("load session " + path + `: no "trace"`)
	}
	return f, nil
}
