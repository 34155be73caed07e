package ui

import (
	"strings"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

// fit truncates or pads s (which may hold ANSI styles) to exactly w cells.
func fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	n := ansi.StringWidth(s)
	if n > w {
		return ansi.Truncate(s, w, "…")
	}
	return s + strings.Repeat(" ", w-n)
}

// box draws a titled, bordered box of exactly w×h cells around body (which
// is cut or padded to fit). The focused box has a heavier border so that
// focus shows without color too.
func box(st Styles, title string, body []string, w, h int, focused bool) []string {
	if w < 4 || h < 2 {
		return blank(w, h)
	}
	bs, ts := st.Border, st.Title
	h1, v, tl, tr, bl, br := "─", "│", "╭", "╮", "╰", "╯"
	if focused {
		bs, ts = st.BorderFocus, st.TitleFocus
		h1, v, tl, tr, bl, br = "━", "┃", "┏", "┓", "┗", "┛"
	}
	inner := w - 2
	t := ansi.Truncate(" "+title+" ", max(inner-1, 0), "…")
	tw := ansi.StringWidth(t)
	out := make([]string, 0, h)
	out = append(out, bs.Render(tl+h1)+ts.Render(t)+bs.Render(strings.Repeat(h1, max(inner-1-tw, 0))+tr))
	left, right := bs.Render(v), bs.Render(v)
	for i := 0; i < h-2; i++ {
		line := ""
		if i < len(body) {
			line = body[i]
		}
		out = append(out, left+fit(line, inner)+right)
	}
	out = append(out, bs.Render(bl+strings.Repeat(h1, inner)+br))
	return out
}

// blank returns h lines of w spaces.
func blank(w, h int) []string {
	out := make([]string, max(h, 0))
	for i := range out {
		out[i] = strings.Repeat(" ", max(w, 0))
	}
	return out
}

// overlay draws top over base with its top-left corner at (x, y).
func overlayLines(base, top []string, x, y int) []string {
	out := append([]string(nil), base...)
	for i, line := range top {
		r := y + i
		if r < 0 || r >= len(out) {
			continue
		}
		b := out[r]
		bw := ansi.StringWidth(b)
		tw := ansi.StringWidth(line)
		out[r] = ansi.Cut(b, 0, x) + line + ansi.Cut(b, min(x+tw, bw), bw)
	}
	return out
}

// styled renders s with style, skipping the work for an empty string.
func styled(s lipgloss.Style, text string) string {
	if text == "" {
		return ""
	}
	return s.Render(text)
}

// scroll is a cursor and the first visible line of a list of n lines shown
// h at a time.
type scroll struct {
	cursor, offset int
}

// clamp keeps the cursor in [0, n) and visible in a window of h lines.
func (s *scroll) clamp(n, h int) {
	if n <= 0 {
		s.cursor, s.offset = 0, 0
		return
	}
	s.cursor = min(max(s.cursor, 0), n-1)
	if h <= 0 {
		return
	}
	if s.cursor < s.offset {
		s.offset = s.cursor
	}
	if s.cursor >= s.offset+h {
		s.offset = s.cursor - h + 1
	}
	s.offset = min(max(s.offset, 0), max(n-h, 0))
}

// window returns the visible part of lines.
func window(lines []string, offset, h int) []string {
	if offset >= len(lines) {
		return nil
	}
	return lines[offset:min(offset+h, len(lines))]
}

// stripped removes ANSI styles, for lines restyled as a whole.
func stripped(s string) string { return ansi.Strip(s) }

// rs adapts a style to a func(string) string.
func rs(st lipgloss.Style) func(string) string {
	return func(t string) string { return st.Render(t) }
}
