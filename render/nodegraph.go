package render

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/cgtviz/cgtviz/engine"
)

// Colours of the node-graph picture, by input kind.
var inputFill = map[engine.InputKind]string{
	engine.InputStatic:  "#e5e7eb",
	engine.InputManaged: "#dbeafe",
	engine.InputCopied:  "#ffedd5",
}

// NodeGraphDOT draws the CUDA graph of graph id node on device dev.
//
// When gpuDOT is not empty it is the graph as the GPU printed it
// (cuGraphDebugDotPrint, through engine.GraphDOT) and is returned as it
// is: it is the driver's own account, and restyling it would risk losing
// detail the driver chose to show. Otherwise the graph is built from the
// node's KernelView list: one record box per kernel or memcpy in capture
// order, each depending on the previous (how the engine captures on one
// stream), laid out like the driver's print; the node's inputs (static,
// cudagraph-managed or copied into a placeholder) are boxes at the top and
// its outputs boxes at the bottom, joined by dashed edges to the kernels
// whose operands name their addresses.
func NodeGraphDOT(st *engine.State, dev, node int, gpuDOT string) ([]byte, error) {
	if st == nil {
		return nil, fmt.Errorf("render: node graph: no state")
	}
	var d *engine.DeviceState
	for i := range st.Devices {
		if st.Devices[i].Index == dev {
			d = &st.Devices[i]
		}
	}
	if d == nil {
		return nil, fmt.Errorf("render: node graph: no device %d (the state has %d)", dev, len(st.Devices))
	}
	var n *engine.NodeView
	for i := range d.Nodes {
		if d.Nodes[i].ID == node {
			n = &d.Nodes[i]
		}
	}
	if n == nil {
		return nil, fmt.Errorf("render: node graph: device %d has no node #%d (it has %d nodes)", dev, node, len(d.Nodes))
	}
	if strings.TrimSpace(gpuDOT) != "" {
		out := []byte(gpuDOT)
		if !bytes.HasSuffix(out, []byte("\n")) {
			out = append(out, '\n')
		}
		return out, nil
	}

	var b bytes.Buffer
	gid := fmt.Sprintf("graph_%d", n.ID)
	b.WriteString("digraph dot {\n")
	fmt.Fprintf(&b, "\tgraph [rankdir=TB fontname=\"Courier\" fontsize=12 labelloc=t label=%s];\n",
		label(fmt.Sprintf("CUDA graph of #%d %s on device %d", n.ID, short(n.Fn), d.Index),
			fmt.Sprintf("%d graph nodes, recorded at line %d", len(n.Kernels), n.RecordedAtLine)))
	b.WriteString("\tnode [fontname=\"Courier\" fontsize=9];\n")
	fmt.Fprintf(&b, "\tedge [color=%q];\n", colorEdge)

	// Inputs, on the top rank.
	if len(n.Inputs) > 0 {
		b.WriteString("\t{ rank=source;\n")
		for i, in := range n.Inputs {
			lines := []string{fmt.Sprintf("input %d: %s", in.Index, short(orDash(in.Name))), string(in.Kind), ptrShape(in.Ptr, in.Shape)}
			fill, ok := inputFill[in.Kind]
			if !ok {
				fill = "white"
			}
			fmt.Fprintf(&b, "\t\tin%d [shape=box style=\"rounded,filled\" fillcolor=%q label=%s];\n", i, fill, label(lines...))
		}
		b.WriteString("\t}\n")
	}

	// The captured nodes, as the driver prints them, in a dashed cluster.
	fmt.Fprintf(&b, "\tsubgraph cluster_%d {\n\t\tlabel=%q style=\"dashed\";\n", n.ID, gid)
	if len(n.Kernels) == 0 {
		b.WriteString("\t\tempty [shape=plaintext label=\"empty graph: nothing was captured\"];\n")
	}
	for i, k := range n.Kernels {
		cells := strings.Fields(k.Detail)
		for j := range cells {
			cells[j] = recordEsc(cells[j])
		}
		fmt.Fprintf(&b, "\t\t%s_node_%d [shape=record style=solid label=\"{%s | {ID | %d | %s} | {%s}}\"];\n",
			gid, i, recordEsc(strings.ToUpper(k.Kind)), i, recordEsc(k.Name), strings.Join(cells, " | "))
	}
	for i := 1; i < len(n.Kernels); i++ {
		fmt.Fprintf(&b, "\t\t%s_node_%d -> %s_node_%d;\n", gid, i-1, gid, i)
	}
	b.WriteString("\t}\n")

	// Outputs, on the bottom rank.
	if len(n.Outputs) > 0 {
		b.WriteString("\t{ rank=sink;\n")
		for i, o := range n.Outputs {
			state := "dead"
			if o.Live {
				state = "live"
				if o.Tensor != "" {
					state += ": " + short(o.Tensor)
				}
			}
			lines := []string{fmt.Sprintf("output %d, %d B", o.Index, o.Bytes), ptrShape(o.Ptr, o.Shape), state}
			if o.Alias != "" {
				lines = append(lines, "alias of "+o.Alias)
			}
			fill := "white"
			if o.Live {
				fill = fillReplayed
			}
			fmt.Fprintf(&b, "\t\tout%d [shape=box style=\"rounded,filled\" fillcolor=%q label=%s];\n", i, fill, label(lines...))
		}
		b.WriteString("\t}\n")
	}

	// Data edges: an input feeds the kernels that read its address; an
	// output comes from the last kernel that wrote its address.
	for j, in := range n.Inputs {
		for i, k := range n.Kernels {
			if reads(k, in.Ptr) {
				fmt.Fprintf(&b, "\tin%d -> %s_node_%d [style=dashed];\n", j, gid, i)
			}
		}
	}
	for j, o := range n.Outputs {
		for i := len(n.Kernels) - 1; i >= 0; i-- {
			if writes(n.Kernels[i], o.Ptr) {
				fmt.Fprintf(&b, "\t%s_node_%d -> out%d [style=dashed];\n", gid, i, j)
				break
			}
		}
	}
	b.WriteString("}\n")
	return b.Bytes(), nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func ptrShape(p uint64, shape []int) string {
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = strconv.Itoa(d)
	}
	return fmt.Sprintf("%#x [%s]", p, strings.Join(dims, ", "))
}

// operands returns the addresses named by keys in a kernel's Detail words
// ("a=0x7f0000000000", "b=0x7f0000000200[0]" for a broadcast operand).
func operands(k engine.KernelView, keys ...string) []uint64 {
	var out []uint64
	for _, w := range strings.Fields(k.Detail) {
		key, v, ok := strings.Cut(w, "=")
		if !ok {
			continue
		}
		for _, want := range keys {
			if key != want {
				continue
			}
			v = strings.TrimSuffix(v, "[0]")
			if p, err := strconv.ParseUint(v, 0, 64); err == nil && strings.HasPrefix(v, "0x") {
				out = append(out, p)
			}
		}
	}
	return out
}

func reads(k engine.KernelView, p uint64) bool {
	for _, q := range operands(k, "a", "b", "src") {
		if q == p && p != 0 {
			return true
		}
	}
	return false
}

func writes(k engine.KernelView, p uint64) bool {
	for _, q := range operands(k, "out", "dst") {
		if q == p && p != 0 {
			return true
		}
	}
	return false
}
