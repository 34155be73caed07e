package main

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cgtviz/cgtviz/tools/golden"
)

// chromiumPath is the headless browser the page test opens the report in
// (Debian's chromium package, which CI installs), or "" when there is none.
func chromiumPath() string {
	for _, n := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// proxy is an HTTP proxy that answers nothing and notes every request: a
// browser sent through it can reach no network, and any request the page
// made shows here.
type proxy struct {
	mu   sync.Mutex
	seen []string
	srv  *httptest.Server
}

// browserHosts are the services Chromium itself calls on start (its
// updater, clock and account checks) whatever the page: requests to them
// are the browser's, not the page's. Only these exact hosts are let by; a
// page's font or script host (fonts.googleapis.com, ...) is still caught.
var browserHosts = map[string]bool{
	"update.googleapis.com": true, "clients2.google.com": true, "accounts.google.com": true,
	"clientservices.googleapis.com": true, "redirector.gvt1.com": true, "optimizationguide-pa.googleapis.com": true,
	"safebrowsingohttpgateway.googleapis.com": true, "content-autofill.googleapis.com": true,
}

func newProxy(t *testing.T) *proxy {
	p := &proxy{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, ok := strings.Cut(host, ":"); ok {
			host = h
		}
		p.mu.Lock()
		if !browserHosts[host] {
			p.seen = append(p.seen, r.Method+" "+r.Host+r.URL.Path)
		}
		p.mu.Unlock()
		http.Error(w, "no network here", http.StatusBadGateway)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *proxy) requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen...)
}

// browse opens page in headless Chromium through the proxy, with what
// Chromium fetches for itself turned off, and returns its stdout (the DOM
// with --dump-dom).
func browse(t *testing.T, chromium string, p *proxy, page string, extra ...string) []byte {
	t.Helper()
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--proxy-server=" + p.srv.URL, "--proxy-bypass-list=<-loopback>",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-default-apps",
		"--disable-extensions", "--no-first-run", "--no-default-browser-check", "--metrics-recording-only",
		"--user-data-dir=" + t.TempDir(), "--force-device-scale-factor=1"}
	args = append(append(args, extra...), "file://"+page)
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	return stdout.Bytes()
}

var (
	hrefRE  = regexp.MustCompile(`href="#([^"]*)"`)
	idRE    = regexp.MustCompile(`\sid="([^"]*)"`)
	countRE = regexp.MustCompile(`<output id="f-count">(\d+) of (\d+) rows shown</output>`)
)

