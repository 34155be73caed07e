package ui

import (
	"fmt"
	"strings"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/sessions"
)

// The memory timeline (M, :memory) draws, at the top of the pool pane,
// the reserved, allocated and live-but-invisible bytes of one pool of the
// shown device over the whole trace, with the current position marked.
//
// It is drawn here on Lip Gloss rather than with a chart library: the one
// Bubble Tea chart package in the module proxy (ntcharts, v0.4.0) is a v1
// component (it requires bubbletea v1.2 and lipgloss v1.0, a second copy of
// the stack beside our v2),
// and the chart needs no more than stacked bars of glyphs that read
// without color.
//
// Its samples are states at fixed positions (the width's share of the
// trace), read by moving the session there and back in the move's command,
// so the UI never runs a record the user has not run: positions not run
// yet stay blank. On devices that cannot be cloned, where going back
// re-runs the trace, only the positions visited are sampled. Executed
// records never change what they did, so a sample, once read, is kept.

// memSample is one pool's bytes at one position.
type memSample struct {
	reserved, allocated, invisible int64
}

// memKey names a sample: position, device, pool (0 graph, 1 default).
type memKey struct{ pos, dev, pool int }

// memChart is the chart's state.
type memChart struct {
	on      bool
	pool    int // 0 the graph pool, 1 the default pool
	samples map[memKey]memSample
	// titleRows is how many rows the title took when last drawn.
	titleRows int
}

// poolSample reads the samples of every device and pool of a state.
func poolSamples(st *engine.State, pos int, into map[memKey]memSample) {
	if st == nil {
		return
	}
	// Live but invisible: the bytes of live storages the allocator does
	// not own (replay outputs), each storage once; a block believed free
	// may hold a few of them in a much larger span.
	invisible := make([]int64, len(st.Devices))
	seen := map[int]bool{}
	for i := range st.Tensors {
		t := &st.Tensors[i]
		if t.State != engine.TensorLive || t.Pool != "graph" || t.Owner != "none (replay output)" || seen[t.Storage] {
			continue
		}
		seen[t.Storage] = true
		if t.Device >= 0 && t.Device < len(invisible) {
			invisible[t.Device] += t.Bytes
		}
	}
	for d := range st.Devices {
		for i, pv := range []*engine.PoolView{&st.Devices[d].Pool, &st.Devices[d].Default} {
			s := memSample{reserved: pv.ReservedBytes, allocated: pv.AllocatedBytes}
			if i == 0 {
				s.invisible = invisible[d]
			}
			into[memKey{pos, d, i}] = s
		}
	}
}

// memLabelW is the width of the chart's label column: "max 124.5 KiB"
// and the like whole, and a space.
const memLabelW = 15

// memChartCols is how many sample columns a pane of inner width w draws.
func memChartCols(w int) int { return max(w-memLabelW-1, 4) }

// memChartRows is how many rows of the chart a click on goes somewhere,
// after its title: the bars (three series of two rows), the marker and
// the axis.
const memChartRows = 8

// memColumnAt is the position of chart column col (0-based inside the
// columns) in a pane of inner width w over n records, -1 off the columns.
func memColumnAt(col, n, w int) int {
	k := memChartCols(w)
	if col < 0 || col >= k {
		return -1
	}
	return memPositions(n, k)[col]
}

// memPositions are the sample positions of k columns over n records.
func memPositions(n, k int) []int {
	out := make([]int, k)
	for i := range out {
		if k > 1 {
			out[i] = i * n / (k - 1)
		}
	}
	return out
}

// sampleMemory reads the samples missing at positions up to the executed
// records, moving the session there and back. have is only read: it is
// the UI's map, which only Update writes.
func sampleMemory(s *sessions.Session, positions []int, have map[memKey]memSample) (map[memKey]memSample, error) {
	got := map[memKey]memSample{}
	orig := s.Pos()
	moved := false
	for _, p := range positions {
		if p > s.Executed() {
			break
		}
		if _, ok := have[memKey{p, 0, 0}]; ok {
			continue
		}
		if _, ok := got[memKey{p, 0, 0}]; ok {
			continue
		}
		if p != s.Pos() {
			if !s.Cloneable() {
				// Without clones going back re-runs the trace from the
				// start: only the positions the user visits are drawn.
				continue
			}
			if err := s.Goto(p); err != nil {
				return got, fmt.Errorf("memory timeline: %w", err)
			}
			moved = true
		}
		poolSamples(s.State(), p, got)
	}
	if moved {
		if err := s.Goto(orig); err != nil {
			return got, fmt.Errorf("memory timeline: back to %d: %w", orig, err)
		}
	}
	return got, nil
}

