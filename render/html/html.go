package html

import (
	"bytes"
	"context"
	"fmt"
	gohtml "html"
	"regexp"
	"strconv"
	"strings"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/engine/alloc"
	"github.com/cgtviz/cgtviz/engine/report"
	"github.com/cgtviz/cgtviz/render"
)

// DefaultMaxNodes is the most nodes a device's tree may have to be drawn
// (and listed) on the page: past it the picture would be unreadable and
// the page too big to attach; `cgtviz export --node` draws a subtree.
const DefaultMaxNodes = 400

// Page is what the page is made of.
type Page struct {
	Report   *report.Report
	Analysis *report.Analysis
	// State is the engine's state after the run (the trees drawn).
	State *engine.State
	// File is the trace's path as given; Version cgtviz's.
	File, Version string
}

// Options tune Render; the zero value is the defaults.
type Options struct {
	// SVG lays out DOT as SVG; nil is render.SVG (cgtviz-graphviz).
	SVG func(ctx context.Context, dot []byte) ([]byte, error)
	// MaxNodes bounds the nodes of a device's tree drawn; 0 is
	// DefaultMaxNodes.
	MaxNodes int
}

// Render writes the page. A tree Graphviz cannot draw is not an error:
// the page says why in its place and the error is among the warnings.
func Render(ctx context.Context, p *Page, opts Options) (page []byte, warnings []error, err error) {
	if p == nil || p.Report == nil || p.Analysis == nil || p.State == nil {
		return nil, nil, fmt.Errorf("render: html: a page needs a report, its analysis and the final state")
	}
	if opts.SVG == nil {
		opts.SVG = render.SVG
	}
	if opts.MaxNodes <= 0 {
		opts.MaxNodes = DefaultMaxNodes
	}
	w := &writer{p: p, a: p.Analysis, opts: opts, rows: map[int]bool{}, nodes: map[[2]int]bool{}, fns: map[string]int{}}
	w.index()
	w.head()
	w.summary()
	w.functions()
	if err := w.trees(ctx); err != nil {
		return nil, nil, err
	}
	w.pool()
	w.log()
	w.foot()
	return w.b.Bytes(), w.warnings, nil
}

// writer holds the page as it is written, and what it links to.
type writer struct {
	b        bytes.Buffer
	p        *Page
	a        *report.Analysis
	opts     Options
	warnings []error
	rows     map[int]bool    // lines with a log row
	nodes    map[[2]int]bool // (device, id) of listed nodes
	fns      map[string]int  // function name to its section's number
}

// index notes every anchor the page will hold, so that a link is written
// only to something there.
func (w *writer) index() {
	for _, r := range w.a.Rows {
		w.rows[r.Line] = true
	}
	for i, f := range w.a.Functions {
		w.fns[f.Fn] = i
	}
	for _, d := range w.p.State.Devices {
		if len(d.Nodes) > w.opts.MaxNodes {
			continue
		}
		for _, n := range d.Nodes {
			w.nodes[[2]int{d.Index, n.ID}] = true
		}
	}
}

func esc(s string) string { return gohtml.EscapeString(s) }

func (w *writer) f(format string, args ...any) { fmt.Fprintf(&w.b, format, args...) }
func (w *writer) s(s string)                   { w.b.WriteString(s) }

// lineLink is "line N", linked to its log row when the log has it.
func (w *writer) lineLink(line int) string {
	if line <= 0 {
		return ""
	}
	if w.rows[line] {
		return fmt.Sprintf(`<a href="#l-%d">line %d</a>`, line, line)
	}
	return fmt.Sprintf("line %d", line)
}

// nodeID is a node's row's id; the trees link to it (TreeOptions.NodeLinks "#n-").
func nodeID(dev, id int) string { return fmt.Sprintf("n-d%d-%d", dev, id) }

// nodeLink is "#id", linked to the node's row when the page lists it.
func (w *writer) nodeLink(dev, id int) string {
	if w.nodes[[2]int{dev, id}] {
		return fmt.Sprintf(`<a href="#%s">#%d</a>`, nodeID(dev, id), id)
	}
	return fmt.Sprintf("#%d", id)
}

// fnLink is a function's name, linked to its section when detailed.
func (w *writer) fnLink(fn string) string {
	if i, ok := w.fns[fn]; ok {
		return fmt.Sprintf(`<a href="#fn-%d">%s</a>`, i, esc(fn))
	}
	return esc(fn)
}

