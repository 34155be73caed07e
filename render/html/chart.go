package html

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/engine/alloc"
	"github.com/cgtviz/cgtviz/engine/report"
)

// The chart's geometry, in SVG user units (the picture scales to the
// page's width).
const (
	chartW, chartH     = 960.0, 260.0
	padL, padR         = 78.0, 12.0
	padT, padB         = 22.0, 34.0
	maxMarkersPerChart = 1000
)

// series is one line of the chart.
type series struct {
	name, color, dash string
	area              bool
	val               func(engine.MemoryView) int64
}

var chartSeries = []series{
	{"graph pool reserved", "#1f6feb", "", false, func(m engine.MemoryView) int64 { return m.PoolReservedBytes }},
	{"graph pool allocated", "#1a7f37", "", false, func(m engine.MemoryView) int64 { return m.PoolAllocatedBytes }},
	{"live but invisible (replay outputs the allocator thinks free)", "#d97706", "", true, func(m engine.MemoryView) int64 { return m.InvisibleBytes }},
	{"all pools reserved", "#6e7781", "5 4", false, func(m engine.MemoryView) int64 { return m.ReservedBytes }},
}

func (w *writer) pool() {
	a := w.a
	w.s("<section id=\"pool\"><h2>The pool over the trace</h2>\n")
	if len(a.Memory) == 0 {
		w.s("<p>No memory was sampled.</p>\n</section>\n")
		return
	}
	every := "after every record"
	if a.SampleEvery > 1 {
		every = "every " + num(a.SampleEvery) + " records and after the last"
	}
	w.f("<p class=\"note\">%s samples, %s; markers: ▼ a checkpoint, ● an error, each linked to its row of the log.</p>\n",
		num(len(a.Memory)), every)
	w.s("<ul class=\"legend\">")
	for _, s := range chartSeries {
		w.f("<li><span class=\"swatch\" style=\"background:%s\"></span>%s</li>", s.color, esc(s.name))
	}
	w.s("</ul>\n")
	marked := 0
	for d := range w.p.State.Devices {
		marked += w.chart(d)
	}
	if all := a.CheckpointRecords + a.ErrorRecords; all > marked {
		w.f("<p class=\"note\">%s of %s checkpoints and errors are marked: those whose rows the log keeps.</p>\n", num(marked), num(all))
	}
	w.s("</section>\n")
}

func f1(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }

