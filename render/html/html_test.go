package html_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/engine/device/sim"
	"github.com/cgtviz/cgtviz/engine/report"
	"github.com/cgtviz/cgtviz/render/graphviztest"
	"github.com/cgtviz/cgtviz/render/html"
	"github.com/cgtviz/cgtviz/tools/golden"
	"github.com/cgtviz/cgtviz/traces"
)

func TestMain(m *testing.M) { os.Exit(graphviztest.Main(m)) }

// build runs a trace as cgtviz report does and returns the page's parts.
func build(t *testing.T, r io.Reader, name string, lim report.Limits) *html.Page {
	t.Helper()
	tr, err := traces.NewReader(r, name)
	if err != nil {
		t.Fatal(err)
	}
	hdr := tr.Header()
	e, err := engine.New(hdr, engine.Options{Devices: sim.Devices(max(hdr.Devices, 1)), File: name})
	if err != nil {
		t.Fatal(err)
	}
	rep := report.New(hdr.Name, "sim")
	col := rep.Collect(hdr, e, lim)
	if _, err := e.Stream(t.Context(), tr, func(s *engine.Step) bool { col.Step(s); return true }); err != nil {
		t.Fatal(err)
	}
	st := e.State()
	return &html.Page{Report: rep, Analysis: col.Finish(st), State: st, File: name, Version: "test"}
}

func buildFile(t *testing.T, path string, lim report.Limits) *html.Page {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return build(t, f, filepath.Base(path), lim)
}

func render(t *testing.T, p *html.Page, opts html.Options) []byte {
	t.Helper()
	page, warnings, err := html.Render(t.Context(), p, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range warnings {
		t.Errorf("warning: %v", w)
	}
	return page
}

// parsed is what the tests read of a page.
type parsed struct {
	ids      map[string]int    // id to how many elements have it
	hrefs    []string          // every href
	sections []string          // section ids in order
	elems    map[string]int    // element name to count
	attrs    map[string]string // attributes naming a resource (src, srcset, data, ...) and where
	logRows  int
	charts   int
	trees    int // <svg> inside div.tree
	treeHref int // node links inside the trees
}

var scriptRE = regexp.MustCompile(`(?s)<script>.*?</script>`)

// parse reads a page as HTML's XML-compatible subset (the script, whose
// text is not XML, taken out first): the page must parse.
func parse(t *testing.T, page []byte) parsed {
	t.Helper()
	scripts := scriptRE.FindAll(page, -1)
	if len(scripts) != 1 {
		t.Fatalf("%d scripts, want the one inline script", len(scripts))
	}
	body := scriptRE.ReplaceAll(page, nil)
	dec := xml.NewDecoder(bytes.NewReader(body))
	dec.Strict = false
	dec.AutoClose = xml.HTMLAutoClose
	dec.Entity = xml.HTMLEntity
	p := parsed{ids: map[string]int{}, elems: map[string]int{}, attrs: map[string]string{}}
	var stack []string
	inTree := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the page does not parse: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			name := el.Name.Local
			p.elems[name]++
			stack = append(stack, name)
			var class, id string
			for _, a := range el.Attr {
				switch a.Name.Local {
				case "id":
					id = a.Value
					p.ids[a.Value]++
				case "href":
					p.hrefs = append(p.hrefs, a.Value)
					if inTree > 0 && strings.HasPrefix(a.Value, "#n-") {
						p.treeHref++
					}
				case "class":
					class = a.Value
				case "src", "srcset", "data", "action", "formaction", "poster", "background", "ping":
					p.attrs[a.Name.Local] = name
				}
			}
			if name == "section" {
				p.sections = append(p.sections, id)
			}
			if name == "tr" && strings.HasPrefix(id, "l-") {
				p.logRows++
			}
			if name == "svg" && class == "chart" {
				p.charts++
			}
			if name == "div" && class == "tree" {
				inTree = len(stack)
			}
			if name == "svg" && inTree > 0 {
				p.trees++
			}
		case xml.EndElement:
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			if inTree > len(stack) {
				inTree = 0
			}
		}
	}
	return p
}

