// Package sessions owns a debugging session: a trace, a live engine over its
// devices, and the history that lets a person move back and forth in time.
//
// Going forward applies the next record to the live engine. The history keeps
// a compact summary of every executed record (what it did, to which node,
// which kinds of event it raised) and a bounded set of keyframes (engine
// clones); going back restores the nearest keyframe and re-applies records.
// An engine whose devices cannot be snapshotted (the GPU) has no keyframes:
// going back re-runs the trace from the start on fresh devices. Breakpoints,
// bookmarks and a small JSON save file complete it. The package knows
// nothing of the UI.
package sessions
