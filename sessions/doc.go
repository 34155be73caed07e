// Package sessions owns a debugging session: a trace, a live engine over its
// devices, and the history that lets a person move back and forth in time.
//
// The trace is Records: held in memory (New, InMemory) or read on demand
// from its file (NewRecords with Indexed over a traces.Index), whose
// runnable length grows while a background pass checks it or follows a
// file still being written; Horizon says what holds a session at its end.
// The history costs 4 bytes a record (dictionary-coded summaries), and
// next to nothing where the records repeat a loop (Seq, which the UI's
// timeline uses too).
//
// Going forward applies the next record to the live engine. The history keeps
// a compact summary of every executed record (what it did, to which node,
// which kinds of event it raised) and a bounded set of keyframes (engine
// clones); going back restores the nearest keyframe and re-applies records.
// The keyframes are bounded in count and in bytes (Options.KeyframeBytes,
// counted with engine.Engine.SnapshotBytes: device memory on the GPU, its
// upper bound on sim); past either bound their spacing doubles. The GPU
// device clones, so a cuda session goes back through keyframes too; only an
// engine whose devices cannot be cloned has none, and going back then
// re-runs the trace from the start on fresh devices. Breakpoints,
// bookmarks and a small JSON save file complete it; WriteFileAtomic, which
// writes that file whole or not at all, is also what every output of
// cgtviz is written through. The package knows nothing of the UI.
package sessions