func num(n int) string {
	s := strconv.Itoa(n)
	if n < 1000 && n > -1000 {
		return s
	}
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func (w *writer) head() {
	r := w.p.Report
	w.s("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
	w.s("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
	// No request may leave the page: the policy forbids every fetch, and
	// allows only the inline style and script.
	w.s("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n")
	w.f("<title>cgtviz report: %s</title>\n<style>%s</style>\n</head>\n<body>\n", esc(r.Trace), css)
	w.f("<header><h1>CUDAGraph Trees report</h1><p class=\"sub\">%s</p>\n", esc(r.Trace))
	w.s(`<nav><a href="#summary">Summary</a> <a href="#functions">Functions</a> <a href="#trees">Trees</a> <a href="#pool">Pool</a> <a href="#log">Decision log</a></nav></header>` + "\n")
}

func (w *writer) summary() {
	r, a, st := w.p.Report, w.a, w.p.State
	w.s("<section id=\"summary\"><h2>Summary</h2>\n<table class=\"kv\">\n")
	kv := func(k, v string) {
		if v != "" {
			w.f("<tr><th>%s</th><td>%s</td></tr>\n", k, v)
		}
	}
	kv("trace", esc(r.Trace))
	if w.p.File != "" && w.p.File != r.Trace {
		kv("file", "<code>"+esc(w.p.File)+"</code>")
	}
	kv("script", esc(a.Meta.Script))
	kv("torch", esc(a.Meta.Torch))
	kv("recorded on", esc(a.Meta.GPU))
	var devs []string
	for _, d := range st.Devices {
		devs = append(devs, fmt.Sprintf("%d: %s (%d nodes)", d.Index, esc(d.Name), len(d.Nodes)))
	}
	kv("replayed on", strings.Join(devs, "; "))
	kv("records", fmt.Sprintf("%s (%s mark_steps)", num(a.Records), num(st.MarkSteps)))
	if a.Meta.Unended {
		kv("recording", "<strong>did not end</strong>: the program died, was killed or exited before the recorder "+
			"finished; the trace holds what was recorded up to its last line")
	}
	kv("cgtviz", esc(w.p.Version))
	w.s("</table>\n")

	c := r.Counters
	w.s("<table class=\"counters\"><tr>")
	for _, h := range []string{"warmups", "recordings", "replays", "eager", "re-records", "checkpoints", "errors"} {
		w.f("<th>%s</th>", h)
	}
	w.s("</tr>\n<tr>")
	for _, n := range []int{c.Warmups, c.Recordings, c.Replays, c.Eager, c.Rerecords, c.Checkpoints, c.Errors} {
		w.f("<td>%s</td>", num(n))
	}
	w.s("</tr></table>\n")
	g := r.GraphPool
	w.f("<p>Graph pool at the end: %d segments, %s reserved, %s allocated (peak %s). Expectations: %d passed, %d failed.</p>\n",
		g.Segments, alloc.FormatSize(g.ReservedBytes), alloc.FormatSize(g.AllocatedBytes), alloc.FormatSize(g.PeakReservedBytes),
		r.Expectations.Passed, len(r.Expectations.Failed))

	w.s("<h3>Verdict</h3>\n<ul class=\"verdicts\">\n")
	for _, v := range a.Verdicts {
		cls := "bad"
		switch v.Kind {
		case report.VerdictNone:
			cls = "ok"
		case report.VerdictCheckpoint, report.VerdictMemoryGrowth, report.VerdictNoCalls:
			cls = "warn"
		}
		at := ""
		if v.Line > 0 && w.rows[v.Line] {
			at = " " + w.lineLink(v.Line)
		}
		w.f("<li class=\"%s\" data-kind=\"%s\">%s%s</li>\n", cls, esc(string(v.Kind)), esc(v.Text), at)
	}
	w.s("</ul>\n</section>\n")
}

// reasons lists rs, each with its count and the line it was first given.
func (w *writer) reasons(label, cls string, rs []report.Reason) string {
	if len(rs) == 0 {
		return ""
	}
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "<div class=\"%s\">%s %s× %s <span class=\"dim\">(first at %s)</span></div>", cls, label, num(r.Count), esc(firstLine(r.Text)), w.lineLink(r.Line))
	}
	return b.String()
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

func shapes(ss [][]int) string {
	var parts []string
	for _, s := range ss {
		d := make([]string, len(s))
		for i, n := range s {
			d[i] = strconv.Itoa(n)
		}
		parts = append(parts, "["+strings.Join(d, ", ")+"]")
	}
	if len(parts) == 0 {
		return "no tensor inputs"
	}
	return strings.Join(parts, " ")
}

// functions is a table of the compiled functions, a row each: what the
// tree did with its calls, why, the shapes it saw and its graphs.
func (w *writer) functions() {
	a := w.a
	multi := len(w.p.State.Devices) > 1
	w.f("<section id=\"functions\"><h2>Compiled functions</h2>\n")
	if len(a.Functions) == 0 {
		w.s("<p>The trace calls no compiled function.</p>\n</section>\n")
		return
	}
	if a.OtherFunctionsCount > 0 {
		w.f("<p class=\"note\">%s functions are detailed here, those with the most problems, then the most calls; the %s others are summed in the last row.</p>\n",
			num(len(a.Functions)), num(a.OtherFunctionsCount))
	}
	w.s("<table class=\"fns\"><thead><tr><th>function</th><th>calls</th><th>warmups</th><th>recordings</th><th>replays</th><th>eager</th><th>re-records</th><th>checkpoints</th><th>errors</th><th>why</th><th title=\"one FunctionID per input shapes\">shapes seen</th><th>graphs</th></tr></thead><tbody>\n")
	for i, f := range a.Functions {
		cls := ""
		if f.Replaced+f.Eager+f.Errors+f.PendingBackward > 0 {
			cls = " class=\"bad\""
		}
		w.f("<tr id=\"fn-%d\"%s><td><code>%s</code>", i, cls, esc(f.Fn))
		if f.Source != "" {
			w.f("<div class=\"src\">%s</div>", esc(f.Source))
		}
		w.f("<div class=\"dim\">first at %s</div><div><a class=\"filter\" href=\"#log\" data-fn=\"%s\">its decisions</a></div></td>", w.lineLink(f.FirstLine), esc(f.Fn))
		w.counts(&f)
		w.s("<td>")
		w.s(w.reasons("recorded:", "", f.Recorded))
		w.s(w.reasons("re-recorded:", "bad", f.RerecordReasons))
		w.s(w.reasons("ran without a graph:", "bad", f.Skips))
		w.s(w.reasons("PyTorch warned:", "warn", f.Warnings))
		if f.Overwritten > 0 {
			w.f("<div class=\"bad\">%s overwritten error(s)</div>", num(f.Overwritten))
		}
		w.s("</td><td>")
		for j, id := range f.IDs {
			if j == 20 {
				w.f("<div>and %d more</div>", len(f.IDs)-j)
				break
			}
			dev := ""
			if multi {
				dev = fmt.Sprintf(" on device %d", id.Device)
			}
			w.f("<div>%d%s: %s</div>", id.ID, dev, esc(shapes(id.Shapes)))
		}
		w.s("</td><td>")
		for j, n := range f.Nodes {
			if j == 50 {
				w.f(" and %d more", len(f.Nodes)-j)
				break
			}
			if j > 0 {
				w.s(", ")
			}
			w.s(w.nodeLink(n.Device, n.ID))
			if multi {
				w.f(" (device %d)", n.Device)
			}
		}
		w.s("</td></tr>\n")
	}
	if a.OtherFunctionsCount > 0 {
		o := a.OtherFunctions
		w.f("<tr><td>%s</td>", esc(o.Fn))
		w.counts(&o)
		w.s("<td></td><td></td><td></td></tr>\n")
	}
	w.s("</tbody></table>\n</section>\n")
}

// counts are a function's cells of counts.
func (w *writer) counts(f *report.Function) {
	for _, n := range []int{f.Calls, f.Warmups, f.Recordings, f.Replays, f.Eager, f.Rerecords, f.Checkpoints, f.Errors} {
		cls := "n"
		if n == 0 {
			cls = "n zero"
		}
		w.f("<td class=\"%s\">%s</td>", cls, num(n))
	}
}

// trees draws each device's tree and lists its nodes.
func (w *writer) trees(ctx context.Context) error {
	st := w.p.State
	w.s("<section id=\"trees\"><h2>CUDAGraph trees</h2>\n")
	for _, d := range st.Devices {
		w.f("<h3>Device %d: %s — %s nodes, %d roots, path %s</h3>\n", d.Index, esc(d.Name), num(len(d.Nodes)), len(d.Roots), d.PathState)
		if len(d.Nodes) == 0 {
			w.s("<p>No graph was recorded on this device.</p>\n")
			continue
		}
		if len(d.Nodes) > w.opts.MaxNodes {
			w.f("<p class=\"note\">The tree has %s nodes, more than the %s a page draws; draw a subtree with <code>cgtviz export TRACE --node ID --device %d -o sub.svg</code>.</p>\n",
				num(len(d.Nodes)), num(w.opts.MaxNodes), d.Index)
			continue
		}
		dot, err := render.TreeDOT(st, render.TreeOptions{OneDevice: true, Device: d.Index, MaxNodes: w.opts.MaxNodes, Title: w.p.Report.Trace,
			NodeLinks: "#n-", StepLine: w.p.Analysis.LastLine})
		if err != nil {
			return fmt.Errorf("render: html: device %d: %w", d.Index, err)
		}
		svg, err := w.opts.SVG(ctx, dot)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			w.warnings = append(w.warnings, fmt.Errorf("device %d's tree not drawn: %w", d.Index, err))
			w.f("<p class=\"note\">The tree is not drawn: %s</p>\n", esc(err.Error()))
		} else {
			w.f("<div class=\"tree\" id=\"tree-d%d\">%s</div>\n", d.Index, inlineSVG(svg, fmt.Sprintf("t%d-", d.Index)))
		}
		w.nodeTable(&d)
	}
	w.s("</section>\n")
	return nil
}

func (w *writer) nodeTable(d *engine.DeviceState) {
	w.s("<table class=\"nodes\"><thead><tr><th>node</th><th>function</th><th>parent</th><th>recorded at</th><th>why</th><th>replays</th><th>outputs</th><th></th></tr></thead><tbody>\n")
	for _, n := range d.Nodes {
		parent := "root"
		if n.Parent >= 0 {
			parent = w.nodeLink(d.Index, n.Parent)
		}
		cause := n.Cause.String()
		if note := n.Origin.NoteAt(n.Fn, engine.EvRecord, n.Cause); note != "" {
			cause += " (" + note + ")" // as the --log line says it
		}
		why := []string{esc(cause)}
		for _, f := range n.Failures {
			why = append(why, esc(f.Describe()))
		}
		live := 0
		for _, o := range n.Outputs {
			if o.Live {
				live++
			}
		}
		cls := ""
		if n.Current {
			cls = " class=\"current\""
		} else if n.OnPath {
			cls = " class=\"onpath\""
		}
		w.f("<tr id=\"%s\"%s><td>#%d</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%d live, %d dead</td><td><a class=\"filter\" href=\"#log\" data-node=\"%d\" data-dev=\"%d\">decisions</a></td></tr>\n",
			nodeID(d.Index, n.ID), cls, n.ID, w.fnLink(n.Fn), parent, w.lineLink(n.RecordedAtLine), strings.Join(why, "<br>"), num(n.Replays),
			live, len(n.Outputs)-live, n.ID, d.Index)
	}
	w.s("</tbody></table>\n")
}

var (
	svgProlog = regexp.MustCompile(`(?s)^.*?(<svg\b)`)
	svgXMLNS  = regexp.MustCompile(`\s+xmlns(:xlink)?="[^"]*"`)
	svgNote   = regexp.MustCompile(`(?s)<!--.*?-->\n?`)
)

// inlineSVG makes Graphviz's SVG document an element of the page: no XML
// prolog or DOCTYPE (whose DTD address a page must not name), no namespace
// declarations (HTML puts <svg> in SVG's namespace itself), comments out,
// SVG 2's href for xlink:href, and Graphviz's ids ("node1", "graph0")
// prefixed, so that the trees of two devices do not share them.
func inlineSVG(svg []byte, idPrefix string) string {
	s := svgProlog.ReplaceAllString(string(svg), "$1")
	s = strings.ReplaceAll(s, ` id="`, ` id="`+idPrefix)
	s = svgNote.ReplaceAllString(s, "")
	s = svgXMLNS.ReplaceAllString(s, "")
	s = strings.ReplaceAll(s, "xlink:href=", "href=")
	s = strings.ReplaceAll(s, "xlink:title=", "data-title=")
	return strings.TrimSpace(s)
}

func (w *writer) foot() {
	w.f("<footer>Written by cgtviz %s. This page is one file: it loads nothing from the network.</footer>\n", esc(w.p.Version))
	w.f("<script>%s</script>\n</body>\n</html>\n", script)
}
