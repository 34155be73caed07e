package ui

import (
	"charm.land/bubbles/v2/help"
	"charm.land/lipgloss/v2"

	"github.com/cgtviz/cgtviz/engine"
)

// Styles is every style of the UI in one place. Built without color, it
// still tells every state apart: states also differ by glyph and text.
type Styles struct {
	Color bool

	Normal              lipgloss.Style
	Border, BorderFocus lipgloss.Style
	Title, TitleFocus   lipgloss.Style
	Selected            lipgloss.Style // the focused pane's cursor line
	Dim                 lipgloss.Style
	Bold                lipgloss.Style
	Err                 lipgloss.Style
	OK                  lipgloss.Style
	Warn                lipgloss.Style
	Status              lipgloss.Style
	Prompt              lipgloss.Style
	Match               lipgloss.Style // a search match

	// Tree.
	Current, OnPath lipgloss.Style
	Did             lipgloss.Style // what this step did to a node

	// Actions in the trace pane.
	Warmup, Record, Replay, Eager, Checkpoint lipgloss.Style

	// Pool blocks, by engine.BlockState, and the checkpoint marker.
	Block        [5]lipgloss.Style
	Changed      lipgloss.Style
	BreakpointOn lipgloss.Style

	Help help.Styles
}

// NewStyles returns the styles, with colors or (NO_COLOR) without.
func NewStyles(color bool) Styles {
	p := lipgloss.NewStyle()
	s := Styles{
		Color:       color,
		Normal:      p,
		Border:      p,
		BorderFocus: p.Bold(true),
		Title:       p,
		TitleFocus:  p.Bold(true),
		Selected:    p.Reverse(true),
		Dim:         p,
		Bold:        p.Bold(true),
		Err:         p.Bold(true),
		OK:          p,
		Warn:        p,
		Status:      p,
		Prompt:      p.Bold(true),
		Match:       p.Underline(true).Bold(true),
		Current:     p.Bold(true),
		OnPath:      p,
		Did:         p.Bold(true),
		Warmup:      p, Record: p, Replay: p, Eager: p, Checkpoint: p.Bold(true),
		Changed:      p.Underline(true),
		BreakpointOn: p.Bold(true),
		Help: help.Styles{
			ShortKey: p.Bold(true), ShortDesc: p, ShortSeparator: p, Ellipsis: p,
			FullKey: p.Bold(true), FullDesc: p, FullSeparator: p,
		},
	}
	for i := range s.Block {
		s.Block[i] = p
	}
	if !color {
		return s
	}
	c := lipgloss.Color
	s.Border = p.Foreground(c("8"))
	s.BorderFocus = p.Foreground(c("12")).Bold(true)
	s.Title = p.Foreground(c("7"))
	s.TitleFocus = p.Foreground(c("12")).Bold(true)
	s.Selected = p.Reverse(true)
	s.Dim = p.Foreground(c("8"))
	s.Err = p.Foreground(c("9")).Bold(true)
	s.OK = p.Foreground(c("10"))
	s.Warn = p.Foreground(c("11"))
	s.Status = p.Foreground(c("15")).Background(c("236"))
	s.Prompt = p.Foreground(c("11")).Bold(true)
	s.Match = p.Foreground(c("0")).Background(c("11")).Bold(true)
	s.Current = p.Foreground(c("10")).Bold(true)
	s.OnPath = p.Foreground(c("10"))
	s.Did = p.Foreground(c("11")).Bold(true)
	s.Warmup = p.Foreground(c("13"))
	s.Record = p.Foreground(c("11"))
	s.Replay = p.Foreground(c("10"))
	s.Eager = p.Foreground(c("14"))
	s.Checkpoint = p.Foreground(c("208")).Bold(true)
	s.Block[engine.BlockFree] = p.Foreground(c("8"))
	s.Block[engine.BlockAllocated] = p.Foreground(c("12"))
	s.Block[engine.BlockLiveInvisible] = p.Foreground(c("11"))
	s.Block[engine.BlockStale] = p.Foreground(c("9"))
	s.Block[engine.BlockUnowned] = p.Foreground(c("13"))
	s.Changed = p.Foreground(c("208")).Bold(true)
	s.BreakpointOn = p.Foreground(c("9")).Bold(true)
	s.Help = help.DefaultDarkStyles()
	return s
}

// action returns the style of an action's label.
func (s Styles) action(a engine.Action) lipgloss.Style {
	switch a {
	case engine.ActionWarmup:
		return s.Warmup
	case engine.ActionRecord:
		return s.Record
	case engine.ActionReplay:
		return s.Replay
	case engine.ActionEager:
		return s.Eager
	}
	return s.Dim
}