// chart draws device d's memory as an SVG of its own, and returns how
// many checkpoints and errors it marked.
func (w *writer) chart(d int) int {
	a := w.a
	ss := a.Memory
	last := max(ss[len(ss)-1].Index, 1)
	var top int64 = 1
	for _, s := range ss {
		if d >= len(s.Devices) {
			continue
		}
		for _, sr := range chartSeries {
			top = max(top, sr.val(s.Devices[d]))
		}
	}
	top = niceTop(top)
	x := func(i int) float64 { return padL + (chartW-padL-padR)*float64(i)/float64(last) }
	y := func(v int64) float64 { return chartH - padB - (chartH-padT-padB)*float64(v)/float64(top) }
	dev := w.p.State.Devices[d]
	w.f("<h3>Device %d: %s</h3>\n", d, esc(dev.Name))
	w.f("<svg class=\"chart\" id=\"chart-d%d\" viewBox=\"0 0 %s %s\" role=\"img\" aria-label=\"memory of device %d over the trace\">\n", d, f1(chartW), f1(chartH), d)
	// Grid and axes.
	for i := 0; i <= 4; i++ {
		v := top * int64(i) / 4
		yy := y(v)
		w.f("<line class=\"grid\" x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\"/><text class=\"ax\" x=\"%s\" y=\"%s\" text-anchor=\"end\">%s</text>\n",
			f1(padL), f1(yy), f1(chartW-padR), f1(yy), f1(padL-6), f1(yy+4), esc(axisSize(v)))
	}
	for i := 0; i <= 4; i++ {
		s := ss[(len(ss)-1)*i/4]
		anchor := "middle"
		switch i {
		case 0:
			anchor = "start"
		case 4:
			anchor = "end"
		}
		w.f("<text class=\"ax\" x=\"%s\" y=\"%s\" text-anchor=\"%s\">line %d</text>\n", f1(x(s.Index)), f1(chartH-padB+18), anchor, s.Line)
	}
	for _, sr := range chartSeries {
		var pts strings.Builder
		for _, s := range ss {
			if d >= len(s.Devices) {
				continue
			}
			fmt.Fprintf(&pts, "%s,%s ", f1(x(s.Index)), f1(y(sr.val(s.Devices[d]))))
		}
		p := strings.TrimSpace(pts.String())
		if sr.area {
			w.f("<polygon class=\"area\" fill=\"%s\" points=\"%s,%s %s %s,%s\"/>\n", sr.color, f1(x(ss[0].Index)), f1(y(0)), p, f1(x(ss[len(ss)-1].Index)), f1(y(0)))
		}
		dash := ""
		if sr.dash != "" {
			dash = fmt.Sprintf(" stroke-dasharray=\"%s\"", sr.dash)
		}
		w.f("<polyline class=\"series\" stroke=\"%s\"%s points=\"%s\"><title>%s</title></polyline>\n", sr.color, dash, p, esc(sr.name))
	}
	// Markers: the kept log rows of this device that checkpointed or raised.
	n := 0
	for _, r := range a.Rows {
		if r.Device != d || n >= maxMarkersPerChart {
			continue
		}
		ckpt := r.Checkpoint != nil && *r.Checkpoint
		if !ckpt && r.Error == nil {
			continue
		}
		xx := x(r.Index)
		if ckpt {
			n++
			w.f("<a href=\"#l-%d\"><path class=\"mk-ckpt\" d=\"M%s %sl-5 -8h10z\"><title>line %d: checkpoint</title></path></a>\n", r.Line, f1(xx), f1(padT+2), r.Line)
		}
		if r.Error != nil {
			n++
			w.f("<a href=\"#l-%d\"><circle class=\"mk-err\" cx=\"%s\" cy=\"%s\" r=\"4\"><title>line %d: %s</title></circle></a>\n", r.Line, f1(xx), f1(chartH-padB-4), r.Line, esc(firstLine(*r.Error)))
		}
	}
	w.s("</svg>\n")
	return n
}

// axisSize writes a tick's bytes in the largest unit that divides them
// into a whole number, else in FormatSize's.
func axisSize(v int64) string {
	for _, u := range []struct {
		n    int64
		name string
	}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if v >= u.n && v%u.n == 0 {
			return strconv.FormatInt(v/u.n, 10) + " " + u.name
		}
	}
	if v < 1024 {
		return strconv.FormatInt(v, 10) + " B"
	}
	return alloc.FormatSize(v)
}

// niceTop rounds v up to 1, 2 or 5 times a power of two's worth of bytes
// (a KiB, MiB or GiB multiple), so the axis reads in round figures.
func niceTop(v int64) int64 {
	unit := int64(1)
	for unit*1024 <= v {
		unit *= 1024
	}
	for _, m := range []int64{1, 2, 4, 5, 8, 10, 16, 20, 32, 40, 50, 64, 100, 128, 200, 256, 500, 512, 1000, 1024} {
		if unit*m >= v {
			return unit * m
		}
	}
	return v
}

