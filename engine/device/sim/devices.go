package sim

import "github.com/cgtviz/cgtviz/engine/device"

// Devices returns n fresh simulated devices (at least one): what a trace
// with "devices": n runs on when no GPU is asked for.
func Devices(n int) []device.Device {
	if n < 1 {
		n = 1
	}
	out := make([]device.Device, n)
	for i := range out {
		out[i] = New(Options{})
	}
	return out
}