// TestReportInChromium opens a report on a program recorded on a GPU in
// headless Chromium, as the person it is sent to would: the page loads
// with no request to any network, its script runs (the log's filter
// counts its rows), the trees and the chart are there, every link goes to
// something on the page, and its screenshot looks like the golden one
// (same size, near the same colours: fonts may differ from machine to
// machine, so pixels are not compared).
func TestReportInChromium(t *testing.T) {
	chromium := chromiumPath()
	if chromium == "" {
		t.Skip("no chromium on PATH (apt-get install chromium): the page is not opened in a browser")
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"report", "../../examples/recorded/train_mlp.cgt.jsonl", "-o", page}, &stdout, &stderr); code != 0 {
		t.Fatalf("cgtviz report: exit %d\n%s", code, stderr.String())
	}
	src, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	rows := bytes.Count(src, []byte(`<tr id="l-`))
	p := newProxy(t)

	dom := browse(t, chromium, p, page, "--dump-dom")
	m := countRE.FindSubmatch(dom)
	if m == nil {
		t.Fatalf("the log's filter did not count its rows: its script did not run\n%.2000s", dom)
	}
	if want := fmt.Sprint(rows); string(m[1]) != want || string(m[2]) != want {
		t.Errorf("the filter shows %s of %s rows, the page has %d", m[1], m[2], rows)
	}
	for _, want := range []string{`<section id="summary">`, `<section id="functions">`, `<section id="trees">`, `<section id="pool">`, `<section id="log">`, `<div class="tree" id="tree-d0"><svg`, `<svg class="chart"`, "2.11.0+cu130"} {
		if !bytes.Contains(dom, []byte(want)) {
			t.Errorf("the DOM lacks %q", want)
		}
	}
	ids := map[string]bool{}
	for _, m := range idRE.FindAllSubmatch(dom, -1) {
		ids[string(m[1])] = true
	}
	links := hrefRE.FindAllSubmatch(dom, -1)
	if len(links) < 10 {
		t.Errorf("only %d links in the DOM", len(links))
	}
	for _, l := range links {
		if !ids[string(l[1])] {
			t.Errorf("link #%s goes to nothing in the DOM", l[1])
		}
	}

	shot := filepath.Join(dir, "report.png")
	browse(t, chromium, p, page, "--screenshot="+shot, "--window-size=1200,1600")
	if reqs := p.requests(); len(reqs) > 0 {
		t.Errorf("opening the page made %d request(s) through the proxy: %v", len(reqs), reqs)
	}
	// The proxy sees what a page asks for: one that loads an image from
	// the network is caught.
	leaky := filepath.Join(dir, "leaky.html")
	if err := os.WriteFile(leaky, []byte(`<!DOCTYPE html><img src="http://cgtviz-test.invalid/x.png">`), 0o644); err != nil {
		t.Fatal(err)
	}
	browse(t, chromium, p, leaky, "--dump-dom", "--virtual-time-budget=3000")
	if len(p.requests()) == 0 {
		t.Error("the proxy saw no request from a page that loads an image: it would not see the report's either")
	}
	got, err := os.ReadFile(shot)
	if err != nil {
		t.Fatal(err)
	}
	goldenPNG := filepath.Join("testdata", "report", "train_mlp.png")
	if golden.Updating() {
		golden.Check(t, goldenPNG, got)
		return
	}
	want, err := os.ReadFile(goldenPNG)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	compareLoosely(t, got, want)

}

// palette is a picture's colours, each channel cut to 4 levels, as shares
// of its pixels.
func palette(img image.Image) map[[3]uint8]float64 {
	b := img.Bounds()
	counts := map[[3]uint8]float64{}
	n := 0.0
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			counts[[3]uint8{uint8(r >> 14), uint8(g >> 14), uint8(bl >> 14)}]++
			n++
		}
	}
	for k := range counts {
		counts[k] /= n
	}
	return counts
}

// compareLoosely checks a screenshot against the golden one: the same
// size, the same three dominant colours, and colour shares within 15%
// in all (half the L1 distance of the palettes).
func compareLoosely(t *testing.T, got, want []byte) {
	t.Helper()
	gi, err := png.Decode(bytes.NewReader(got))
	if err != nil {
		t.Fatalf("the screenshot is not a PNG: %v", err)
	}
	wi, err := png.Decode(bytes.NewReader(want))
	if err != nil {
		t.Fatalf("the golden screenshot is not a PNG: %v", err)
	}
	if gi.Bounds() != wi.Bounds() {
		t.Fatalf("screenshot %v, golden %v", gi.Bounds(), wi.Bounds())
	}
	gp, wp := palette(gi), palette(wi)
	dist := 0.0
	for k, v := range gp {
		dist += abs(v - wp[k])
	}
	for k, v := range wp {
		if _, ok := gp[k]; !ok {
			dist += v
		}
	}
	if dist/2 > 0.15 {
		t.Errorf("the screenshot's colours differ from the golden's by %.0f%% of its pixels", 100*dist/2)
	}
	if g, w := dominant(gp, 2), dominant(wp, 2); strings.Join(g, " ") != strings.Join(w, " ") {
		t.Errorf("dominant colours %v, the golden's %v", g, w)
	}
}

func dominant(p map[[3]uint8]float64, n int) []string {
	type kv struct {
		k [3]uint8
		v float64
	}
	var all []kv
	for k, v := range p {
		all = append(all, kv{k, v})
	}
	sort.Slice(all, func(i, j int) bool {
		return all[i].v > all[j].v || (all[i].v == all[j].v && fmt.Sprint(all[i].k) < fmt.Sprint(all[j].k))
	})
	var out []string
	for i := 0; i < n && i < len(all); i++ {
		out = append(out, fmt.Sprint(all[i].k))
	}
	return out
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