// check checks what every page must be: self-contained, its sections in
// order, every link to something on the page, one chart and (with nodes)
// one drawn tree per device, each node linked, one log row per kept row.
func check(t *testing.T, page []byte, pg *html.Page) parsed {
	t.Helper()
	for _, bad := range []string{"http://", "https://", "src=", "@import", "url(", "fetch(", "XMLHttpRequest", "WebSocket", "<link", "<iframe", "<img"} {
		if i := bytes.Index(page, []byte(bad)); i >= 0 {
			t.Errorf("the page has %q (a way to the network): …%s…", bad, page[max(i-60, 0):min(i+60, len(page))])
		}
	}
	p := parse(t, page)
	if want := []string{"summary", "functions", "trees", "pool", "log"}; strings.Join(p.sections, " ") != strings.Join(want, " ") {
		t.Errorf("sections %v, want %v", p.sections, want)
	}
	for id, n := range p.ids {
		if n > 1 {
			t.Errorf("id %q on %d elements", id, n)
		}
	}
	for _, h := range p.hrefs {
		if !strings.HasPrefix(h, "#") || (h != "#" && p.ids[h[1:]] == 0) {
			t.Errorf("link %q goes to nothing on the page", h)
		}
	}
	for a, el := range p.attrs {
		t.Errorf("<%s> has %s=, which loads a resource", el, a)
	}
	devs := len(pg.State.Devices)
	if p.charts != devs {
		t.Errorf("%d charts, want one per device (%d)", p.charts, devs)
	}
	drawn, nodes := 0, 0
	for _, d := range pg.State.Devices {
		if len(d.Nodes) > 0 && len(d.Nodes) <= html.DefaultMaxNodes {
			drawn++
			nodes += len(d.Nodes)
		}
	}
	if p.trees != drawn || p.treeHref != nodes {
		t.Errorf("%d trees drawn with %d node links, want %d and %d", p.trees, p.treeHref, drawn, nodes)
	}
	if p.logRows != len(pg.Analysis.Rows) {
		t.Errorf("%d log rows, the analysis keeps %d", p.logRows, len(pg.Analysis.Rows))
	}
	if n := len(page); n > 5<<20 {
		t.Errorf("the page is %d bytes, over 5 MB", n)
	}
	return p
}

// TestPageGolden compares the page of the demo trace with its golden.
func TestPageGolden(t *testing.T) {
	pg := buildFile(t, "../../examples/seed-a-checkpoint.cgt.jsonl", report.Limits{})
	page := render(t, pg, html.Options{})
	check(t, page, pg)
	golden.Check(t, filepath.Join("testdata", "seed-a-checkpoint.html"), page)
}

// TestPageExamples renders every example, the programs recorded on a GPU
// included.
func TestPageExamples(t *testing.T) {
	a, _ := filepath.Glob("../../examples/*.cgt.jsonl")
	b, _ := filepath.Glob("../../examples/recorded/*.cgt.jsonl")
	if len(a) == 0 || len(b) == 0 {
		t.Fatal("no examples")
	}
	for _, path := range append(a, b...) {
		t.Run(strings.TrimPrefix(path, "../../examples/"), func(t *testing.T) {
			pg := buildFile(t, path, report.Limits{})
			page := render(t, pg, html.Options{})
			check(t, page, pg)
			for _, v := range pg.Analysis.Verdicts {
				if !bytes.Contains(page, []byte(fmt.Sprintf("data-kind=%q", v.Kind))) {
					t.Errorf("verdict %s not on the page", v.Kind)
				}
			}
			if m := pg.Analysis.Meta; m.Torch != "" && !bytes.Contains(page, []byte(m.Torch)) {
				t.Errorf("torch %s not on the page", m.Torch)
			}
		})
	}
}

// loopTrace is a trace of n loop iterations: a checkpoint and an error in
// its first iterations, and a source line for its function in the meta.
func loopTrace(n int) string {
	var b strings.Builder
	b.WriteString(`{"cgtviz": 1, "name": "loop <b>x</b> & \"q\"", "meta": {"torch": "2.11.0", "sources": {"foo": "model.py:73:forward"}}}` + "\n")
	b.WriteString(`{"op": "def", "fn": "foo", "params": ["x"], "body": [{"out": "a", "k": "add", "a": "x", "b": 1}], "returns": ["a"]}` + "\n")
	b.WriteString(`{"op": "tensor", "name": "inp", "shape": [4], "init": "rand", "seed": 1}` + "\n")
	b.WriteString(`{"op": "call", "fn": "foo", "args": ["inp"], "out": ["y"]}` + "\n")
	b.WriteString(`{"op": "step"}` + "\n")
	b.WriteString(`{"op": "read", "name": "y"}` + "\n") // y is stale: an error
	for range n {
		b.WriteString(`{"op": "step"}` + "\n")
		b.WriteString(`{"op": "call", "fn": "foo", "args": ["inp"], "out": ["y"]}` + "\n")
	}
	return b.String()
}

