// Command cgtviz runs, checks and shows traces of PyTorch's CUDAGraph Trees
// (what torch.compile(mode="reduce-overhead") runs), on a simulated device
// or a GPU.
//
// Usage:
//
//	cgtviz <command> [flags] [args]
//	cgtviz [flags] [TRACE]
//
// The second form, with no command, is the terminal UI (tui) on TRACE, or
// on the embedded demo trace.
//
// Commands:
//
//	tui [TRACE]          step through a trace in the terminal debugger,
//	                     forward and back (no trace: the demo)
//	open SESSION.json    resume a session saved from the UI: trace,
//	                     position, breakpoints, bookmarks
//	run TRACE            run a trace and report what the tree did and why
//	                     (text, --json, or --log as TORCH_LOGS=cudagraphs);
//	                     exit 1 when an expect record failed
//	check TRACE...       refuse malformed traces before anything runs: every
//	                     problem as file:line: message; exit 0 when all are clean
//	fmt [-w] TRACE       rewrite a trace in canonical form, to stdout or in place
//	export TRACE -o F    the tree at a line or step, or one node's CUDA graph,
//	                     as Graphviz DOT or SVG (SVG laid out by the
//	                     cgtviz-graphviz child process)
//	snapshot TRACE -o F  the caching allocator's state and events as a
//	                     PyTorch memory snapshot pickle
//	report TRACE -o F    the tree's story as one self-contained HTML page
//	                     to attach to an issue (summary, functions, trees,
//	                     the pool over time, the decision log)
//	completion SHELL     the completion script for bash, zsh or fish
//	version              the version and the device backends of this binary
//
// Traces are JSON Lines files ending in .cgt.jsonl; docs/trace-format.md
// describes them. TRACE may also be - for standard input; gzip and zstd
// traces are read as they are. `cgtviz -h` lists the commands, `cgtviz
// <command> -h` the flags of one. Flags may come before or after the trace
// arguments. Outputs are written whole or not at all.
//
// Exit status: 0 on success, 1 when a command fails, 2 for usage errors and
// traces that do not check.
package main
