package ui

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/cgtviz/cgtviz/traces"
)

// human formats a byte count the way PyTorch's memory tools do: "512 B",
// "2.0 MiB".
func human(n int64) string {
	const unit = 1024
	if n < unit && n > -unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	f := float64(n)
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB"} {
		f /= unit
		if f < unit && f > -unit {
			return fmt.Sprintf("%.1f %s", f, u)
		}
	}
	return fmt.Sprintf("%.1f PiB", f/unit)
}

// hex formats an address.
func hex(p uint64) string { return fmt.Sprintf("%#x", p) }

// shape formats a shape as [4, 8].
func shape(s []int) string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = strconv.Itoa(d)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// recordText is one trace record in a line, the way a person reads it.
func recordText(r *traces.Record) string {
	switch r.Op {
	case traces.OpDef:
		return fmt.Sprintf("def %s(%s) -> %s", r.Fn, strings.Join(r.Params, ", "), strings.Join(r.Returns, ", "))
	case traces.OpTensor, traces.OpParam:
		s := fmt.Sprintf("%s %s %s %s", r.Op, r.Name, shape(r.Shape), r.Init)
		if r.Device != 0 {
			s += fmt.Sprintf(" dev %d", r.Device)
		}
		return s
	case traces.OpCall:
		s := fmt.Sprintf("call %s(%s)", r.Fn, strings.Join(r.Args, ", "))
		if len(r.Out) > 0 {
			s += " -> " + strings.Join(r.Out, ", ")
		}
		return s
	case traces.OpEager:
		if r.Stmt != nil {
			return fmt.Sprintf("eager %s = %s(%s)", r.Stmt.Out, r.Stmt.K, stmtArgs(r.Stmt))
		}
		return "eager"
	case traces.OpDel:
		return "del " + strings.Join(r.Names, ", ")
	case traces.OpStep:
		return "step (mark_step_begin)"
	case traces.OpEmptyCache:
		return "torch.cuda.empty_cache()"
	case traces.OpSkippedBackward:
		return fmt.Sprintf("backward without cudagraphs (device %d)", r.Device)
	case traces.OpReset:
		if r.OneDevice {
			return fmt.Sprintf("reset device %d (its tree manager ended)", r.Device)
		}
		return "reset (torch._dynamo.reset())"
	case traces.OpRead:
		return "read " + r.Name
	case traces.OpSaved:
		return fmt.Sprintf("%s = autograd's saved %s", r.Name, r.Of)
	case traces.OpExpect:
		return "expect " + expectText(r.Expect)
	case traces.OpNote:
		return "# " + traces.Printable(r.Text)
	}
	return string(r.Op)
}

func stmtArgs(s *traces.Stmt) string {
	var args []string
	if s.A != "" {
		args = append(args, s.A)
	}
	switch {
	case s.B.IsNum:
		args = append(args, strconv.FormatFloat(s.B.Num, 'g', -1, 64))
	case s.B.Name != "":
		args = append(args, s.B.Name)
	}
	return strings.Join(args, ", ")
}

// expectText lists the fields an expect record checks.
func expectText(e *traces.Expect) string {
	if e == nil {
		return ""
	}
	var p []string
	if e.Action != nil {
		p = append(p, "action="+*e.Action)
	}
	if e.Node != nil {
		n := "node="
		if e.Node.Fn != nil {
			n += *e.Node.Fn
		}
		if e.Node.HasParentFn {
			if e.Node.ParentFn == nil {
				n += "(root)"
			} else {
				n += "<" + *e.Node.ParentFn
			}
		}
		p = append(p, n)
	}
	ints := []struct {
		name string
		v    *int
	}{{"nodes", e.Nodes}, {"roots", e.Roots}, {"checkpoints", e.Checkpoints}, {"recordings", e.Recordings},
		{"replays", e.Replays}, {"warmups", e.Warmups}, {"live_blocks", e.LiveBlocks}}
	for _, x := range ints {
		if x.v != nil {
			p = append(p, fmt.Sprintf("%s=%d", x.name, *x.v))
		}
	}
	if e.HasError {
		if e.Error == nil {
			p = append(p, "error=null")
		} else {
			p = append(p, "error~"+strconv.Quote(*e.Error))
		}
	}
	if e.Values != nil {
		p = append(p, "values("+e.Values.Name+")")
	}
	return strings.Join(p, " ")
}
