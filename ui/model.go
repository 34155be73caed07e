package ui

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/sessions"
	"github.com/cgtviz/cgtviz/traces"
)

// DefaultSavePath is where `s` saves a session that was not opened from a
// session file.
const DefaultSavePath = "cgtviz-session.json"

// ExportFunc renders a state's tree as SVG, highlighting what step (nil at
// position 0) did. The command wires it to package
// render, so that the UI and its tests do not load Graphviz.
type ExportFunc func(ctx context.Context, st *engine.State, step *engine.Step) ([]byte, error)

// GraphExportFunc renders the CUDA graph of node id on device dev of a
// state as SVG (render.NodeGraphDOT, then Graphviz), wired by the command
// as ExportFunc is.
type GraphExportFunc func(ctx context.Context, st *engine.State, dev, id int) ([]byte, error)

// Options configure the UI.
type Options struct {
	// Color enables colors; false (NO_COLOR) draws with glyphs and text only.
	Color bool
	// SavePath is the session file `s` writes (default DefaultSavePath).
	SavePath string
	// Export renders the tree as SVG for `e`; nil disables the key.
	Export ExportFunc
	// ExportGraph renders a node's CUDA graph for `:export graph`; nil
	// disables it.
	ExportGraph GraphExportFunc
	// ExportDir is where exported SVGs go ("" for the current directory).
	ExportDir string
	// NoMouse leaves the mouse to the terminal (for selecting text);
	// otherwise clicks focus panes and pick lines, and the wheel scrolls.
	NoMouse bool
}

// snapshot is everything View needs from the session, taken after each
// move (in the move's tea.Cmd) so that View never touches the session.
type snapshot struct {
	pos, n   int
	state    *engine.State
	step     *engine.Step  // the record just run, nil at position 0
	ckpt     *engine.Event // the last checkpoint at or before the position
	ckptIdx  int
	bps      []sessions.Breakpoint
	executed int
	// index is the state's tensors as the panes ask for them, found on
	// first need (tensors): once a state, not once a pane and frame.
	index *lazyIndex
}

// tensors is the index of the snapshot's state's tensors, built once.
func (s *snapshot) tensors() *lazyIndex {
	if s.index == nil || s.index.st != s.state {
		s.index = newLazyIndex(s.state)
	}
	return s.index
}

// takeSnapshot reads the session; it runs where the session may be used.
func takeSnapshot(s *sessions.Session) snapshot {
	snap := snapshot{pos: s.Pos(), n: s.Len(), state: s.State(), bps: s.Breakpoints(), executed: s.Executed(), ckptIdx: -1}
	if snap.pos > 0 {
		snap.step = s.StepAt(snap.pos - 1)
		// What the details warn of, the timeline marks: the session keeps
		// it for the cell and for overwrite breakpoints. The state's index
		// made for it here travels with the snapshot to the panes.
		if st := snap.step; st != nil && st.Action == engine.ActionReplay {
			if _, known := s.Overwrote(snap.pos - 1); !known {
				if rec, err := s.Records().Record(snap.pos - 1); err == nil {
					s.NoteOverwrite(snap.pos-1, len(sessions.SharedOutputsAmong(snap.state, rec, snap.tensors().multi)) > 0)
				}
			}
		}
	}
	if i := s.LastCheckpoint(snap.pos); i >= 0 {
		if st := s.StepAt(i); st != nil {
			for j := range st.Events {
				if st.Events[j].Kind == engine.EvCheckpoint {
					ev := st.Events[j]
					snap.ckpt, snap.ckptIdx = &ev, i
				}
			}
		}
	}
	return snap
}

// Messages of the UI's commands.
type (
	movedMsg struct {
		snap snapshot
		info string
		err  error
		// mem are the memory timeline's new samples, when it is on.
		mem map[memKey]memSample
	}
	savedMsg struct {
		path string
		err  error
	}
	exportedMsg struct {
		what string // "tree", or "CUDA graph of #N"
		path string
		err  error
	}
)