// lines draws the chart for device dev in a pane of inner width w: a
// title, then reserved, allocated and live-but-invisible bytes as bars of
// eighth blocks two rows high, each on its own scale (a toy trace reserves
// a 2 MiB segment for a few KiB of tensors: one scale would flatten the
// two that matter), the marker of the position, and the values there.
func (c *memChart) lines(s Styles, n, pos, executed, dev, w int, lineOf func(pos int) int) []string {
	k := memChartCols(w)
	positions := memPositions(n, k)
	name := "graph pool"
	if c.pool == 1 {
		name = "default pool"
	}
	var out []string
	for _, l := range wrap(fmt.Sprintf("memory of the %s, dev %d · click: go to a line · p: other pool · M: hide", name, dev), w) {
		out = append(out, s.Bold.Render(l))
	}
	// The title's rows shift the chart's: a click reads them (chartTop).
	c.titleRows = len(out)
	cur := -1
	for i, p := range positions {
		if p <= pos {
			cur = i
		}
	}
	// The marked column shows the position itself, not the sample before.
	if _, ok := c.samples[memKey{pos, dev, c.pool}]; ok && cur >= 0 {
		positions = append([]int(nil), positions...)
		positions[cur] = pos
	}
	series := []struct {
		label string
		style int
		get   func(memSample) int64
	}{
		{"reserved", runDim, func(v memSample) int64 { return v.reserved }},
		{"allocated", int(engine.BlockAllocated), func(v memSample) int64 { return v.allocated }},
		{"invisible", int(engine.BlockLiveInvisible), func(v memSample) int64 { return v.invisible }},
	}
	const levels = "▁▂▃▄▅▆▇█"
	lv := []rune(levels)
	for _, sr := range series {
		var top int64
		for _, p := range positions {
			if v, ok := c.samples[memKey{p, dev, c.pool}]; ok {
				top = max(top, sr.get(v))
			}
		}
		st := runStyle(s, sr.style)
		for row := 1; row >= 0; row-- {
			label := sr.label
			if row == 0 {
				label = "max " + human(top)
			}
			var b strings.Builder
			b.WriteString(fmt.Sprintf("%-*.*s", memLabelW, memLabelW, label))
			for i, p := range positions {
				v, ok := c.samples[memKey{p, dev, c.pool}]
				g := " "
				if ok && top > 0 {
					// 16 steps over two rows: the lower row fills first.
					h := int((sr.get(v)*16 + top - 1) / top)
					if sr.get(v) > 0 {
						h = max(h, 1)
					}
					cell := h - row*8
					switch {
					case cell >= 8:
						g = "█"
					case cell > 0:
						g = string(lv[cell-1])
					case row == 0 && ok:
						g = "_"
					}
				}
				if i == cur && g == " " {
					g = "┊"
				}
				b.WriteString(st.Render(g))
			}
			out = append(out, b.String())
		}
	}
	marker := strings.Repeat(" ", memLabelW)
	if cur >= 0 {
		marker += strings.Repeat(" ", cur) + "▲ here"
	}
	out = append(out, fit(marker, w))
	out = append(out, s.Dim.Render(memAxis(positions, w, lineOf)))
	if v, ok := c.samples[memKey{pos, dev, c.pool}]; ok {
		for _, l := range wrap(fmt.Sprintf("here: reserved %s · allocated %s · live but believed free %s", human(v.reserved), human(v.allocated), human(v.invisible)), w) {
			out = append(out, s.Dim.Render(l))
		}
	}
	if executed < n {
		for _, l := range wrap("records not run yet are blank (c runs on)", w) {
			out = append(out, s.Dim.Render(l))
		}
	}
	return out
}

// memAxis is the chart's x-axis: "line" under the labels, then the trace
// line of the column's position at ticks as far apart as their numbers
// need (the first column, then every tenth or so, each label starting at
// its tick │).
func memAxis(positions []int, w int, lineOf func(int) int) string {
	row := []rune(fmt.Sprintf("%-*s", memLabelW, "trace line"))
	cols := make([]rune, len(positions))
	for i := range cols {
		cols[i] = ' '
	}
	for i := 0; i < len(positions); {
		l := "start"
		if p := positions[i]; p > 0 {
			l = fmt.Sprint(lineOf(p))
		}
		lab := []rune("│" + l)
		if i+len(lab) > len(cols) {
			break
		}
		copy(cols[i:], lab)
		i += max(len(lab)+2, 10)
	}
	return fit(string(append(row, cols...)), w)
}
