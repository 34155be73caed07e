package sim

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/traces/ops"
)

type nodeKind uint8

const (
	kernelNode nodeKind = iota
	memcpyNode          // device to device: l.Out is dst, l.A is src, l.N the count
)

// node is one recorded launch. It holds the launch by value: a graph
// replays on the very addresses it was captured with, as a CUDA graph does.
type node struct {
	kind nodeKind
	l    device.Launch
}

// graph is a captured graph. Its nodes never change after EndCapture, so
// executable graphs and snapshots share them.
type graph struct {
	id    device.GraphHandle
	nodes []node
}

// exec is an instantiated graph. It keeps its own reference to the nodes,
// so destroying the graph leaves it usable, as in CUDA. Never changed once
// made (an update makes another).
type exec struct {
	nodes []node
	// inline holds the nodes of a small graph (a recording of one kernel
	// and its input's copy), and nodes is a view of it: a launch reads the
	// exec and its launches from one allocation, where the nodes shared
	// with the graph were a cache miss of their own per replay among
	// 10,000 graphs.
	inline [2]node
}

// newExec is an exec of nodes, which it copies when they fit inline.
func newExec(nodes []node) *exec {
	ex := &exec{nodes: nodes}
	if len(nodes) <= len(ex.inline) {
		n := copy(ex.inline[:], nodes)
		ex.nodes = ex.inline[:n:n]
	}
	return ex
}

// planNode checks a node's operand ranges, as plan does for a launch.
func (d *Device) planNode(n *node, p *plan) error {
	if n.kind == memcpyNode {
		var err error
		p.b = noSpan
		if p.out, err = d.span("dst", n.l.Out, n.l.N); err != nil {
			return err
		}
		p.a, err = d.span("src", n.l.A, n.l.N)
		return err
	}
	return d.plan(&n.l, p)
}

// BeginCapture starts recording the launches and copies made on s.
func (d *Device) BeginCapture(s device.Stream) error {
	if err := d.alive(); err != nil {
		return err
	}
	if err := d.fault(FaultCapture); err != nil {
		return err
	}
	if err := checkStream(s); err != nil {
		return fmt.Errorf("sim: begin_capture: %w", err)
	}
	c := &d.capture[s]
	if c.active {
		return fmt.Errorf("sim: begin_capture: stream %d is already capturing", s)
	}
	*c = capture{active: true}
	return nil
}

// EndCapture ends the capture of s and returns its graph: the recorded
// nodes in order, each depending on the one before (one stream gives a
// chain). A capture with nothing recorded gives an empty graph.
func (d *Device) EndCapture(s device.Stream) (device.GraphHandle, error) {
	if err := d.alive(); err != nil {
		return 0, err
	}
	if err := d.fault(FaultCapture); err != nil {
		return 0, err
	}
	if err := checkStream(s); err != nil {
		return 0, fmt.Errorf("sim: end_capture: %w", err)
	}
	c := &d.capture[s]
	if !c.active {
		return 0, fmt.Errorf("sim: end_capture: stream %d is not capturing", s)
	}
	d.nextGraph++
	g := &graph{id: d.nextGraph, nodes: slices.Clip(slices.Clone(c.nodes))}
	d.graphs.set(uint64(g.id), g)
	*c = capture{}
	return g.id, nil
}

// Instantiate makes an executable graph of g.
func (d *Device) Instantiate(g device.GraphHandle) (device.ExecHandle, error) {
	if err := d.alive(); err != nil {
		return 0, err
	}
	if err := d.fault(FaultCapture); err != nil {
		return 0, err
	}
	gr := d.graphs.get(uint64(g))
	ok := gr != nil
	if !ok {
		return 0, fmt.Errorf("sim: instantiate: no graph %d", g)
	}
	d.nextExec++
	d.execs.set(uint64(d.nextExec), newExec(gr.nodes))
	return d.nextExec, nil
}

