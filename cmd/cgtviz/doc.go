// Command cgtviz runs, checks and shows traces of PyTorch's CUDAGraph Trees
// (what torch.compile(mode="reduce-overhead") runs), on a simulated device
// or a GPU.
//
// Usage:
//
//	cgtviz <command> [flags] [args]
//
// Commands:
//
//	check TRACE...     refuse malformed traces before anything runs: every
//	                   problem as file:line: message; exit 0 when all are clean
//	fmt [-w] TRACE     rewrite a trace in canonical form, to stdout or in place
//
// Traces are JSON Lines files ending in .cgt.jsonl; docs/trace-format.md
// describes them. `cgtviz -h` lists the commands, `cgtviz <command> -h`
// the flags of one. Flags may come before or after the trace arguments.
//
// Exit status: 0 on success, 1 when a command fails, 2 for usage errors and
// traces that do not check.
package main
