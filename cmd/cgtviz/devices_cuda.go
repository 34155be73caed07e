//go:build cuda

package main

import (
	"fmt"

	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/engine/device/cuda"
)

// This binary was built with the cuda tag: it drives real GPUs, and "auto"
// picks them.
const (
	hasCUDA       = true
	defaultDevice = "auto"
	deviceChoices = "cuda, sim or auto (cuda when a GPU is there)"
)

// cudaDevices opens GPUs 0..n-1, one per trace device.
func cudaDevices(n int) ([]device.Device, func(), error) {
	var out []device.Device
	closeAll := func() {
		for _, d := range out {
			d.Close()
		}
	}
	for i := 0; i < n; i++ {
		d, err := cuda.New(i)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("open GPU %d (the trace uses %d device(s)): %w", i, n, err)
		}
		out = append(out, d)
	}
	return out, closeAll, nil
}

// backends describes the device backends of this binary for `cgtviz version`.
func backends() []string {
	ver, names, err := cuda.Info()
	if err != nil {
		return []string{"sim", fmt.Sprintf("cuda (unavailable: %v)", err)}
	}
	out := []string{"sim", fmt.Sprintf("cuda (driver %d.%d)", ver/1000, (ver%1000)/10)}
	for i, n := range names {
		out = append(out, fmt.Sprintf("  cuda:%d %s", i, n))
	}
	return out
}
