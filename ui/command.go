package ui

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/sessions"
	"github.com/cgtviz/cgtviz/traces"
)

// lineCommand is one command of the ':' command line (k9s and vim style):
// jumps by step, line or node, "why", breakpoints by text, save, export.
type lineCommand struct {
	name  string
	alias string // a second name, "" for none
	args  string // the arguments, as the hint shows them
	help  string
	run   func(m *Model, args []string) (tea.Cmd, error)
}

// lineCommands is every command, in the order the hint and :help list
// them. It is filled in init: the run functions reach it through :help.
var lineCommands []lineCommand

func init() {
	lineCommands = []lineCommand{
		{"line", "step", "L", "go to just after trace line L runs (0: the start; a bare number does too)", cmdLine},
		{"node", "graph", "ID", "select node #ID in the tree", cmdNode},
		{"why", "", "", "go to the line that recorded (or warmed up) the node selected in the tree", cmdWhy},
		{"tensor", "", "NAME", "go to the line that made the tensor bound to NAME", cmdTensor},
		{"freed", "", "NAME", "go back to the line whose new generation freed NAME", cmdFreed},
		{"break", "b", "[SPEC]", "toggle a breakpoint: line L, fn NAME, an event kind, replay #ID; alone, list them (d deletes)", cmdBreak},
		{"delete", "del", "N", "delete breakpoint N (as :b lists them)", cmdDelete},
		{"clear", "", "", "remove every breakpoint", cmdClear},
		{"until", "u", "[L]", "run to line L (or the trace cursor's), stopping at breakpoints on the way; enter on a trace row does too", cmdUntil},
		{"save", "", "[FILE]", "save the session (to FILE, or the -save file)", cmdSave},
		{"export", "", "[graph]", "export the tree as SVG (as e does), or the CUDA graph of the node selected in the tree", cmdExport},
		{"help", "", "", "list the commands", cmdHelp},
		{"quit", "q", "", "quit", func(*Model, []string) (tea.Cmd, error) { return tea.Quit, nil }},
	}
}

// candidates are the commands a typed name may mean: the one it names (or
// aliases), else every command whose name starts with it.
func candidates(name string) []lineCommand {
	var found []lineCommand
	for _, c := range lineCommands {
		if c.name == name || (c.alias != "" && c.alias == name) {
			return []lineCommand{c}
		}
		// A prefix of an alias counts too: "s" may mean save or step
		// (the alias of line), and must not silently pick one.
		if strings.HasPrefix(c.name, name) || (c.alias != "" && strings.HasPrefix(c.alias, name)) {
			found = append(found, c)
		}
	}
	return found
}

// findCommand returns the only command a typed name may mean; when it may
// mean several, it names them.
func findCommand(name string) (lineCommand, []string, bool) {
	found := candidates(name)
	if len(found) == 1 {
		return found[0], nil, true
	}
	names := make([]string, len(found))
	for i, c := range found {
		names[i] = c.name
	}
	return lineCommand{}, names, false
}

// runLine runs one line of the command line.
func (m *Model) runLine(line string) tea.Cmd {
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return nil
	}
	if _, err := strconv.Atoi(fields[0]); err == nil && len(fields) == 1 {
		fields = []string{"line", fields[0]}
	}
	c, several, ok := findCommand(fields[0])
	switch {
	case !ok && len(several) > 1:
		m.setMsg("", fmt.Errorf(":%s: which one? %s", fields[0], strings.Join(several, ", ")))
		return nil
	case !ok:
		m.setMsg("", fmt.Errorf(":%s: unknown command (:help lists them)", fields[0]))
		return nil
	}
	cmd, err := c.run(m, fields[1:])
	if err != nil {
		m.setMsg("", fmt.Errorf(":%s: %w", c.name, err))
		return nil
	}
	return cmd
}