// LaunchGraph replays e's nodes in order on their captured addresses. It
// checks every node first and writes nothing when one is invalid (a segment
// it uses was freed, say). Replaying into a capturing stream is an error.
func (d *Device) LaunchGraph(e device.ExecHandle, s device.Stream) error {
	if err := d.alive(); err != nil {
		return err
	}
	if err := d.fault(FaultGraphLaunch); err != nil {
		return err
	}
	if err := checkStream(s); err != nil {
		return fmt.Errorf("sim: launch_graph exec %d: %w", e, err)
	}
	ex := d.execs.get(uint64(e))
	ok := ex != nil
	if !ok {
		return fmt.Errorf("sim: launch_graph: no exec %d", e)
	}
	if d.capture[s].active {
		return fmt.Errorf("sim: launch_graph exec %d: stream %d is capturing", e, s)
	}
	plans := slices.Grow(d.plans[:0], len(ex.nodes))[:len(ex.nodes)]
	d.plans = plans
	for i := range ex.nodes {
		n, p := &ex.nodes[i], &plans[i]
		if err := d.planNode(n, p); err != nil {
			return nodeErr(e, i, n, err)
		}
		if err := d.check(s, n.opName(), p); err != nil {
			return nodeErr(e, i, n, err)
		}
	}
	// Every range is valid and no node allocates or frees, so the plans
	// stay true while the nodes run (a plan names a segment by its index
	// in segs, which only a malloc or a free changes), and the kernels
	// cannot fail: their lengths come from the plan.
	for i := range ex.nodes {
		n, p := &ex.nodes[i], &plans[i]
		d.note(s, n.opName(), p)
		if n.kind == memcpyNode {
			d.copySpan(p.out, p.a)
			continue
		}
		if err := d.run(&n.l, p); err != nil {
			return nodeErr(e, i, n, err)
		}
	}
	return nil
}

// nodeErr is LaunchGraph's error for node i of exec e, formatted out of
// line: three formatting calls inline were a third of the launch's code,
// between the instructions every replay runs.
func nodeErr(e device.ExecHandle, i int, n *node, err error) error {
	return fmt.Errorf("sim: launch_graph exec %d: node %d (%s): %w", e, i, n.name(), err)
}

// opName is what a stream-order error calls the node's access (the graph
// and the node are said around it).
func (n *node) opName() string {
	if n.kind == memcpyNode {
		return "copy"
	}
	return n.l.K.String()
}

func (n *node) kindName() string {
	if n.kind == memcpyNode {
		return "memcpy"
	}
	return "kernel"
}

func (n *node) name() string {
	if n.kind == memcpyNode {
		return "DtoD"
	}
	return n.l.K.String()
}

// fields are the node's operands as GraphNodes' Detail names them, one
// "name=value" each.
func (n *node) fields() []string {
	return strings.Fields(string(n.appendDetail(nil)))
}

// appendDetail appends the node's operands to b, space-separated: what
// GraphNodes' Detail holds. It formats into one buffer: every recording
// lists its graph's nodes, and a Sprintf per operand was a tenth of the
// time a tree of 10,000 nodes took to grow.
func (n *node) appendDetail(b []byte) []byte {
	l := &n.l
	start := len(b) // b may hold other nodes' details (GraphNodes)
	sep := func() {
		if len(b) > start {
			b = append(b, ' ')
		}
	}
	hex := func(name string, p device.Ptr) {
		sep()
		b = append(b, name...)
		b = append(b, "=0x"...)
		b = strconv.AppendUint(b, uint64(p), 16)
	}
	num := func(name string, v float32) {
		sep()
		b = append(b, name...)
		b = append(b, '=')
		b = strconv.AppendFloat(b, float64(v), 'g', -1, 32)
	}
	cnt := func(name string, v int64) {
		sep()
		b = append(b, name...)
		b = append(b, '=')
		b = strconv.AppendInt(b, v, 10)
	}
	if n.kind == memcpyNode {
		hex("dst", l.Out)
		hex("src", l.A)
		cnt("n", l.N)
		return b
	}
	switch k := l.K; {
	case k.IsBinary():
		hex("out", l.Out)
		hex("a", l.A)
		switch l.BKind {
		case ops.BTensor:
			hex("b", l.B)
		case ops.BBroadcast:
			hex("b", l.B)
			b = append(b, "[0]"...)
		default:
			num("b", l.Scalar)
		}
		cnt("n", l.N)
	case k == ops.Fill:
		hex("out", l.Out)
		num("value", l.Scalar)
		cnt("n", l.N)
	case k == ops.Matmul:
		hex("out", l.Out)
		hex("a", l.A)
		hex("b", l.B)
		cnt("m", l.M)
		cnt("k", l.Kd)
		cnt("n", l.Cols)
	default:
		hex("out", l.Out)
		hex("a", l.A)
		cnt("n", l.N)
	}
	if l.Geom != nil {
		b = appendGeom(b, l.Geom)
	}
	return b
}

