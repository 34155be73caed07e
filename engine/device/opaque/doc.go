// Package opaque follows, for a device that holds every value (the GPU),
// which of its bytes hold values the engine does not model: the output of
// an opaque launch (device.Launch.Opaque: a dtype other than float32, a
// view a launch cannot describe), and whatever a kernel or a copy computes
// from such bytes, eagerly or as a node of a replayed graph. The simulated
// device knows this of its own contents (sim/content.go); the GPU computes
// a number for every byte, and the engine must not show the zeros of an
// opaque launch's fill, or what was computed from them, as values. A
// Set answers device.ValueKnower for such a device; a Program is a
// captured graph's effect on it.
package opaque
