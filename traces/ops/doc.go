// Package ops owns the op set of the trace format: which statement kinds
// exist, the shape each one produces, and the CPU reference code that the
// simulated device runs and the GPU kernels are checked against. Kernel
// names here are the names the trace format and the PTX entry points use.
package ops
