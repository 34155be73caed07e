package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cgtviz/cgtviz/sessions"
)

// TestTUIArgs covers what runTUI and runOpen refuse before they open the
// terminal (TestTUIEndToEnd drives the terminal itself).
func TestTUIArgs(t *testing.T) {
	dir := t.TempDir()
	badSession := filepath.Join(dir, "bad.json")
	for name, data := range map[string]string{
		"bad.json": `{"cgtviz_session": 1, "trace": "demo", "position": 1000}`,
		// A read of an unknown name: the checker refuses it at line 2.
		"bad.cgt.jsonl": "{\"cgtviz\": 1}\n{\"op\": \"read\", \"name\": \"x\"}\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name   string
		run    func(context.Context, []string, io.Writer, io.Writer) int
		args   []string
		code   int
		stderr string
	}{
		{"two traces", runTUI, []string{"a", "b"}, 2, "one trace at most"},
		{"missing trace", runTUI, []string{filepath.Join(dir, "absent.cgt.jsonl")}, 2, "absent.cgt.jsonl"},
		{"bad trace", runTUI, []string{filepath.Join(dir, "bad.cgt.jsonl")}, 2, "bad.cgt.jsonl:2"},
		{"bad device", runTUI, []string{"-device", "tpu"}, 2, `unknown device "tpu"`},
		{"bad flag", runTUI, []string{"-nope"}, 2, "nope"},
		{"follow a pipe", runTUI, []string{"-follow", "-"}, 2, "-follow: -: not a plain file"},
		{"negative keyframe cap", runTUI, []string{"-keyframe-mb", "-1"}, 2, "-keyframe-mb -1"},
		{"open: no file", runOpen, nil, 2, "usage: cgtviz open"},
		{"open: two files", runOpen, []string{"a", "b"}, 2, "usage: cgtviz open"},
		{"open: missing", runOpen, []string{filepath.Join(dir, "absent.json")}, 2, "absent.json"},
		{"open: bad position", runOpen, []string{badSession}, 2, "position 1000 out of range"},
		{"open: bad device", runOpen, []string{"-device", "tpu", badSession}, 2, `unknown device "tpu"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := tc.run(context.Background(), tc.args, &stdout, &stderr)
			if code != tc.code || !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr.String(), tc.code, tc.stderr)
			}
		})
	}
}

// TestTUIExport renders the demo's tree at the checkpoint as SVG, as the e
// key does.
func TestTUIExport(t *testing.T) {
	s := demoAtCheckpoint(t)
	svg, err := tuiExport(context.Background(), s.State(), s.StepAt(30))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", "foo", "fee"} {
		if !bytes.Contains(svg, []byte(want)) {
			t.Errorf("the SVG lacks %q", want)
		}
	}
}

// TestTUIExportGraph renders node #2's CUDA graph at the demo's checkpoint
// through Graphviz, as `:export graph` does; an unknown node is an error.
func TestTUIExportGraph(t *testing.T) {
	s := demoAtCheckpoint(t)
	svg, err := tuiExportGraph(context.Background(), s.State(), 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", "graph_2", "MUL"} {
		if !bytes.Contains(bytes.ToUpper(svg), bytes.ToUpper([]byte(want))) {
			t.Errorf("the SVG lacks %q", want)
		}
	}
	if _, err := tuiExportGraph(context.Background(), s.State(), 0, 9); err == nil || !strings.Contains(err.Error(), "no node #9") {
		t.Errorf("node 9: %v", err)
	}
}

// demoAtCheckpoint is a session on the demo at its checkpoint (step 31).
func demoAtCheckpoint(t *testing.T) *sessions.Session {
	t.Helper()
	tr, err := sessions.OpenTrace(sessions.DemoSource)
	if err != nil {
		t.Fatal(err)
	}
	s, err := sessions.New(tr, sessions.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Goto(31); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestTUIDevices covers -device: auto is the default of tui and open, and
// in a build without the cuda backend it opens simulated devices (with it
// and a GPU, TestTUIDevicesCUDA); cuda there is an error.
func TestTUIDevices(t *testing.T) {
	fs, _ := newTUIFlags()
	if got := fs.Lookup("device").DefValue; got != "auto" {
		t.Errorf("tui -device defaults to %q, want auto", got)
	}
	tests := []struct {
		name    string
		n       int
		prefix  string // of each device's Name; "" when an error is wanted
		wantErr string
	}{
		{"sim", 2, "sim", ""},
		{"auto", 1, autoPrefix, ""},
		{"cuda", 1, cudaPrefix, cudaErr},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			open := tuiDevices(tc.name)
			for call := range 2 { // auto settles at the first call and keeps to it
				devs, err := open(tc.n)
				if tc.wantErr != "" || err != nil {
					if err == nil || !strings.Contains(err.Error(), tc.wantErr) || tc.wantErr == "" {
						t.Fatalf("call %d: err %v, want one saying %q", call, err, tc.wantErr)
					}
					return
				}
				if len(devs) != tc.n {
					t.Fatalf("call %d: %d devices, want %d", call, len(devs), tc.n)
				}
				for _, d := range devs {
					if !strings.HasPrefix(d.Name(), tc.prefix) {
						t.Errorf("call %d: device %q, want %s...", call, d.Name(), tc.prefix)
					}
					d.Close()
				}
			}
		})
	}
}

// TestKeyframeMB maps -keyframe-mb to the session's byte cap.
func TestKeyframeMB(t *testing.T) {
	for _, tc := range []struct{ mb, want int64 }{{0, -1}, {1, 1 << 20}, {sessions.DefaultKeyframeBytes >> 20, sessions.DefaultKeyframeBytes}} {
		if got := keyframeBytes(tc.mb); got != tc.want {
			t.Errorf("keyframeBytes(%d) = %d, want %d", tc.mb, got, tc.want)
		}
	}
}

// TestTUIMemoryLimit: the soft limit is twice the keyframe cap, what a
// file's records may need and what the tree's nodes need (390 MiB for the
// 10,000-node trace of tools/tui-rss.sh at the default cap), so that it
// never binds on a big trace's index and history or a big tree's engine,
// and there is none without a cap.
func TestTUIMemoryLimit(t *testing.T) {
	const kfCap = sessions.DefaultKeyframeBytes
	for _, tc := range []struct {
		name     string
		kf, size int64
		nodes    int
		want     int64
	}{
		{"default cap, empty file", kfCap, 0, 0, 2 * kfCap},
		{"default cap, 10,000-node trace, before it grows", kfCap, 7 << 20, 0, 2 * (kfCap + 9*((7<<20)/14))},
		{"default cap, 10,000-node trace", kfCap, 7 << 20, 10_000, 2 * (kfCap + 9*((7<<20)/14) + 6400*10_000)},
		{"1 MiB cap", 1 << 20, 0, 0, 2 << 20},
		{"50M records (1.85 GB)", kfCap, 1_850_000_000, 10, 2 * (kfCap + 9*(1_850_000_000/14) + 6400*10)},
		{"no cap", -1, 7 << 20, 10_000, 0},
	} {
		if got := tuiMemoryLimit(tc.kf, tc.size, tc.nodes); got != tc.want {
			t.Errorf("%s: tuiMemoryLimit(%d, %d, %d) = %d, want %d", tc.name, tc.kf, tc.size, tc.nodes, got, tc.want)
		}
	}
	if got := tuiMemoryLimit(kfCap, 7<<20, 10_000) >> 20; got < 350 || got > 420 {
		t.Errorf("the limit at 10,000 nodes is %d MiB: want it where tools/tui-rss.sh measured RSS under 500 MB (350-420)", got)
	}
}
