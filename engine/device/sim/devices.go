package sim

import "github.com/cgtviz/cgtviz/engine/device"

// H200TotalBytes is the memory of an NVIDIA H200 as its driver reports it
// (nvidia-smi: 143771 MiB, docs/gpu-runs/2026-12-01-h200-device-run-1.txt):
// what a command's simulated device has when the trace names no GPU whose
// memory is known.
const H200TotalBytes int64 = 143771 << 20

// gpuTotalBytes are the GPUs whose memory is known, by the name
// torch.cuda.get_device_name gives (a cgtrace header's meta "gpu").
var gpuTotalBytes = map[string]int64{
	"NVIDIA H200": H200TotalBytes,
}

// GPUTotalBytes returns the memory of the GPU named name, when it is
// known.
func GPUTotalBytes(name string) (int64, bool) {
	n, ok := gpuTotalBytes[name]
	return n, ok
}

// Devices returns n fresh simulated devices (at least one): what a trace
// with "devices": n runs on when no GPU is asked for.
func Devices(n int) []device.Device { return DevicesOf(n, Options{}) }

// DevicesOf returns n fresh simulated devices of opts (at least one).
func DevicesOf(n int, opts Options) []device.Device {
	if n < 1 {
		n = 1
	}
	out := make([]device.Device, n)
	for i := range out {
		out[i] = New(opts)
	}
	return out
}
