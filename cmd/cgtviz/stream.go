package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/cgtviz/cgtviz/engine"
	"github.com/cgtviz/cgtviz/examples"
	"github.com/cgtviz/cgtviz/traces"
)

// exitInterrupted is the exit status of a command cut short by SIGINT or
// SIGTERM (main makes it 128 + the signal's number, as a shell does).
const exitInterrupted = 130

// interrupted reports whether ctx was cancelled (a signal), and if so says
// so on stderr: the command then returns exitInterrupted, whatever error
// the cancellation made on its way.
func interrupted(ctx context.Context, stderr io.Writer, cmd string) bool {
	if ctx.Err() == nil {
		return false
	}
	fmt.Fprintf(stderr, "cgtviz %s: interrupted\n", cmd)
	return true
}

// traceSummary is what a pass over a whole trace learns: enough to check
// --line and --step against it.
type traceSummary struct {
	file     string
	hdr      traces.Header
	records  int
	lastLine int // of the last record; 1 (the header) when none
}

// rereadable reports whether the trace at path can be read a second time
// from its start: a file (compressed or not), the demo; not standard
// input, a pipe or a FIFO, whose bytes go as they are read.
func rereadable(path string) bool {
	if path == examples.DemoSource {
		return true
	}
	if path == traces.Stdin {
		return false
	}
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// openInputCtx opens a trace for reading as openInput does, its reads
// ending when ctx does.
func openInputCtx(ctx context.Context, path string) (*traces.Input, error) {
	if path == examples.DemoSource {
		return openInput(path)
	}
	return traces.OpenContext(ctx, path)
}

// checkPass reads and checks the whole trace at path in one streaming pass
// (as `cgtviz check` does, in memory bounded by the checker's tables), and
// returns its summary or its problems (traces.Problems).
func checkPass(ctx context.Context, stdout, stderr io.Writer, label, path string) (traceSummary, error) {
	in, err := openInputCtx(ctx, path)
	if err != nil {
		return traceSummary{}, traces.Problems{problemOf(err, path)}
	}
	defer in.Close()
	stop := startProgress(stdout, stderr, label+" (check)", in)
	defer stop()
	cr, err := traces.NewCheckedReader(in, in.Name())
	if err != nil {
		return traceSummary{}, traces.Problems{problemOf(err, in.Name())}
	}
	sum := traceSummary{file: in.Name(), hdr: cr.Header(), lastLine: 1}
	for {
		rec, err := cr.Next()
		if err == io.EOF {
			sum.records = cr.Records()
			return sum, nil
		}
		if err != nil {
			return sum, err
		}
		sum.lastLine = rec.Line
	}
}

// prefixTarget says which records of a trace to run: the first n (n < 0:
// all of them), or those up to and including line (when line > 0).
type prefixTarget struct {
	n, line int
}

func (t prefixTarget) wants(i int, rec *traces.Record) bool {
	switch {
	case t.line > 0:
		return rec.Line <= t.line
	case t.n >= 0:
		return i < t.n
	}
	return true
}

// prefixSource hands the engine the checked records of a trace up to the
// target, then ends (io.EOF). A problem also ends it: the engine stops
// quietly and the problem is the caller's to report (err).
type prefixSource struct {
	cr     *traces.CheckedReader
	target prefixTarget
	sum    traceSummary
	ran    int
	ended  bool  // the trace's end was reached (sum is whole)
	past   bool  // a record past the target was read
	err    error // the trace's problems
}

func (p *prefixSource) Next() (traces.Record, error) {
	if p.past || p.ended || p.err != nil {
		return traces.Record{}, io.EOF
	}
	rec, err := p.cr.Next()
	switch {
	case err == io.EOF:
		p.ended = true
		return traces.Record{}, io.EOF
	case err != nil:
		p.err = err
		return traces.Record{}, io.EOF
	}
	p.sum.lastLine = rec.Line
	if !p.target.wants(p.ran, &rec) {
		p.past = true
		return traces.Record{}, io.EOF
	}
	p.ran++
	return rec, nil
}

// drain checks the rest of the trace after the prefix has run, for its
// problems and its summary.
func (p *prefixSource) drain(ctx context.Context) {
	for !p.ended && p.err == nil {
		if ctx.Err() != nil {
			p.err = ctx.Err()
			return
		}
		rec, err := p.cr.Next()
		switch {
		case err == io.EOF:
			p.ended = true
		case err != nil:
			p.err = err
		default:
			p.sum.lastLine = rec.Line
		}
	}
	p.sum.records = p.cr.Records()
}

// prefixRun is a trace's prefix run on the engine.
type prefixRun struct {
	sum       traceSummary
	e         *engine.Engine
	last      *engine.Step // the last record's step; nil when none ran
	closeDevs func()
}

// errRun marks an error of the engine or the devices (exit 1), as opposed
// to the trace's problems (exit 2) or the target out of range.
type errRun struct{ err error }

func (e errRun) Error() string { return e.err.Error() }
func (e errRun) Unwrap() error { return e.err }

// errTarget is a --line or --step out of the trace's range (exit 2).
type errTarget struct{ msg string }

func (e errTarget) Error() string { return e.msg }

// runTracePrefix runs the records of the trace at path that target asks
// for, on devices of the named backend, streaming: memory is the engine's
// and the checker's, never the trace's. A trace that can be read again (a
// file) is checked whole first, as `cgtviz check` does, so that nothing
// runs unless all of it checks and the checker's limits (tensor bytes,
// total bytes) bound what runs; standard input or a pipe is checked as it
// runs, as `cgtviz run` does, and the rest after the target is still
// checked. targetOf gives the records to run for a summary, or a message
// when the summary has not the records asked for (a summary of -1 records
// is one not known yet: only the target is wanted).
//
// The error is traces.Problems (or a *Problem), errTarget, errRun, or
// ctx's.
func runTracePrefix(ctx context.Context, stdout, stderr io.Writer, label, path string, targetOf func(sum traceSummary) (prefixTarget, string), backend string, handoff engine.Handoff, devMem int64) (*prefixRun, error) {
	var sum *traceSummary
	if rereadable(path) {
		s, err := checkPass(ctx, stdout, stderr, label, path)
		if err != nil {
			return nil, err
		}
		sum = &s
	}
	var target prefixTarget
	if sum != nil {
		t, msg := targetOf(*sum)
		if msg != "" {
			return nil, errTarget{msg}
		}
		target = t
	} else {
		// The range is only known at the end: run what the flags ask
		// for, and check the range after.
		target, _ = targetOf(traceSummary{records: -1})
	}
	in, err := openInputCtx(ctx, path)
	if err != nil {
		return nil, traces.Problems{problemOf(err, path)}
	}
	defer in.Close()
	stop := startProgress(stdout, stderr, label, in)
	defer stop()
	cr, err := traces.NewCheckedReader(in, in.Name())
	if err != nil {
		return nil, traces.Problems{problemOf(err, in.Name())}
	}
	hdr := cr.Header()
	devs, closeDevs, err := openDevices(backend, hdr.Devices, simMemory(devMem, hdr))
	if err != nil {
		return nil, errRun{err}
	}
	src := &prefixSource{cr: cr, target: target, sum: traceSummary{file: in.Name(), hdr: hdr, lastLine: 1}}
	run := &prefixRun{closeDevs: closeDevs}
	e, runErr := engine.Run(ctx, hdr, src, engine.Options{Devices: devs, File: in.Name(), Handoff: handoff}, func(s *engine.Step) bool {
		run.last = s
		return true
	})
	run.e = e
	if sum == nil {
		src.drain(ctx)
		run.sum = src.sum
	} else {
		run.sum = *sum
	}
	switch {
	case ctx.Err() != nil:
		return run, ctx.Err()
	case src.err != nil:
		return run, src.err
	}
	if sum == nil {
		if _, msg := targetOf(run.sum); msg != "" {
			return run, errTarget{msg}
		}
	}
	if runErr != nil {
		return run, errRun{runErr}
	}
	return run, nil
}

// prefixExit prints the error of runTracePrefix and returns the exit
// status: 130 when interrupted, 2 for problems or a target out of range,
// 1 when the run failed.
func prefixExit(ctx context.Context, stderr io.Writer, cmd string, err error) int {
	if interrupted(ctx, stderr, cmd) {
		return exitInterrupted
	}
	var et errTarget
	var er errRun
	switch {
	case errors.As(err, &et):
		fmt.Fprintf(stderr, "cgtviz %s: %s\n", cmd, et.msg)
		return 2
	case errors.As(err, &er):
		fmt.Fprintf(stderr, "cgtviz %s: %v\n", cmd, er.err)
		return 1
	}
	printProblems(stderr, "cgtviz "+cmd+": ", err)
	return 2
}

// lineTarget is the target of --line L over a trace summary: the records
// up to and including line L. A line past the end is refused with the
// range there is, by every command that takes --line.
func lineTarget(sum traceSummary, line int) (prefixTarget, string) {
	if sum.records >= 0 && (line < 1 || line > sum.lastLine) {
		return prefixTarget{}, fmt.Sprintf("--line %d: out of range: %s has lines 1 to %d", line, sum.file, sum.lastLine)
	}
	return prefixTarget{n: -1, line: line}, ""
}

// openChecked is how a streaming command (run, report) starts on a trace:
// the input open returns (a file, "-", a pipe, a followed file) and its
// checked reader, whose header is read. On failure it prints the problem
// as every command does and returns the exit status: 2, or
// exitInterrupted when a signal cut the open short.
func openChecked(ctx context.Context, stderr io.Writer, cmd string, open func() (*traces.Input, error)) (*traces.Input, *traces.CheckedReader, int) {
	in, err := open()
	if err != nil {
		if interrupted(ctx, stderr, cmd) {
			return nil, nil, exitInterrupted
		}
		printProblems(stderr, "", err)
		return nil, nil, 2
	}
	cr, err := traces.NewCheckedReader(in, in.Name())
	if err != nil {
		in.Close()
		printProblems(stderr, "", err)
		return nil, nil, 2
	}
	return in, cr, 0
}

// traceTitle is how a report names its trace: the header's name, else the
// file it came from.
func traceTitle(hdr traces.Header, file string) string {
	if hdr.Name != "" {
		return hdr.Name
	}
	return file
}