// Model is the root model: it owns the session and its moves, the layout,
// the focus, the overlay stack and the root's keys; each pane owns its
// own state (pane.go).
type Model struct {
	sess    *sessions.Session
	recs    records        // the trace, read through the session
	handoff engine.Handoff // the session's rule, for the status line
	opts    Options
	keys    KeyMap
	styles  Styles
	help    helpBar

	width, height int
	focus         pane
	other         pane // the last focused pane other than the trace (compact layout)
	zoom          bool // + : the focused pane takes the whole body
	dev           int  // the device the pool shows: the last step's, or the one d chose

	busy    bool
	pending []tea.KeyPressMsg // keys typed while busy, handled in order after
	// prog is the progress of the move running (progress.go), nil when
	// none runs.
	prog *moveProgress
	// send is the program's Send (SetSend), nil in tests.
	send func(tea.Msg)
	snap snapshot

	// The panes, each a component (pane.go) that owns its cursor,
	// scroll, keys, view and text.
	tree     treePane
	pool     poolPane
	delta    deltaPane
	trace    tracePane
	details  detailsPane
	tensors  tensorsPane
	timeline timeline
	// actions are the root's keys, tried after the focused pane's.
	actions []action

	// overlays is the stack of prompts and popups over the panes
	// (overlay.go): the top one gets the keys. mode and over mirror its
	// top (restack): the mode it puts the UI in, and the popup shown.
	overlays []overlay
	mode     mode
	over     *popup
	// input is the line typed into the prompt on top.
	input string

	// search is the last query and the search running (search.go).
	search search
	// diffBase is the position v marked, nil before.
	diffBase *diffMark
	// mem is the memory timeline of the pool pane (M).
	mem    memChart
	msg    string
	msgErr bool
	// progress is the background pass of a trace read on demand, as of
	// the last tick (zero for a trace in memory).
	progress traces.IndexProgress
}

// New returns the UI over a session, at the session's position.
func New(s *sessions.Session, opts Options) *Model {
	if opts.SavePath == "" {
		opts.SavePath = DefaultSavePath
	}
	m := &Model{
		sess:    s,
		recs:    records{s.Records()},
		handoff: s.Handoff(),
		opts:    opts,
		keys:    DefaultKeyMap(),
		styles:  NewStyles(opts.Color),
		help:    helpBar{Model: help.New()},
		width:   80,
		height:  24,
		focus:   paneTrace,
		other:   paneTree,
	}
	m.help.Styles = m.styles.Help
	m.actions = rootActions(&m.keys)
	if opts.Export == nil {
		m.keys.Export.SetEnabled(false)
	}
	if p, ok := s.Records().Progress(); ok {
		m.setProgress(p)
	}
	m.install(takeSnapshot(s))
	if s.Header().Unended() {
		// Said at once: nothing in the records shows the program died.
		m.setMsg("this trace's recording did not end: the program died after its last record", nil)
	}
	return m
}

// Init implements tea.Model: a trace read on demand is still being
// indexed and checked (or followed), and the UI watches it.
func (m *Model) Init() tea.Cmd { return m.watchProgress() }

// Pos returns the session position the UI shows.
func (m *Model) Pos() int { return m.snap.pos }

// Busy reports whether a command is running on the session.
func (m *Model) Busy() bool { return m.busy }

// Message returns the message line ("" when none).
func (m *Model) Message() string { return m.msg }

// install shows a new snapshot: the tree follows the node the step touched,
// the trace cursor the record just run.
func (m *Model) install(snap snapshot) {
	m.snap = snap
	if st := snap.step; st != nil {
		m.dev = st.Device
	}
	if snap.state != nil && m.dev >= len(snap.state.Devices) {
		m.dev = 0
	}
	m.tree.rebuild(snap.state, snap.step)
	if st := snap.step; st != nil {
		switch {
		case st.Node >= 0:
			m.tree.selectNode(st.Device, st.Node)
		case st.Action == engine.ActionWarmup:
			for _, ev := range st.Events {
				if ev.Kind == engine.EvWarmup {
					m.tree.selectNode(ev.Device, ev.WarmupID)
				}
			}
		}
	}
	m.trace.cursor = max(snap.pos-1, 0)
	// Keep the record just run a third of the way up from the bottom, so
	// that the records about to run show too.
	if h := m.layout().rects[paneTrace].h - 2; h > 0 {
		m.trace.offset = m.trace.cursor - h*2/3
	}
	m.refresh()
}

// refresh re-reads the trace summaries the trace pane shows. Only called
// when no command runs.
func (m *Model) refresh() {
	if m.busy {
		return
	}
	h := m.layout().rects[paneTrace].h - 2
	if h <= 0 {
		h = m.height
	}
	m.trace.refresh(m.sess, h)
	m.timeline.update(m.sess)
}

