// Package cuda is the GPU device: an engine/device.Device on the CUDA driver
// API, through gorgonia.org/cu and a small cgo file of its own (cgt.c) for
// stream capture, graphs and the launch hot path. It owns the kernels of the
// op set as CUDA C (kernels.cu), their PTX (kernels.ptx, embedded), and the
// mapping from a kernel and its form of operand b to a PTX entry (and of
// a launch over strided operands to one of the three strided entries).
//
// Its files read side by side with the simulated device's: device.go (the
// device, its context and streams), memory.go (segments and copies),
// launch.go (kernels), graph.go (capture and graphs), snapshot.go
// (snapshots and clones: time travel on the GPU, the contents of the
// segments copied device to device while every address stays fixed; its
// bookkeeping is registry.go, in pure Go).
// driver.go holds the cgo flags, CUresult errors and graph introspection;
// engine/device/devicetest is the suite both devices pass.
//
// Everything that touches the driver carries the build tag cuda, because
// gorgonia.org/cu initializes the driver when it is loaded and exits the
// process where there is none. Without the tag only the embedded PTX and
// its symbol table (ptx.go) and the bookkeeping of snapshots (registry.go)
// build, so that any machine can check that the PTX defines every kernel
// the op set needs and test how clones share the GPU.
package cuda
