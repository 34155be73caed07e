package render

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/cgtviz/cgtviz/traces"
)

// maxNameRunes bounds a function or tensor name in a label, so that a
// pathological name cannot stretch a node across the whole picture.
const maxNameRunes = 48

// maxTitleRunes bounds the caption's title line (a trace's name).
const maxTitleRunes = 100

// short cuts a name to maxNameRunes, marking the cut with an ellipsis.
func short(s string) string { return cut(s, maxNameRunes) }

// cut shortens s to n runes, the last one an ellipsis when s was longer.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// escLine makes one line of label text safe inside a double-quoted DOT
// string. Backslashes and quotes are escaped so Graphviz shows them as
// typed (a lone backslash would otherwise start an escape such as \N or \E,
// which Graphviz replaces by the node or edge name). Control characters are
// shown as their Go escapes, since a raw newline would break the line
// structure the caller chose, and invalid UTF-8 is replaced because Graphviz
// rejects it.
func escLine(s string) string {
	// Printable writes control characters as Go escapes (\x01) and
	// invalid UTF-8 as U+FFFD; the escape's backslash is then escaped
	// with the rest, so Graphviz shows \x01 as typed.
	s = traces.Printable(s)
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '\\':
			b.WriteString(`\\`)
		case '"':
			b.WriteString(`\"`)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// label joins lines into a quoted DOT string, each line escaped and the
// lines separated by DOT's centred line break.
func label(lines ...string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i, l := range lines {
		if i > 0 {
			b.WriteString(`\n`)
		}
		b.WriteString(escLine(l))
	}
	b.WriteByte('"')
	return b.String()
}

// leftLabel is label with every line left-justified (DOT's \l), for
// captions, whose lines read better aligned than centred.
func leftLabel(lines ...string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, l := range lines {
		b.WriteString(escLine(l))
		b.WriteString(`\l`)
	}
	b.WriteByte('"')
	return b.String()
}

// htmlEsc escapes text for a Graphviz HTML-like label.
func htmlEsc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(strings.ToValidUTF8(s, "\uFFFD"))
}

// recordEsc escapes text for one field of a DOT record label: the record
// structure characters as well as what escLine handles.
func recordEsc(s string) string {
	s = escLine(s)
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '{', '}', '|', '<', '>':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	// A space after a record field separator is layout-significant only at
	// the ends; trimming keeps fields tidy.
	return strings.TrimSpace(b.String())
}

// thousands formats n with comma separators ("5,000"), as the node-limit
// message shows counts to people.
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
