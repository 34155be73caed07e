package ui

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

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

// pane names a pane; the numbers people press are pane+1.
type pane int

const (
	paneTree pane = iota
	panePool
	paneDelta
	paneTrace
	paneDetails
	paneTensors
	numPanes
)

var paneTitles = [numPanes]string{"Tree", "Pool", "Checkpoint delta", "Trace", "Details", "Tensors"}

// mode is what keys go to.
type mode int

const (
	modeNormal  mode = iota
	modeGoto         // the "go to step" prompt
	modeSearch       // the trace search prompt
	modePicker       // the event-kind breakpoint picker
	modeMark         // the bookmark name prompt
	modeJump         // the "go to bookmark" prompt
	modeCommand      // the ':' command line
	modeOverlay      // a popup over the panes (:help, the breakpoint list)
)

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
}

// takeSnapshot reads the session; it runs where the session may be used.
func takeSnapshot(s *sessions.Session) snapshot {
	snap := snapshot{pos: s.Pos(), n: s.Len(), state: s.State(), bps: s.Breakpoints(), executed: s.Executed(), ckptIdx: -1}
	if snap.pos > 0 {
		snap.step = s.StepAt(snap.pos - 1)
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

// Model is the root model: it owns the session, the layout, the focus and
// the panes.
type Model struct {
	sess    *sessions.Session
	recs    records        // the trace, read through the session
	handoff engine.Handoff // the session's rule, for the status line
	opts    Options
	keys    KeyMap
	styles  Styles
	help    help.Model

	width, height int
	focus         pane
	other         pane // the last focused pane other than the trace (compact layout)
	dev           int  // the device the pool shows: the last step's, or the one d chose

	busy    bool
	pending []tea.KeyPressMsg // keys typed while busy, handled in order after
	snap    snapshot

	tree     treePane
	pool     poolPane
	trace    tracePane
	timeline timeline
	helpMemo struct {
		key   helpKey
		lines []string
	}
	delta   scroll
	details scroll
	tensors scroll
	// tensorsLeft is how far the tensors table is scrolled sideways.
	tensorsLeft int

	mode  mode
	input string
	marks []sessions.Bookmark // listed by the "go to bookmark" prompt
	query string
	// searchPane is the pane the query searches: the one focused when
	// it was typed.
	searchPane pane
	picker     int
	over       popup
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
		help:    help.New(),
		width:   80,
		height:  24,
		focus:   paneTrace,
		other:   paneTree,
	}
	m.help.Styles = m.styles.Help
	if opts.Export == nil {
		m.keys.Export.SetEnabled(false)
	}
	if p, ok := s.Records().Progress(); ok {
		m.setProgress(p)
	}
	m.install(takeSnapshot(s))
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
	return func() tea.Msg {
		info, err := op(s)
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

// Update implements tea.Model.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.help.SetWidth(msg.Width)
		m.refresh()
		return m, nil
	case movedMsg:
		m.busy = false
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
	case tea.KeyPressMsg:
		if msg.String() == "ctrl+c" {
			return m, tea.Quit
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

// key handles a key press.
func (m *Model) key(k tea.KeyPressMsg) tea.Cmd {
	if k.String() == "ctrl+c" {
		return tea.Quit
	}
	switch m.mode {
	case modeGoto, modeSearch, modeMark, modeJump, modeCommand:
		return m.prompt(k)
	case modePicker:
		return m.pick(k)
	case modeOverlay:
		return m.overlayKey(k)
	}
	km := m.keys
	switch {
	case key.Matches(k, km.Quit):
		return tea.Quit
	case key.Matches(k, km.Help):
		m.help.ShowAll = !m.help.ShowAll
		if m.help.ShowAll {
			// Too short a screen for every key under the panes: all of
			// them in a popup instead, none cut.
			all := m.fullHelpLines(max(m.width, 20) - 6)
			if room := max(m.height, 8) - 4 - 3; len(all) > room {
				m.help.ShowAll = false
				m.openOverlay(popup{title: "keys (j/k scroll, esc closes; :help lists the commands)", lines: all})
			}
		}
		m.refresh()
	case key.Matches(k, km.Device):
		if st := m.snap.state; st != nil && len(st.Devices) > 0 {
			m.dev = (m.dev + 1) % len(st.Devices)
			m.setMsg(fmt.Sprintf("pool and tensors of dev %d (a step shows its own device again)", m.dev), nil)
		}
	case key.Matches(k, km.NextPane):
		m.focusPane((m.focus + 1) % numPanes)
	case key.Matches(k, km.PrevPane):
		m.focusPane((m.focus + numPanes - 1) % numPanes)
	case key.Matches(k, km.Pane):
		if d, err := strconv.Atoi(k.String()); err == nil {
			m.focusPane(pane(d - 1))
		}
	case key.Matches(k, km.Next):
		return m.move(func(s *sessions.Session) (string, error) {
			if _, ok := s.Step(); !ok {
				if h := s.Horizon(); h != "" {
					return h, nil
				}
				return "end of trace", nil
			}
			return "", nil
		})
	case key.Matches(k, km.Prev):
		return m.move(func(s *sessions.Session) (string, error) {
			if err := s.Back(); errors.Is(err, sessions.ErrAtStart) {
				return "at the start of the trace", nil
			} else if err != nil {
				return "", err
			}
			return "", nil
		})
	case key.Matches(k, km.Continue):
		return m.move(func(s *sessions.Session) (string, error) {
			h, err := s.Continue()
			end := "end of trace: no breakpoint hit"
			if hz := s.Horizon(); hz != "" {
				end = hz + ": no breakpoint hit"
			}
			return m.hitText(h, end), err
		})
	case key.Matches(k, km.Reverse):
		return m.move(func(s *sessions.Session) (string, error) {
			h, err := s.ReverseContinue()
			return m.hitText(h, "start of trace: no breakpoint hit"), err
		})
	case key.Matches(k, km.Goto):
		m.mode, m.input = modeGoto, ""
	case key.Matches(k, km.Search):
		m.mode, m.input = modeSearch, ""
	case key.Matches(k, km.Mark):
		m.mode, m.input = modeMark, ""
	case key.Matches(k, km.Jump):
		m.mode, m.input = modeJump, ""
		m.marks = m.sess.Bookmarks()
	case key.Matches(k, km.Command):
		m.mode, m.input = modeCommand, ""
	case key.Matches(k, km.Why):
		cmd, err := m.why()
		if err != nil {
			m.setMsg("", fmt.Errorf("why: %w", err))
		}
		return cmd
	case key.Matches(k, km.NextMatch):
		m.find(1)
	case key.Matches(k, km.PrevMatch):
		m.find(-1)
	case key.Matches(k, km.Breakpoint):
		m.toggleLineBreakpoint()
	case key.Matches(k, km.KindBreak):
		m.mode, m.picker = modePicker, 0
	case key.Matches(k, km.Toggle):
		switch m.focus {
		case paneTree:
			m.tree.toggle()
			m.tree.rebuild(m.snap.state, m.snap.step)
		case paneTrace:
			// Run to cursor: up to the record under the cursor, stopping
			// at a breakpoint on the way as gdb's until does.
			if m.trace.cursor >= 0 && m.trace.cursor < m.recs.len() {
				return m.runTo(m.trace.cursor + 1)
			}
		}
	case key.Matches(k, km.Copy):
		return m.copyOut(m.selectionText())
	case key.Matches(k, km.CopyMsg):
		if m.msg == "" {
			m.setMsg("", errors.New("copy: no message to copy"))
			return nil
		}
		return m.copyOut(m.msg)
	case key.Matches(k, km.Memory):
		return m.toggleMemory()
	case key.Matches(k, km.MemPool):
		if m.mem.on {
			m.mem.pool = 1 - m.mem.pool
		}
	case key.Matches(k, km.Mark2):
		m.markDiff()
	case key.Matches(k, km.Diff):
		m.showDiff()
	case key.Matches(k, km.Save):
		return m.save()
	case key.Matches(k, km.Export):
		return m.export()
	case key.Matches(k, km.Left):
		if m.focus == paneTensors {
			m.tensorsLeft = max(m.tensorsLeft-8, 0)
		}
	case key.Matches(k, km.Right):
		if m.focus == paneTensors {
			m.tensorsLeft += 8
		}
	case key.Matches(k, km.Up):
		m.scrollFocused(-1)
	case key.Matches(k, km.Down):
		m.scrollFocused(1)
	case key.Matches(k, km.PageUp):
		m.scrollFocused(-max(m.layout().rects[m.focus].h-3, 1))
	case key.Matches(k, km.PageDown):
		m.scrollFocused(max(m.layout().rects[m.focus].h-3, 1))
	case key.Matches(k, km.Top):
		m.scrollFocused(-1 << 30)
	case key.Matches(k, km.Bottom):
		m.scrollFocused(1 << 30)
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

// scrollFocused moves the cursor of the focused list pane or scrolls the
// focused text pane.
func (m *Model) scrollFocused(d int) { m.scrollPane(m.focus, d) }

// scrollPane moves the cursor of a list pane or scrolls a text pane.
func (m *Model) scrollPane(p pane, d int) {
	switch p {
	case paneTree:
		m.tree.cursor = clampAdd(m.tree.cursor, d, len(m.tree.lines))
	case paneTrace:
		m.trace.cursor = clampAdd(m.trace.cursor, d, m.recs.len())
		m.refresh()
	case panePool:
		textScroll(&m.pool.scroll, d)
	case paneDelta:
		textScroll(&m.delta, d)
	case paneDetails:
		textScroll(&m.details, d)
	case paneTensors:
		textScroll(&m.tensors, d)
	}
}

func clampAdd(v, d, n int) int {
	v += d
	if v >= n {
		v = n - 1
	}
	return max(v, 0)
}

// textScroll moves a text pane's first line; View clamps it to the text.
func textScroll(s *scroll, d int) {
	s.offset = max(s.offset+d, 0)
	if d > 1<<20 {
		s.offset = 1 << 30
	}
	s.cursor = s.offset
}

// prompt edits the line of a prompt (go to, search, bookmarks, commands).
func (m *Model) prompt(k tea.KeyPressMsg) tea.Cmd {
	switch k.String() {
	case "esc":
		m.mode = modeNormal
	case "tab":
		if m.mode == modeCommand {
			m.input = completeCommand(m.input)
		}
	case "enter":
		in := strings.TrimSpace(m.input)
		md := m.mode
		m.mode = modeNormal
		switch md {
		case modeCommand:
			return m.runLine(in)
		case modeSearch:
			m.query, m.searchPane = in, m.focus
			if in == "" {
				m.setMsg("search cleared", nil)
				return nil
			}
			m.find(1)
			return nil
		case modeMark:
			if err := m.sess.Bookmark(in); err != nil {
				m.setMsg("", err)
			} else {
				m.setMsg(fmt.Sprintf("bookmark %q at %s", in, m.where(m.snap.pos)), nil)
			}
			return nil
		case modeJump:
			return m.move(func(s *sessions.Session) (string, error) {
				return fmt.Sprintf("at bookmark %q", in), s.GotoBookmark(in)
			})
		}
		// g says nothing on arrival: the message line shows why the
		// step did what it did, and the status line where it is.
		cmd, err := m.gotoLineText(in, false)
		if err != nil {
			m.setMsg("", fmt.Errorf("go to line: %w", err))
		}
		return cmd
	case "backspace":
		if r := []rune(m.input); len(r) > 0 {
			m.input = string(r[:len(r)-1])
		}
	default:
		if k.Text != "" && len(m.input) < 200 {
			m.input += k.Text
		}
	}
	return nil
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

func (m *Model) pick(k tea.KeyPressMsg) tea.Cmd {
	items := m.pickerItems()
	switch {
	case k.String() == "esc" || k.String() == "B" || key.Matches(k, m.keys.Quit):
		m.mode = modeNormal
	case key.Matches(k, m.keys.Up):
		m.picker = clampAdd(m.picker, -1, len(items))
	case key.Matches(k, m.keys.Down):
		m.picker = clampAdd(m.picker, 1, len(items))
	case k.String() == "enter" || k.String() == "space":
		if m.picker >= 0 && m.picker < len(items) {
			m.toggleBreakpoint(items[m.picker])
		}
		m.mode = modeNormal
	}
	return nil
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
			return fmt.Sprintf("end of trace before line %d", line), nil
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
	var lines []string
	switch m.focus {
	case paneTrace:
		if c := m.trace.cursor; c >= 0 && c < m.recs.len() {
			return strings.TrimSpace(m.traceRowText(c))
		}
		return ""
	case paneTree:
		l, ok := m.tree.selected()
		if !ok {
			return ""
		}
		lines = nodeLines(m.snap.state, l, nil, m.styles, 1<<16)
	default:
		lines = m.paneText(m.focus)
	}
	for i := range lines {
		lines[i] = strings.TrimRight(ansi.Strip(lines[i]), " ")
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

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
