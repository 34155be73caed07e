package ui

import (
	"fmt"
	"strings"

	"charm.land/lipgloss/v2"

	"github.com/cgtviz/cgtviz/engine"
)

// blockGlyphs are the cells of each engine.BlockState. They differ without
// color: a person reading a NO_COLOR screen or a golden file tells them
// apart by shape.
var blockGlyphs = [...]string{
	engine.BlockFree:          "·",
	engine.BlockAllocated:     "█",
	engine.BlockLiveInvisible: "▒",
	engine.BlockStale:         "×",
	engine.BlockUnowned:       "!",
}

// changedGlyph marks, under a segment's bar, the blocks the last checkpoint
// changed, and follows their names in the block list.
const changedGlyph = "^"

// Run styles of a pool line: a BlockState, or one of these.
const (
	runPlain   = -1
	runChanged = 16 + iota
	runDim
	runBold
	runWarn
)

// run is a piece of a pool line with one style. Lines are kept as runs and
// styled only when visible, so that a pool of 50,000 blocks costs one pass
// to lay out and a screenful of lipgloss calls to draw.
type run struct {
	style int
	text  string
}

type poolLine []run

// poolPane draws the current device's pools: segments as rows of blocks to
// scale, each block in the glyph of its state.
type poolPane struct {
	scroll
	key   poolKey
	lines []poolLine
}

type poolKey struct {
	st    *engine.State
	dev   int
	width int
}

// layout recomputes the lines when the state, device or width changed.
func (p *poolPane) layout(st *engine.State, dev, w int) {
	k := poolKey{st, dev, w}
	if k == p.key && p.lines != nil {
		return
	}
	p.key = k
	p.lines = p.lines[:0]
	p.legend(w)
	if st == nil || dev < 0 || dev >= len(st.Devices) {
		return
	}
	ds := &st.Devices[dev]
	p.pool("graph pool", &ds.Pool, w)
	p.pool("default pool", &ds.Default, w)
}

func (p *poolPane) add(runs ...run) { p.lines = append(p.lines, poolLine(runs)) }

// legend lays out the glyph legend, wrapped to the width.
func (p *poolPane) legend(w int) {
	items := []run{
		{int(engine.BlockAllocated), blockGlyphs[engine.BlockAllocated] + " allocated"},
		{int(engine.BlockLiveInvisible), blockGlyphs[engine.BlockLiveInvisible] + " live, allocator thinks free"},
		{int(engine.BlockStale), blockGlyphs[engine.BlockStale] + " stale"},
		{int(engine.BlockFree), blockGlyphs[engine.BlockFree] + " free"},
		{int(engine.BlockUnowned), blockGlyphs[engine.BlockUnowned] + " unowned"},
		{runChanged, changedGlyph + " changed by last checkpoint"},
	}
	var line poolLine
	used := 0
	for _, it := range items {
		n := len([]rune(it.text)) + 2
		if used > 0 && used+n > w {
			p.lines = append(p.lines, line)
			line, used = nil, 0
		}
		line = append(line, it, run{runPlain, "  "})
		used += n
	}
	if len(line) > 0 {
		p.lines = append(p.lines, line)
	}
}

// pool lays out one pool: a summary, the explanation the seed thread asks
// for when replay outputs are invisible to the allocator, then segments.
func (p *poolPane) pool(name string, pv *engine.PoolView, w int) {
	var counts [len(blockGlyphs)]int
	for _, sg := range pv.Segments {
		for _, b := range sg.Blocks {
			if int(b.State) < len(counts) {
				counts[b.State]++
			}
		}
	}
	p.add(run{runPlain, ""})
	p.add(run{runBold, fmt.Sprintf("%s (%d,%d)", name, pv.ID[0], pv.ID[1])},
		run{runPlain, fmt.Sprintf(": reserved %s, allocated %s, peak %s", human(pv.ReservedBytes), human(pv.AllocatedBytes), human(pv.PeakReserved))})
	if len(pv.Segments) == 0 {
		p.add(run{runDim, "  no segments"})
		return
	}
	p.add(run{runPlain, fmt.Sprintf("  %d segments · ", len(pv.Segments))},
		run{int(engine.BlockAllocated), fmt.Sprintf("%d allocated", counts[engine.BlockAllocated])}, run{runPlain, " · "},
		run{int(engine.BlockLiveInvisible), fmt.Sprintf("%d live-invisible", counts[engine.BlockLiveInvisible])}, run{runPlain, " · "},
		run{int(engine.BlockStale), fmt.Sprintf("%d stale", counts[engine.BlockStale])}, run{runPlain, " · "},
		run{int(engine.BlockUnowned), fmt.Sprintf("%d unowned", counts[engine.BlockUnowned])})
	if counts[engine.BlockLiveInvisible] > 0 {
		for _, l := range wrap(fmt.Sprintf("%s %d block(s) hold live replay outputs that the allocator believes free: a recording now would overwrite them, so the tree manager checkpoints the pool first (the allocator learns what is live).",
			blockGlyphs[engine.BlockLiveInvisible], counts[engine.BlockLiveInvisible]), w) {
			p.add(run{runWarn, l})
		}
	}
	for i := range pv.Segments {
		p.segment(&pv.Segments[i], w)
	}
}