// commandHint is what the prompt suggests for the line typed so far: the
// commands its first word may start, with their arguments, and what the
// command does once only one is left.
func commandHint(line string) string {
	first, _, _ := strings.Cut(strings.TrimLeft(line, " "), " ")
	matches := candidates(first)
	usage := func(c lineCommand) string {
		if c.args == "" {
			return c.name
		}
		return c.name + " " + c.args
	}
	switch len(matches) {
	case 0:
		if _, err := strconv.Atoi(first); err == nil {
			return "line " + first
		}
		return "no such command"
	case 1:
		return usage(matches[0]) + " — " + matches[0].help
	}
	out := make([]string, len(matches))
	for i, c := range matches {
		out[i] = usage(c)
	}
	return strings.Join(out, " · ")
}

// completeCommand completes the command's name when one command starts
// with what was typed (tab).
func completeCommand(line string) string {
	if strings.Contains(strings.TrimSpace(line), " ") {
		return line
	}
	if c, _, ok := findCommand(strings.TrimSpace(line)); ok {
		return c.name + " "
	}
	return line
}

func oneInt(args []string, what string) (int, error) {
	if len(args) != 1 {
		return 0, fmt.Errorf("want one %s", what)
	}
	n, err := strconv.Atoi(strings.TrimPrefix(args[0], "#"))
	if err != nil {
		return 0, fmt.Errorf("%q is not a %s", args[0], what)
	}
	return n, nil
}

// stepOfLine is the position just after the record at trace line l ran.
func (m *Model) stepOfLine(l int) (int, bool) {
	// Lines ascend: a binary search, not a read of every record.
	if i := m.sess.Records().RecordAtLine(l); i < m.recs.len() && m.recs.line(i) == l {
		return i + 1, true
	}
	return 0, false
}

func cmdLine(m *Model, args []string) (tea.Cmd, error) {
	if len(args) != 1 {
		return nil, errors.New("want one line number")
	}
	return m.gotoLineText(args[0], true)
}

func (m *Model) gotoLine(l int, info string) (tea.Cmd, error) {
	pos, ok := m.stepOfLine(l)
	if !ok {
		return nil, m.noLine(l)
	}
	return m.move(func(s *sessions.Session) (string, error) { return info, s.Goto(pos) }), nil
}

// noLine is the error of a line no record is at.
func (m *Model) noLine(l int) error {
	lo, hi := m.lineRange()
	return fmt.Errorf("no record at line %d (the trace has lines %d-%d, 0 is the start)", l, lo, hi)
}

func cmdNode(m *Model, args []string) (tea.Cmd, error) {
	id, err := oneInt(args, "node id")
	if err != nil {
		return nil, err
	}
	st := m.snap.state
	if st == nil {
		return nil, errors.New("no state")
	}
	// The shown device first, then the others in order.
	devs := []int{m.dev}
	for d := range st.Devices {
		if d != m.dev {
			devs = append(devs, d)
		}
	}
	for _, d := range devs {
		for _, n := range st.Devices[d].Nodes {
			if n.ID != id {
				continue
			}
			m.tree.selectNode(d, id)
			if l, ok := m.tree.selected(); !ok || l.dev != d || l.id != id {
				return nil, fmt.Errorf("#%d is inside a folded node (enter unfolds)", id)
			}
			m.focusPane(paneTree)
			m.setMsg(fmt.Sprintf("#%d %s on dev %d (:why goes to its recording)", id, n.Fn, d), nil)
			return nil, nil
		}
	}
	return nil, fmt.Errorf("no node #%d at %s", id, m.where(m.snap.pos))
}

// errNoArgs is the error of a command that takes no arguments.
var errNoArgs = errors.New("takes no arguments")

func cmdWhy(m *Model, args []string) (tea.Cmd, error) {
	if len(args) > 0 {
		return nil, fmt.Errorf("%w (it uses the tree's selection)", errNoArgs)
	}
	return m.why()
}

