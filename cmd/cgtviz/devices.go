package main

import (
	"fmt"

	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/engine/device/sim"
)

// openDevices opens n devices of the named backend ("sim", "cuda", "auto")
// and returns a function that closes them.
func openDevices(name string, n int) ([]device.Device, func(), error) {
	if n < 1 {
		n = 1
	}
	switch name {
	case "sim":
		return sim.Devices(n), func() {}, nil
	case "cuda":
		return cudaDevices(n)
	case "auto":
		if hasCUDA {
			return cudaDevices(n)
		}
		return sim.Devices(n), func() {}, nil
	}
	return nil, nil, fmt.Errorf("unknown device %q (want %s)", name, deviceChoices)
}
