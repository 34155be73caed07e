//go:build !cuda

package main

import (
	"errors"

	"github.com/cgtviz/cgtviz/engine/device"
)

// This binary was built without the cuda tag: the simulated device only.
const (
	hasCUDA       = false
	defaultDevice = "sim"
	deviceChoices = "sim, auto (this binary has no GPU backend: build with -tags cuda)"
)

func cudaDevices(n int) ([]device.Device, func(), error) {
	return nil, nil, errors.New("this cgtviz was built without GPU support: build it with -tags cuda (make gpu)")
}

// backends describes the device backends of this binary for `cgtviz version`.
func backends() []string { return []string{"sim"} }
