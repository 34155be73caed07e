// Package html writes `cgtviz report`'s page: one self-contained HTML file
// (inline CSS, inline SVG, a little inline JavaScript that only filters the
// log; nothing fetched, no external script, font or style) that tells a
// run's story to whoever it is sent to. It reads what the engine gives
// every consumer, through the report package (Report, Analysis) and the
// final State, and draws the trees through render (TreeDOT, SVG); the
// pool's chart it draws itself. It computes no fact of its own: the
// counts, reasons and verdicts are the report package's.
package html