// move runs op on the session in a command; the UI is busy until it ends.
func (m *Model) move(op func(*sessions.Session) (string, error)) tea.Cmd {
	if m.busy {
		return nil
	}
	m.busy = true
	m.msg, m.msgErr = "", false
	s := m.sess
	var positions []int
	if m.mem.on {
		positions = memPositions(m.recs.len(), memChartCols(m.poolWidth()))
	}
	have := m.mem.samples
	prog := newMoveProgress()
	m.prog = prog
	send := m.send
	return func() tea.Msg {
		if send != nil {
			// Redraw the status line's progress while the move runs.
			stop := make(chan struct{})
			defer close(stop)
			go func() {
				t := time.NewTicker(moveTick)
				defer t.Stop()
				for {
					select {
					case <-stop:
						return
					case <-t.C:
						send(moveTickMsg{prog})
					}
				}
			}()
		}
		s.Watch(prog.watch)
		info, err := op(s)
		s.Watch(nil)
		if errors.Is(err, sessions.ErrCanceled) {
			info, err = fmt.Sprintf("canceled (esc) after %d records: stopped at %s", prog.done.Load(), m.where(s.Pos())), nil
		}
		msg := movedMsg{info: info, err: err}
		if positions != nil {
			got, merr := sampleMemory(s, positions, have)
			msg.mem = got
			if err == nil {
				msg.err = merr
			}
		}
		msg.snap = takeSnapshot(s)
		return msg
	}
}

// SetSend gives the UI the program's Send, through which it redraws the
// progress of a long move while the move runs (without it, the status
// line says only "running…" until the move ends).
func (m *Model) SetSend(send func(tea.Msg)) { m.send = send }

// Update implements tea.Model.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.help.SetWidth(msg.Width)
		m.refresh()
		return m, nil
	case moveTickMsg:
		return m, nil // a redraw of the move's progress
	case movedMsg:
		m.busy = false
		m.prog = nil
		if m.mem.samples == nil {
			m.mem.samples = map[memKey]memSample{}
		}
		for k, v := range msg.mem {
			m.mem.samples[k] = v
		}
		if m.mem.on {
			poolSamples(msg.snap.state, msg.snap.pos, m.mem.samples)
		}
		m.install(msg.snap)
		m.setMsg(msg.info, msg.err)
		return m, m.drain()
	case progressMsg:
		return m, m.onProgress()
	case savedMsg:
		m.busy = false
		m.setMsg("saved session to "+msg.path, msg.err)
		return m, m.drain()
	case exportedMsg:
		m.setMsg("exported "+msg.what+" to "+msg.path, msg.err)
		return m, nil
	case tea.MouseMsg:
		return m, m.mouse(msg)
	case searchMsg:
		return m, m.searched(msg)
	case tea.KeyPressMsg:
		if msg.String() == "ctrl+c" {
			return m, tea.Quit
		}
		// A key typed while a search runs ends it (a new search, or the
		// user moved on); Esc only ends it.
		if m.search.cancel != nil {
			m.search.cancel()
			m.search.cancel = nil
			if msg.String() == "esc" {
				return m, nil
			}
		}
		// Esc stops a long move where it has got to; the keys typed
		// ahead of it go too (they were meant for after it).
		if m.busy && m.prog != nil && msg.String() == "esc" {
			m.prog.cancel.Store(true)
			m.pending = m.pending[:0]
			return m, nil
		}
		// Keys typed while a command runs wait their turn, in order: n
		// pressed ten times steps ten times, and "g31⏎" typed ahead still
		// goes to the prompt.
		if m.busy || len(m.pending) > 0 {
			if len(m.pending) < maxPending {
				m.pending = append(m.pending, msg)
			}
			return m, nil
		}
		return m, m.key(msg)
	}
	return m, nil
}

// maxPending bounds the keys typed ahead of a running command; more are
// dropped (a key held down for seconds on a slow trace).
const maxPending = 256

// drain handles the keys typed while the last command ran, up to the first
// that starts another command on the session; the commands of the others
// (an export, quitting) run alongside.
func (m *Model) drain() tea.Cmd {
	var cmds []tea.Cmd
	for len(m.pending) > 0 && !m.busy {
		k := m.pending[0]
		m.pending = m.pending[1:]
		if cmd := m.key(k); cmd != nil {
			cmds = append(cmds, cmd)
		}
	}
	return tea.Batch(cmds...)
}

func (m *Model) setMsg(info string, err error) {
	if err != nil {
		m.msg, m.msgErr = err.Error(), true
		return
	}
	m.msg, m.msgErr = info, false
}

// key handles a key press: the overlay on top takes every key; else the
// focused pane takes its own keys and the scroll keys, and the root the
// rest (rootActions).
func (m *Model) key(k tea.KeyPressMsg) tea.Cmd {
	if k.String() == "ctrl+c" {
		return tea.Quit
	}
	if o := m.top(); o != nil {
		return m.overlayKey(o, k)
	}
	c := m.ctx()
	p := m.component(m.focus)
	if cmd, ok := p.onKey(c, k); ok {
		return cmd
	}
	if scrollKey(p, c, k) {
		return nil
	}
	for _, a := range m.actions {
		if key.Matches(k, *a.key) {
			return a.do(m, k)
		}
	}
	return nil
}

