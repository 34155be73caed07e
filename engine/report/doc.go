// Package report builds the `cgtviz run` report, text and JSON (spec
// trace-v1, "Reports"), from what the engine gives every consumer: the
// Steps it returns record by record and its State at the end. It holds no
// engine internals, so the report never says more than a UI could show.
// A streamed run writes each Step as it comes (AppendText, StepWriter),
// appending to a reused buffer: nothing per record is kept or allocated.
package report