// why goes to the step that made the node selected in the tree: the call
// that recorded it, or that warmed it up. It answers the question a user
// asks first on meeting a node: where did this come from?
func (m *Model) why() (tea.Cmd, error) {
	l, ok := m.tree.selected()
	st := m.snap.state
	if !ok || st == nil || l.kind == treeDevice || l.dev >= len(st.Devices) {
		return nil, errors.New("select a node in the tree first (1, then j/k)")
	}
	ds := &st.Devices[l.dev]
	switch l.kind {
	case treeNode:
		for _, n := range ds.Nodes {
			if n.ID == l.id {
				return m.gotoLine(n.RecordedAtLine, fmt.Sprintf("line %d recorded #%d %s: %s", n.RecordedAtLine, n.ID, n.Fn, causeText(n)))
			}
		}
	case treeWarmup:
		for _, w := range ds.Warmups {
			if w.ID == l.id {
				return m.gotoLine(w.Line, fmt.Sprintf("line %d warmed up %s (warmup %d)", w.Line, fnOf(&w), w.ID))
			}
		}
	}
	return nil, fmt.Errorf("the selected node is not in the state at %s", m.where(m.snap.pos))
}

// causeText is a node's record cause in a few words, with the first
// invariant that failed when it was a re-record.
func causeText(n engine.NodeView) string {
	s := n.Cause.String()
	if len(n.Failures) > 0 {
		s += " (" + n.Failures[0].Describe() + ")"
	}
	// The log's words for what the engine knows beyond the cause (a graph
	// after a graph break, a backward, a recompile); a def's first
	// recording adds nothing the message does not say.
	if note := n.Origin.NoteAt(n.Fn, engine.EvRecord, n.Cause); note != "" && !strings.HasPrefix(note, "the first recording of ") {
		s += "; " + note
	}
	return s
}

func oneName(args []string) (string, error) {
	if len(args) != 1 {
		return "", errors.New("want one tensor name")
	}
	return args[0], nil
}

// cmdTensor answers "where does this tensor come from?": it goes to the
// record that made the tensor bound to a name now.
func cmdTensor(m *Model, args []string) (tea.Cmd, error) {
	name, err := oneName(args)
	if err != nil {
		return nil, err
	}
	if st := m.snap.state; st != nil {
		for _, tv := range st.Tensors {
			if !slices.Contains(tv.Names, name) {
				continue
			}
			if tv.Line <= 0 {
				return nil, fmt.Errorf("%s has no trace line (%s)", name, tv.Producer)
			}
			pos, ok := m.stepOfLine(tv.Line)
			if !ok {
				return nil, m.noLine(tv.Line)
			}
			at, here, recs := m.snap.pos, m.where(m.snap.pos), m.recs
			// Looking back for the name's last binding reads the trace,
			// record by record: in the move's command, not in Update.
			return m.move(func(s *sessions.Session) (string, error) {
				info := fmt.Sprintf("line %d made %s: %s; at %s it is %s, %s pool, owner %s",
					tv.Line, name, tv.Producer, here, tv.State, tv.Pool, tv.Owner)
				if l := lastBinding(recs, name, at); l > 0 && l != tv.Line {
					// The name was bound again since, to the same object:
					// a replay hands back its cached output tensor.
					info = fmt.Sprintf("line %d bound %s again, to the same cached replay object line %d made (%s); at %s it is %s, %s pool, owner %s",
						l, name, tv.Line, tv.Producer, here, tv.State, tv.Pool, tv.Owner)
				}
				return info, s.Goto(pos)
			}), nil
		}
	}
	return nil, fmt.Errorf("no tensor is bound to %q at %s", name, m.where(m.snap.pos))
}