func (m *Model) hitText(h sessions.Hit, none string) string {
	if !h.Found {
		return none
	}
	return fmt.Sprintf("breakpoint %s hit at line %d", h.Breakpoint, m.lineOf(h.Index+1))
}

func (m *Model) focusPane(p pane) {
	if p < 0 || p >= numPanes {
		return
	}
	m.focus = p
	if p != paneTrace {
		m.other = p
	}
	m.refresh()
}

func clampAdd(v, d, n int) int {
	v += d
	if v >= n {
		v = n - 1
	}
	return max(v, 0)
}

// toggleLineBreakpoint toggles a breakpoint on the trace line under the
// trace cursor.
func (m *Model) toggleLineBreakpoint() {
	if m.trace.cursor < 0 || m.trace.cursor >= m.recs.len() {
		return
	}
	line := m.recs.line(m.trace.cursor)
	if line <= 0 {
		m.setMsg("", errors.New("breakpoint: this record has no line number"))
		return
	}
	m.toggleBreakpoint(sessions.Breakpoint{Line: line, Node: sessions.AnyNode})
}

func (m *Model) toggleBreakpoint(b sessions.Breakpoint) {
	if m.sess.HasBreakpoint(b) {
		m.sess.RemoveBreakpoint(b)
		m.setMsg("breakpoint removed: "+b.String(), nil)
	} else if err := m.sess.AddBreakpoint(b); err != nil {
		m.setMsg("", err)
	} else {
		m.setMsg("breakpoint set: "+b.String(), nil)
	}
	m.snap.bps = m.sess.Breakpoints()
}

// pickerItems are the breakpoints the B picker offers: every kind, and a
// replay of the node selected in the tree.
func (m *Model) pickerItems() []sessions.Breakpoint {
	var out []sessions.Breakpoint
	for _, k := range sessions.BreakpointKinds() {
		out = append(out, sessions.Breakpoint{Kind: k, Node: sessions.AnyNode})
		if k == engine.EvReplay {
			if l, ok := m.tree.selected(); ok && l.kind == treeNode {
				out = append(out, sessions.Breakpoint{Kind: k, Node: l.id})
			}
		}
	}
	return out
}

// save writes the session file in a command.
func (m *Model) save() tea.Cmd { return m.saveTo(m.opts.SavePath) }

// saveTo writes the session to path in a command.
func (m *Model) saveTo(path string) tea.Cmd {
	if m.busy {
		return nil
	}
	m.busy = true
	s := m.sess
	return func() tea.Msg { return savedMsg{path: path, err: s.Save(path)} }
}

// export renders the tree of the shown state to an SVG file in a command.
func (m *Model) export() tea.Cmd {
	if m.opts.Export == nil || m.snap.state == nil {
		return nil
	}
	st, step, f := m.snap.state, m.snap.step, m.opts.Export
	path := filepath.Join(m.opts.ExportDir, fmt.Sprintf("cgtviz-tree-line%d.svg", m.lineOf(m.snap.pos)))
	return writeSVG("tree", path, func() ([]byte, error) { return f(context.Background(), st, step) })
}

// exportGraph renders the CUDA graph of a node of the shown state to an SVG
// file in a command.
func (m *Model) exportGraph(dev, id int) tea.Cmd {
	st, f := m.snap.state, m.opts.ExportGraph
	path := filepath.Join(m.opts.ExportDir, fmt.Sprintf("cgtviz-graph-dev%d-node%d-line%d.svg", dev, id, m.lineOf(m.snap.pos)))
	return writeSVG(fmt.Sprintf("the CUDA graph of #%d", id), path, func() ([]byte, error) { return f(context.Background(), st, dev, id) })
}

// writeSVG is a command that renders and writes one SVG file.
func writeSVG(what, path string, render func() ([]byte, error)) tea.Cmd {
	return func() tea.Msg {
		svg, err := render()
		if err == nil {
			err = os.WriteFile(path, svg, 0o644)
		}
		if err != nil {
			return exportedMsg{what: what, path: path, err: fmt.Errorf("export %s: %w", what, err)}
		}
		return exportedMsg{what: what, path: path}
	}
}

// The UI has one numbering, the trace file's line: the trace pane, every
// error and the parser show it, so the status line, g, :line, breakpoints
// and bookmarks speak it too. A position (records run) stays internal.

