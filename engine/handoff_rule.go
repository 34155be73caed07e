package engine

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/cgtviz/cgtviz/traces"
)

// HandoffByVersion (shared.go) follows the rule of the PyTorch that
// recorded the trace, as the header's meta "torch" names it (cgtrace
// writes it): HandoffRaise for 2.12 and older, HandoffPreserve for 2.13
// and newer and for a trace that names no version (a hand-written one).
// New resolves it; Engine.Handoff returns the rule in force.
//
// firstPreservingMinor is the first 2.x release with the fix (PyTorch PR
// #184102, "keep an output handed to the next call", 2026): it landed
// after the 2.12 branch cut of 2026-04-15, and the pull requests around it
// (#183569, #184003) shipped in 2.13.
const firstPreservingMinor = 13

// HandoffFor returns the rule of the PyTorch version that recorded h, and
// that version as the trace spells it ("" when it names none or the
// version cannot be read, and the rule is then HandoffPreserve).
func HandoffFor(h traces.Header) (Handoff, string) {
	v := torchVersion(h.Meta)
	major, minor, ok := majorMinor(v)
	switch {
	case !ok:
		return HandoffPreserve, ""
	case major < 2 || major == 2 && minor < firstPreservingMinor:
		return HandoffRaise, v
	}
	return HandoffPreserve, v
}

// resolveHandoff is the rule an engine for h runs under when asked for r.
func resolveHandoff(r Handoff, h traces.Header) Handoff {
	if r != HandoffByVersion {
		return r
	}
	rule, _ := HandoffFor(h)
	return rule
}

// Handoff returns the rule the engine runs under (HandoffByVersion
// resolved).
func (e *Engine) Handoff() Handoff { return e.handoff }

// torchVersion reads meta's "torch" string, or "".
func torchVersion(meta []byte) string {
	if len(meta) == 0 {
		return ""
	}
	var m struct {
		Torch any `json:"torch"`
	}
	if json.Unmarshal(meta, &m) != nil {
		return ""
	}
	s, _ := m.Torch.(string)
	// A version is short and plain ("2.11.0+cu130"): anything else is not
	// one, and must not reach a terminal as it is.
	if len(s) > 64 || strings.IndexFunc(s, func(r rune) bool {
		return !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || strings.ContainsRune(".+-_", r))
	}) >= 0 {
		return ""
	}
	return s
}

// majorMinor reads "2.11.0+cu130", "2.14.0a0+git1234" or "2.12" as (2, 11).
func majorMinor(v string) (major, minor int, ok bool) {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(parts[0])
	// The minor may carry a suffix when there is no patch ("2.12rc1").
	mi := parts[1]
	if i := strings.IndexFunc(mi, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		mi = mi[:i]
	}
	minor, err2 := strconv.Atoi(mi)
	if err1 != nil || err2 != nil || major < 0 || minor < 0 {
		return 0, 0, false
	}
	return major, minor, true
}