// cmdFreed answers "who freed this output?": it searches back from the
// position for the step whose dealloc (a new generation ending the path)
// freed the tensor named, and goes just after it.
func cmdFreed(m *Model, args []string) (tea.Cmd, error) {
	name, err := oneName(args)
	if err != nil {
		return nil, err
	}
	recs := m.recs
	return m.move(func(s *sessions.Session) (string, error) {
		for i := s.Pos() - 1; i >= 0; i-- {
			sum, ok := s.Summary(i)
			if !ok {
				continue
			}
			// A del of the name frees its tensor when it held the last
			// reference (the storage died: PyTorch's refcount); either
			// way it is the answer, since nothing is bound to it after.
			if rec := recs.at(i); rec.Op == traces.OpDel && slices.Contains(rec.Names, name) {
				what := fmt.Sprintf("line %d deleted %s", rec.Line, name)
				if sum.Kinds.Has(engine.EvTensorDied) {
					what += ", the last reference to its tensor: its storage died there"
				} else {
					what += "; its tensor lives on under another name or as a graph's output"
				}
				return what, s.Goto(i + 1)
			}
			if !sum.Kinds.Has(engine.EvDealloc) {
				continue
			}
			st := s.StepAt(i)
			if st == nil {
				continue
			}
			for _, ev := range st.Events {
				if ev.Kind == engine.EvDealloc && slices.Contains(ev.Tensors, name) {
					return fmt.Sprintf("line %d freed %s: %s", st.Line, name, ev.Msg), s.Goto(i + 1)
				}
			}
			if len(st.Events) == 0 {
				return "", fmt.Errorf(":freed: the events of line %d are not kept on this device (it cannot be snapshotted)", st.Line)
			}
		}
		return "", fmt.Errorf(":freed: no line before %s freed %s", m.where(s.Pos()), name)
	}), nil
}

// parseBreakpoint reads a breakpoint spec: any of "line L", "fn NAME", an
// event kind, and after "replay" an optional "#ID"; all given must match.
func parseBreakpoint(args []string) (sessions.Breakpoint, error) {
	b := sessions.Breakpoint{Node: sessions.AnyNode}
	if len(args) == 0 {
		return b, errors.New("give line L, fn NAME, an event kind or replay #ID")
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "line" || a == "fn":
			if i+1 >= len(args) {
				return b, fmt.Errorf("%s needs a value", a)
			}
			i++
			if a == "fn" {
				b.Fn = args[i]
				continue
			}
			n, err := strconv.Atoi(args[i])
			if err != nil || n <= 0 {
				return b, fmt.Errorf("line %q is not a line number", args[i])
			}
			b.Line = n
		case strings.HasPrefix(a, "#"):
			if b.Kind != engine.EvReplay {
				return b, fmt.Errorf("%s: a node id follows replay", a)
			}
			n, err := strconv.Atoi(a[1:])
			if err != nil || n < 0 {
				return b, fmt.Errorf("%q is not a node id", a)
			}
			b.Node = n
		default:
			k, ok := sessions.ParseKind(a)
			if !ok {
				return b, fmt.Errorf("%q is not line, fn or an event kind (%s)", a, kindNames())
			}
			b.Kind = k
		}
	}
	return b, nil
}

func kindNames() string {
	var names []string
	for _, k := range sessions.BreakpointKinds() {
		names = append(names, sessions.KindName(k))
	}
	return strings.Join(names, ", ")
}

func cmdBreak(m *Model, args []string) (tea.Cmd, error) {
	if len(args) == 0 {
		m.openOverlay(m.breakpointList())
		return nil, nil
	}
	b, err := parseBreakpoint(args)
	if err != nil {
		return nil, err
	}
	// A breakpoint that can never stop is a typo: refuse it and say why.
	if b.Fn != "" && !m.knownFn(b.Fn) {
		return nil, fmt.Errorf("no function %q in this trace (%s)", b.Fn, strings.Join(m.fnNames(), ", "))
	}
	if b.Line > 0 {
		if _, ok := m.stepOfLine(b.Line); !ok {
			lo, hi := m.lineRange()
			return nil, fmt.Errorf("no record at line %d (the trace has lines %d-%d)", b.Line, lo, hi)
		}
	}
	m.toggleBreakpoint(b)
	return nil, nil
}