// lineOf is the trace line of the record that position pos has just run;
// 0 at the start.
func (m *Model) lineOf(pos int) int {
	if pos <= 0 || pos > m.recs.len() {
		return 0
	}
	return m.recs.line(pos - 1)
}

// where names a position for a message: "line 32", or "the start".
func (m *Model) where(pos int) string {
	if l := m.lineOf(pos); l > 0 {
		return fmt.Sprintf("line %d", l)
	}
	return "the start"
}

// lineRange is the first and last trace lines of the records.
func (m *Model) lineRange() (int, int) {
	if m.recs.len() == 0 {
		return 0, 0
	}
	return m.recs.line(0), m.recs.line(m.recs.len() - 1)
}

// gotoLineText goes to just after the record at the typed line runs; 0
// goes to the start.
func (m *Model) gotoLineText(in string, say bool) (tea.Cmd, error) {
	l, err := strconv.Atoi(strings.TrimPrefix(in, "L"))
	if err != nil || l < 0 {
		return nil, fmt.Errorf("%q is not a line number", in)
	}
	info := ""
	if say {
		info = fmt.Sprintf("at line %d", l)
		if l == 0 {
			info = "at the start"
		}
	}
	if l == 0 {
		return m.move(func(s *sessions.Session) (string, error) { return info, s.Goto(0) }), nil
	}
	return m.gotoLine(l, info)
}

// runTo runs forward to position target (just after its record ran),
// stopping earlier at a breakpoint; a target behind the position is gone
// to directly (nothing runs on the way back).
func (m *Model) runTo(target int) tea.Cmd {
	line := m.lineOf(target)
	return m.move(func(s *sessions.Session) (string, error) {
		if target <= s.Pos() {
			if err := s.Goto(target); err != nil {
				return "", err
			}
			return fmt.Sprintf("back at %s", m.where(target)), nil
		}
		// The session stops Continue at breakpoints; one on the target's
		// line, added for this run only, ends it there.
		tmp := sessions.Breakpoint{Line: line, Node: sessions.AnyNode}
		had := s.HasBreakpoint(tmp)
		if !had {
			if err := s.AddBreakpoint(tmp); err != nil {
				return "", err
			}
			defer s.RemoveBreakpoint(tmp)
		}
		h, err := s.Continue()
		switch {
		case err != nil:
			return "", err
		case !h.Found:
			return endOfTrace(s, fmt.Sprintf("end of trace before line %d", line)), nil
		case h.Index+1 == target && !had:
			return fmt.Sprintf("ran to line %d", line), nil
		case h.Index+1 == target:
			return m.hitText(h, ""), nil
		}
		return m.hitText(h, "") + fmt.Sprintf(" (before line %d)", line), nil
	})
}

// copyOut puts text on the clipboard through the terminal (OSC 52, as
// lazygit does: it works over ssh and in tmux with set-clipboard on).
func (m *Model) copyOut(text string) tea.Cmd {
	if text == "" {
		m.setMsg("", errors.New("copy: nothing to copy here"))
		return nil
	}
	n := strings.Count(text, "\n") + 1
	m.setMsg(fmt.Sprintf("copied %d line(s), %d bytes, to the clipboard (OSC 52)", n, len(text)), nil)
	return tea.SetClipboard(text)
}

// selectionText is what y copies from the focused pane: the trace row
// under the cursor, the selected node's details, or the pane's whole text.
func (m *Model) selectionText() string {
	return m.component(m.focus).selection(m.ctx(), m.paneWidth(m.focus))
}

// paneWidth is the inner width of pane p as laid out now (8 at least, for
// a pane the compact layout hides).
func (m *Model) paneWidth(p pane) int { return max(m.layout().rects[p].w-2, 8) }

// poolWidth is the inner width of the pool pane as it is drawn when
// focused (the compact layout shows it then).
func (m *Model) poolWidth() int {
	f, o := m.focus, m.other
	if m.layout().compact {
		m.focus, m.other = panePool, panePool
	}
	w := m.layout().rects[panePool].w - 2
	m.focus, m.other = f, o
	return max(w, 8)
}

// toggleMemory shows or hides the memory timeline; shown, it reads the
// samples it lacks in a move that ends where it began.
func (m *Model) toggleMemory() tea.Cmd {
	m.mem.on = !m.mem.on
	if !m.mem.on {
		m.setMsg("memory timeline hidden", nil)
		return nil
	}
	if m.focus != panePool {
		m.focusPane(panePool)
	}
	return m.move(func(*sessions.Session) (string, error) {
		return "memory timeline of the pool pane (M hides it, p switches pool)", nil
	})
}