// GraphNodes lists g's nodes in capture order. Detail names the operands:
// "out=0x7f0000000200 a=0x7f0000000000 b=2 n=4", where b is an address, an
// address followed by [0] when its first element is broadcast, or a number.
func (d *Device) GraphNodes(g device.GraphHandle) ([]device.GraphNode, error) {
	if err := d.alive(); err != nil {
		return nil, err
	}
	gr := d.graphs.get(uint64(g))
	ok := gr != nil
	if !ok {
		return nil, fmt.Errorf("sim: graph_nodes: no graph %d", g)
	}
	out := make([]device.GraphNode, len(gr.nodes))
	// Every node's detail is formatted into one buffer and made one
	// string, which the details are substrings of; the dependencies share
	// one array (each capped). A recording lists its graph's nodes, so a
	// graph's listing is three allocations, not two more a node.
	var buf [256]byte
	b := buf[:0]
	var endBuf [16]int
	ends := endBuf[:0]
	for i := range gr.nodes {
		b = gr.nodes[i].appendDetail(b)
		ends = append(ends, len(b))
	}
	all := string(b)
	var deps []int
	if len(gr.nodes) > 1 {
		deps = make([]int, len(gr.nodes)-1)
	}
	start := 0
	for i := range gr.nodes {
		n := &gr.nodes[i]
		out[i] = device.GraphNode{Kind: n.kindName(), Name: n.name(), Detail: all[start:ends[i]]}
		start = ends[i]
		if i > 0 {
			deps[i-1] = i - 1
			out[i].Deps = deps[i-1 : i : i]
		}
	}
	return out, nil
}

// GraphDOT returns g as DOT text shaped like cuGraphDebugDotPrint's: a
// dashed cluster per graph, one record node per graph node whose label has
// the node type, its index and kernel (or copy direction), and its
// operands, and one edge per dependency.
func (d *Device) GraphDOT(g device.GraphHandle) (string, error) {
	if err := d.alive(); err != nil {
		return "", err
	}
	gr := d.graphs.get(uint64(g))
	ok := gr != nil
	if !ok {
		return "", fmt.Errorf("sim: graph_dot: no graph %d", g)
	}
	var b strings.Builder
	id := fmt.Sprintf("graph_%d", gr.id)
	fmt.Fprintf(&b, "digraph dot {\n\tsubgraph cluster_%d {\n", gr.id)
	fmt.Fprintf(&b, "\t\tlabel=%q graph[style=\"dashed\"];\n", id)
	for i := range gr.nodes {
		n := &gr.nodes[i]
		cells := n.fields()
		for j := range cells {
			cells[j] = recordEscape(cells[j])
		}
		fmt.Fprintf(&b, "\t\t\"%s_node_%d\"[style=\"solid\" shape=\"record\" label=\"{%s | {ID | %d | %s} | {%s}}\"];\n",
			id, i, strings.ToUpper(n.kindName()), i, recordEscape(n.name()), strings.Join(cells, " | "))
	}
	for i := 1; i < len(gr.nodes); i++ {
		fmt.Fprintf(&b, "\t\t\"%s_node_%d\" -> \"%s_node_%d\";\n", id, i-1, id, i)
	}
	b.WriteString("\t}\n}\n")
	return b.String(), nil
}

// recordEscape escapes the characters that are structure in a DOT record
// label, and those that would end or break the quoted string.
func recordEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '{', '}', '|', '<', '>', '"', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// DestroyGraph frees g. Executable graphs made from it stay usable.
func (d *Device) DestroyGraph(g device.GraphHandle) error {
	if err := d.alive(); err != nil {
		return err
	}
	if d.graphs.get(uint64(g)) == nil {
		return fmt.Errorf("sim: destroy_graph: no graph %d", g)
	}
	d.graphs.set(uint64(g), nil)
	return nil
}

// DestroyExec frees e.
func (d *Device) DestroyExec(e device.ExecHandle) error {
	if err := d.alive(); err != nil {
		return err
	}
	if d.execs.get(uint64(e)) == nil {
		return fmt.Errorf("sim: destroy_exec: no exec %d", e)
	}
	d.execs.set(uint64(e), nil)
	return nil
}

// UpdateCopy points the memcpy node of exec e that writes dst at src (n
// elements), as cuGraphExecMemcpyNodeSetParams does: the exec gets its own
// copy of its nodes, so the graph and snapshots keep theirs.
func (d *Device) UpdateCopy(e device.ExecHandle, dst, src device.Ptr, n int64) error {
	if err := d.alive(); err != nil {
		return err
	}
	ex := d.execs.get(uint64(e))
	ok := ex != nil
	if !ok {
		return fmt.Errorf("sim: update_copy: no exec %d", e)
	}
	for i := range ex.nodes {
		nd := ex.nodes[i]
		if nd.kind != memcpyNode || nd.l.Out != dst {
			continue
		}
		if nd.l.N != n {
			return fmt.Errorf("sim: update_copy exec %d: the copy into %#x moves %d elements, not %d", e, dst, nd.l.N, n)
		}
		if _, err := d.span("src", src, n); err != nil {
			return fmt.Errorf("sim: update_copy exec %d: %w", e, err)
		}
		nodes := append([]node(nil), ex.nodes...)
		nodes[i].l.A = src
		d.execs.set(uint64(e), newExec(nodes))
		return nil
	}
	return fmt.Errorf("sim: update_copy exec %d: no memcpy node writes %#x", e, dst)
}
