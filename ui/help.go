package ui

import (
	"slices"
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	"github.com/charmbracelet/x/ansi"
)

// helpBar is the key help under the status lines: the short line, or with
// ? every key of the KeyMap (the root's and the panes' sections) in bands
// of columns, so that no key is cut off.
type helpBar struct {
	help.Model
	// memo keeps the last lines: layout asks for their count several
	// times a frame, and the keys never change, so one rendering per
	// size does.
	memo struct {
		key   helpKey
		lines []string
	}
}

// helpKey is what the help's lines depend on.
type helpKey struct {
	w, h, helpW int
	all         bool
}

// lines is the help at width w on a screen h high; a screen too short for
// all of it shows what fits above four lines of panes.
func (hb *helpBar) lines(km *KeyMap, w, h int) []string {
	key := helpKey{w, h, hb.Width(), hb.ShowAll}
	if hb.memo.lines == nil || hb.memo.key != key {
		hb.memo.key, hb.memo.lines = key, hb.render(km, w, h)
	}
	return hb.memo.lines
}

// render draws the help lines (see lines).
func (hb *helpBar) render(km *KeyMap, w, height int) []string {
	if !hb.ShowAll {
		// Drop keys from the middle, never "? help" and "q quit": the
		// way to the rest must stay on screen at any width.
		keys := km.ShortHelp()
		h := hb.Model
		h.SetWidth(0)
		for _, drop := range []key.Binding{km.Reverse, km.Breakpoint, km.Goto, km.Prev, km.Continue, km.Command, km.Next} {
			if ansi.StringWidth(h.ShortHelpView(keys)) <= w {
				break
			}
			keys = slices.DeleteFunc(keys, func(b key.Binding) bool { return b.Help() == drop.Help() })
		}
		return []string{fit(h.ShortHelpView(keys), w)}
	}
	var out []string
	for _, band := range hb.bands(km, w) {
		for _, l := range band {
			out = append(out, fit(l, w))
		}
	}
	if room := max(height, 8) - 4 - 3; len(out) > room {
		out = out[:max(room, 1)]
	}
	return out
}

// fullLines is the whole key help at width w, in bands of columns,
// without styles: what ? shows, in a popup when the screen is too short
// for it under the panes.
func (hb *helpBar) fullLines(km *KeyMap, w int) []string {
	var out []string
	for _, band := range hb.bands(km, w) {
		for _, l := range band {
			out = append(out, strings.TrimRight(ansi.Strip(l), " "))
		}
		out = append(out, "")
	}
	return out
}

// bands lays the full key help out in bands of as many columns (key
// groups) as fit in width w, at least one a band: each band's lines, as
// the help bubble draws them.
func (hb *helpBar) bands(km *KeyMap, w int) [][]string {
	h := hb.Model
	h.SetWidth(0) // measure: no truncation
	var bands [][]string
	for groups := km.FullHelp(); len(groups) > 0; {
		n := len(groups)
		for n > 1 && widest(h.FullHelpView(groups[:n])) > w {
			n--
		}
		bands = append(bands, strings.Split(h.FullHelpView(groups[:n]), "\n"))
		groups = groups[n:]
	}
	return bands
}