// TestPageBounded checks that a long trace gives a bounded page that says
// what it left out, and that a source line in the meta is shown.
func TestPageBounded(t *testing.T) {
	pg := build(t, strings.NewReader(loopTrace(3000)), "loop.cgt.jsonl", report.Limits{Rows: 100, Samples: 50})
	page := render(t, pg, html.Options{})
	check(t, page, pg)
	a := pg.Analysis
	if len(a.Rows) != 100 || a.RowsTotal <= 100 {
		t.Fatalf("%d rows of %d, want 100 of more", len(a.Rows), a.RowsTotal)
	}
	if bytes.Contains(page, []byte("<b>x</b>")) || !bytes.Contains(page, []byte("loop &lt;b&gt;x&lt;/b&gt; &amp; &#34;q&#34;")) {
		t.Error("the trace's name is not escaped")
	}
	for _, want := range []string{"The log shows 100 of 3,", "model.py:73:forward", "2.11.0", "samples, every "} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("the page does not say %q", want)
		}
	}
	if len(a.Memory) > 50 {
		t.Errorf("%d samples, over the limit of 50", len(a.Memory))
	}
}

// TestPageTreeTooBig checks a tree over MaxNodes: not drawn, said so, its
// nodes not linked.
func TestPageTreeTooBig(t *testing.T) {
	pg := buildFile(t, "../../examples/seed-a-checkpoint.cgt.jsonl", report.Limits{})
	page := render(t, pg, html.Options{MaxNodes: 1})
	p := parse(t, page)
	if p.trees != 0 || !bytes.Contains(page, []byte("more than the 1 a page draws")) {
		t.Error("a tree over the limit was drawn, or the page does not say why not")
	}
	for _, h := range p.hrefs {
		if p.ids[h[1:]] == 0 {
			t.Errorf("link %q goes to nothing", h)
		}
	}
}

// TestPageWithoutGraphviz checks that a tree Graphviz cannot lay out
// leaves a page that says so, and a warning.
func TestPageWithoutGraphviz(t *testing.T) {
	pg := buildFile(t, "../../examples/seed-a-checkpoint.cgt.jsonl", report.Limits{})
	fail := func(context.Context, []byte) ([]byte, error) { return nil, errors.New("no graphviz here") }
	page, warnings, err := html.Render(t.Context(), pg, html.Options{SVG: fail})
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 1 || !bytes.Contains(page, []byte("The tree is not drawn: no graphviz here")) {
		t.Errorf("warnings %v; the page does not say why the tree is missing", warnings)
	}
	if _, _, err := html.Render(t.Context(), &html.Page{}, html.Options{}); err == nil {
		t.Error("an empty page rendered")
	}
}

// TestPageUnended: a trace whose header says its recording did not end (a
// program that died: cgtrace's journal) has the summary say so; one whose
// recording ended does not.
func TestPageUnended(t *testing.T) {
	const body = `{"op": "def", "fn": "f", "params": ["x"], "body": [{"out": "y", "k": "add", "a": "x", "b": 1}], "returns": ["y"]}
{"op": "tensor", "name": "x", "shape": [4], "init": "rand", "seed": 1}
{"op": "call", "fn": "f", "args": ["x"], "out": ["y"]}
`
	for _, tc := range []struct {
		meta string
		want bool
	}{
		{`{"torch": "2.11.0", "journal": "written as the program ran; the recording did not end"}`, true},
		{`{"torch": "2.11.0"}`, false},
	} {
		text := `{"cgtviz": 1, "devices": 1, "meta": ` + tc.meta + "}\n" + body
		page := render(t, build(t, strings.NewReader(text), "t.cgt.jsonl", report.Limits{}), html.Options{})
		parse(t, page)
		if got := bytes.Contains(page, []byte("<th>recording</th><td><strong>did not end</strong>")); got != tc.want {
			t.Errorf("meta %s: the summary says the recording did not end: %v, want %v", tc.meta, got, tc.want)
		}
	}
}