// log writes the decision log and its filters.
func (w *writer) log() {
	a := w.a
	w.s("<section id=\"log\"><h2>Decision log</h2>\n")
	if len(a.Rows) < a.RowsTotal {
		w.f("<p class=\"note\">The log shows %s of %s decisions: ", num(len(a.Rows)), num(a.RowsTotal))
		if a.NotableKept < a.NotableTotal {
			w.f("the first %s of %s notable ones (recordings, eager runs, checkpoints, warnings, errors) and no plain warmups or replays.</p>\n", num(a.NotableKept), num(a.NotableTotal))
		} else {
			w.f("every notable one (recordings, eager runs, checkpoints, warnings, errors: %s), then the first %s plain warmups and replays. <code>cgtviz run --log</code> prints them all.</p>\n",
				num(a.NotableTotal), num(len(a.Rows)-a.NotableKept))
		}
	}
	// Filters: the functions, actions and devices the rows have.
	var fns, acts []string
	seenFn, seenAct := map[string]bool{}, map[string]bool{}
	devs := map[int]bool{}
	for _, r := range a.Rows {
		if r.Fn != nil && !seenFn[*r.Fn] {
			seenFn[*r.Fn] = true
			fns = append(fns, *r.Fn)
		}
		if act := rowAction(&r); !seenAct[act] {
			seenAct[act] = true
			acts = append(acts, act)
		}
		devs[r.Device] = true
	}
	w.s("<form class=\"filters\" id=\"filters\"><label>function <select id=\"f-fn\"><option value=\"\">all</option>")
	for _, f := range fns {
		w.f("<option>%s</option>", esc(f))
	}
	w.s("</select></label> <label>action <select id=\"f-act\"><option value=\"\">all</option>")
	for _, x := range acts {
		w.f("<option>%s</option>", esc(x))
	}
	w.s("</select></label> <label>device <select id=\"f-dev\"><option value=\"\">all</option>")
	for d := range w.p.State.Devices {
		if devs[d] {
			w.f("<option>%d</option>", d)
		}
	}
	w.s("</select></label> <label><input type=\"checkbox\" id=\"f-notable\"> notable only</label> <span id=\"f-node\"></span> <output id=\"f-count\"></output></form>\n")
	w.s("<table class=\"log\" id=\"log-table\"><thead><tr><th>line</th><th>dev</th><th>record</th><th>action</th><th>node</th><th>parent</th><th>why</th></tr></thead><tbody>\n")
	for i := range a.Rows {
		r := &a.Rows[i]
		fn := ""
		if r.Fn != nil {
			fn = *r.Fn
		}
		node, nodeAttr := "", ""
		if r.Node != nil {
			node = w.nodeLink(r.Device, *r.Node)
			nodeAttr = fmt.Sprintf(" data-node=\"%d\"", *r.Node)
		}
		parent := ""
		if r.Parent != nil {
			parent = w.nodeLink(r.Device, *r.Parent)
		} else if r.Node != nil {
			parent = "root"
		}
		cls := ""
		switch {
		case r.Error != nil:
			cls = " class=\"err\""
		case r.Checkpoint != nil && *r.Checkpoint:
			cls = " class=\"ckpt\""
		case r.Notable:
			cls = " class=\"notable\""
		}
		what := esc(r.Op)
		if fn != "" {
			what = "call " + w.fnLink(fn)
		}
		why := esc(r.Note)
		if r.Error != nil && r.Note == "" {
			why = esc(firstLine(*r.Error))
		}
		notable := ""
		if r.Notable {
			notable = " data-notable=\"1\""
		}
		w.f("<tr id=\"l-%d\"%s data-fn=\"%s\" data-act=\"%s\" data-dev=\"%d\"%s%s><td>%d</td><td>%d</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n",
			r.Line, cls, esc(fn), esc(rowAction(r)), r.Device, nodeAttr, notable, r.Line, r.Device, what, esc(rowAction(r)), node, parent, why)
	}
	w.s("</tbody></table>\n</section>\n")
}

// rowAction is what the log's action filter calls a row: the call's
// action, "error" for a record that raised without one, else its op.
func rowAction(r *report.Row) string {
	switch {
	case r.Action != nil:
		return *r.Action
	case r.Error != nil:
		return "error"
	}
	return r.Op
}