// segment lays out one segment: a header, its blocks drawn to scale
// (each at least one cell) wrapped at the width, the checkpoint markers,
// and the names of the blocks that hold something.
func (p *poolPane) segment(sg *engine.SegmentView, w int) {
	kind := "large"
	if sg.Small {
		kind = "small"
	}
	p.add(run{runDim, fmt.Sprintf("seg %s %s %s · %d blocks", hex(sg.Addr), human(sg.Size), kind, len(sg.Blocks))})
	cells := max(w-1, 8)
	var bar, marks poolLine
	barW, anyChanged := 0, false
	flush := func() {
		if barW == 0 {
			return
		}
		p.add(append(poolLine{{runPlain, " "}}, bar...)...)
		if anyChanged {
			p.add(append(poolLine{{runPlain, " "}}, marks...)...)
		}
		bar, marks, barW, anyChanged = nil, nil, 0, false
	}
	// Every block gets one cell and the cells left over are shared in
	// proportion to size, so that a segment fits one row whenever it has no
	// more blocks than cells; beyond that it wraps, one cell a block.
	size := max(sg.Size, 1)
	extra := int64(max(cells-len(sg.Blocks), 0))
	for i := range sg.Blocks {
		b := &sg.Blocks[i]
		n := 1 + int(b.Size*extra/size)
		changed := b.InCheckpoint || b.CheckpointNew
		for n > 0 {
			take := min(n, cells-barW)
			bar = appendRun(bar, int(b.State), strings.Repeat(glyph(b.State), take))
			if changed {
				marks = appendRun(marks, runChanged, strings.Repeat(changedGlyph, take))
				anyChanged = true
			} else {
				marks = appendRun(marks, runPlain, strings.Repeat(" ", take))
			}
			barW += take
			n -= take
			if barW == cells {
				flush()
			}
		}
	}
	flush()
	p.names(sg, w)
}

// names lists the blocks that hold something, at most three lines a segment.
func (p *poolPane) names(sg *engine.SegmentView, w int) {
	const maxLines = 3
	var line poolLine
	used, lines, shown, total := 1, 0, 0, 0
	line = poolLine{{runPlain, " "}}
	for i := range sg.Blocks {
		b := &sg.Blocks[i]
		if b.State == engine.BlockFree && !b.InCheckpoint && !b.CheckpointNew {
			continue
		}
		total++
		if lines >= maxLines {
			continue
		}
		name := strings.Join(b.Tensors, ",")
		if name == "" {
			name = "?"
		}
		item := fmt.Sprintf("%s %s %s", glyph(b.State), name, human(b.Size))
		if b.InCheckpoint || b.CheckpointNew {
			item += changedGlyph
		}
		n := len([]rune(item)) + 2
		if used+n > w && used > 1 {
			p.add(line...)
			lines++
			line, used = poolLine{{runPlain, " "}}, 1
			if lines >= maxLines {
				continue
			}
		}
		line = append(line, run{int(b.State), item}, run{runPlain, "  "})
		used += n
		shown++
	}
	if lines < maxLines && used > 1 {
		p.add(line...)
	}
	if total > shown {
		p.add(run{runDim, fmt.Sprintf("  … %d more blocks", total-shown)})
	}
}

func glyph(s engine.BlockState) string {
	if int(s) < len(blockGlyphs) {
		return blockGlyphs[s]
	}
	return "?"
}

// appendRun extends the last run when it has the same style.
func appendRun(l poolLine, style int, text string) poolLine {
	if n := len(l); n > 0 && l[n-1].style == style {
		l[n-1].text += text
		return l
	}
	return append(l, run{style, text})
}

// view styles the visible lines.
func (p *poolPane) view(s Styles, h int) []string {
	p.clamp(len(p.lines), h)
	p.cursor = p.offset
	out := make([]string, 0, h)
	for _, l := range p.lines[min(p.offset, len(p.lines)):min(p.offset+h, len(p.lines))] {
		var b strings.Builder
		for _, r := range l {
			b.WriteString(styled(runStyle(s, r.style), r.text))
		}
		out = append(out, b.String())
	}
	return out
}

func runStyle(s Styles, style int) lipgloss.Style {
	switch {
	case style >= 0 && style < len(s.Block):
		return s.Block[style]
	case style == runChanged:
		return s.Changed
	case style == runDim:
		return s.Dim
	case style == runBold:
		return s.Bold
	case style == runWarn:
		return s.Warn
	}
	return s.Normal
}

// wrap breaks text into lines of at most w cells at spaces.
func wrap(text string, w int) []string {
	if w < 8 {
		w = 8
	}
	var out []string
	var line []rune
	for _, word := range strings.Fields(text) {
		rw := []rune(word)
		if len(line) > 0 && len(line)+1+len(rw) > w {
			out = append(out, string(line))
			line = nil
		}
		if len(line) > 0 {
			line = append(line, ' ')
		}
		line = append(line, rw...)
	}
	if len(line) > 0 {
		out = append(out, string(line))
	}
	return out
}