// fnNames are the functions the trace defines, in order.
func (m *Model) fnNames() []string {
	// The index collects them as it goes; a trace in memory lists them.
	return m.sess.Records().Defs()
}

func (m *Model) knownFn(fn string) bool { return slices.Contains(m.fnNames(), fn) }

func cmdDelete(m *Model, args []string) (tea.Cmd, error) {
	n, err := oneInt(args, "breakpoint number")
	if err != nil {
		return nil, err
	}
	bps := m.sess.Breakpoints()
	if n < 1 || n > len(bps) {
		return nil, fmt.Errorf("no breakpoint %d (there are %d; :b lists them)", n, len(bps))
	}
	m.sess.RemoveBreakpoint(bps[n-1])
	m.snap.bps = m.sess.Breakpoints()
	m.setMsg("breakpoint deleted: "+bps[n-1].String(), nil)
	return nil, nil
}

func cmdUntil(m *Model, args []string) (tea.Cmd, error) {
	switch len(args) {
	case 0:
		if m.trace.cursor < 0 || m.trace.cursor >= m.recs.len() {
			return nil, errors.New("no trace row under the cursor")
		}
		return m.runTo(m.trace.cursor + 1), nil
	case 1:
		l, err := oneInt(args, "line number")
		if err != nil {
			return nil, err
		}
		pos, ok := m.stepOfLine(l)
		if !ok {
			lo, hi := m.lineRange()
			return nil, fmt.Errorf("no record at line %d (the trace has lines %d-%d)", l, lo, hi)
		}
		return m.runTo(pos), nil
	}
	return nil, errors.New("want a line number, or nothing for the trace cursor's line")
}

func cmdClear(m *Model, args []string) (tea.Cmd, error) {
	if len(args) > 0 {
		return nil, errNoArgs
	}
	bps := m.sess.Breakpoints()
	for _, b := range bps {
		m.sess.RemoveBreakpoint(b)
	}
	m.snap.bps = m.sess.Breakpoints()
	m.setMsg(fmt.Sprintf("removed %d breakpoints", len(bps)), nil)
	return nil, nil
}

func cmdSave(m *Model, args []string) (tea.Cmd, error) {
	if len(args) > 1 {
		return nil, errors.New("one file at most")
	}
	path := m.opts.SavePath
	if len(args) == 1 {
		path = args[0]
	}
	return m.saveTo(path), nil
}

func cmdExport(m *Model, args []string) (tea.Cmd, error) {
	switch {
	case len(args) == 0:
		if m.opts.Export == nil {
			return nil, errors.New("this build cannot export")
		}
		return m.export(), nil
	case len(args) == 1 && args[0] == "graph":
		if m.opts.ExportGraph == nil {
			return nil, errors.New("this build cannot export CUDA graphs")
		}
		l, ok := m.tree.selected()
		if !ok || l.kind != treeNode {
			return nil, errors.New("select a recorded node in the tree first (warmups have no CUDA graph)")
		}
		return m.exportGraph(l.dev, l.id), nil
	}
	return nil, errors.New("want nothing (the tree) or graph (the selected node's CUDA graph)")
}

func cmdHelp(m *Model, args []string) (tea.Cmd, error) {
	m.openOverlay(m.helpOverlay())
	return nil, nil
}

// lastBinding is the trace line of the last record before position pos
// that bound name, 0 when none did. It reads the trace: call it in a
// command.
func lastBinding(recs records, name string, pos int) int {
	for i := min(pos, recs.len()) - 1; i >= 0; i-- {
		r := recs.at(i)
		switch r.Op {
		case traces.OpCall:
			if slices.Contains(r.Out, name) {
				return r.Line
			}
		case traces.OpTensor, traces.OpParam:
			if r.Name == name {
				return r.Line
			}
		case traces.OpEager:
			if r.Stmt != nil && r.Stmt.Out == name {
				return r.Line
			}
		}
	}
	return 0
}
