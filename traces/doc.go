// Package traces owns the trace format, version 1 with its compatible
// additions (docs/trace-format.md: invocations, dtypes, strided views, 8
// dims, config records):
// the record types, the streaming Reader that validates each line on its
// own, the Checker that refuses a malformed trace before anything runs (it
// follows names, functions and shapes through the whole file), the canonical
// Writer, an in-memory Trace with a Builder for traces made in code, and the
// "rand" generator every backend shares. Open reads any input the same way
// (a file, "-" for standard input, a pipe; gzip and zstd as they are) and
// OpenFollow a file still being written; a CheckedReader checks each record
// as it streams, so a run acts only on what has checked; an Index reads a
// trace on disk on demand, by record, while a background pass checks it.
// Every problem is a Problem (file:line: message), and a whole file's are
// Problems.
//
// Everything that reads a file is bounded: lines, nesting, names, shapes and
// record counts have limits, so a hostile or broken file is refused in
// bounded time and memory, with a file:line message that names the limit.
package traces
