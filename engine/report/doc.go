// Package report builds the `cgtviz run` report, text and JSON (spec
// trace-v1, "Reports"), from what the engine gives every consumer: the
// Steps it returns record by record and its State at the end. It holds no
// engine internals, so the report never says more than a UI could show.
// A streamed run writes each Step as it comes (AppendText, StepWriter),
// appending to a reused buffer: nothing per record is kept or allocated.
// A Collector gathers, from the same Steps and State, what `cgtviz report`'s
// page says beyond that (Analysis: per-function counts and reasons, the
// pool's bytes sampled over the run, a capped decision log, a verdict per
// problem), bounded however long the trace.
package report
