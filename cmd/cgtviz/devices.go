package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/cgtviz/cgtviz/engine/device"
	"github.com/cgtviz/cgtviz/engine/device/sim"
	"github.com/cgtviz/cgtviz/traces"
)

// openDevices opens n devices of the named backend ("sim", "cuda", "auto")
// and returns a function that closes them. mem is the simulated device's
// memory in bytes (simMemory); a GPU has its own.
func openDevices(name string, n int, mem int64) ([]device.Device, func(), error) {
	if n < 1 {
		n = 1
	}
	simDevs := func() []device.Device { return sim.DevicesOf(n, sim.Options{TotalBytes: mem}) }
	switch name {
	case "sim":
		return simDevs(), func() {}, nil
	case "cuda":
		return cudaDevices(n)
	case "auto":
		if hasCUDA {
			return cudaDevices(n)
		}
		return simDevs(), func() {}, nil
	}
	return nil, nil, fmt.Errorf("unknown device %q (want %s)", name, deviceChoices)
}

// deviceMemoryHelp documents --device-memory.
const deviceMemoryHelp = "the simulated device's memory, as `bytes` or with a unit (80GiB, 143771MiB); default: the recorded GPU's when the trace's meta names one whose memory is known, else an H200's (143771 MiB). A trace that asks for more gets PyTorch's CUDA out of memory error at that record"

// addDeviceMemoryFlag defines --device-memory; the value is 0 until set.
func addDeviceMemoryFlag(fs *flag.FlagSet) *int64 {
	mem := new(int64)
	fs.Func("device-memory", deviceMemoryHelp, func(s string) error {
		n, err := parseBytes(s)
		if err != nil {
			return err
		}
		*mem = n
		return nil
	})
	return mem
}

// parseBytes reads a positive byte count: digits, optionally followed by
// B, KiB, MiB, GiB, TiB, KB, MB, GB or TB.
func parseBytes(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{
		{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1},
	}
	num, mult := strings.TrimSpace(s), int64(1)
	for _, u := range units {
		if strings.HasSuffix(num, u.suffix) {
			num, mult = strings.TrimSpace(strings.TrimSuffix(num, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q: want a positive number of bytes, as 150754820096, 143771MiB or 80GiB", s)
	}
	if n > (1<<62)/mult {
		return 0, fmt.Errorf("%q: too large", s)
	}
	return n * mult, nil
}

// simMemory is the simulated device's memory for a trace: the flag's when
// set, else the memory of the GPU the header's meta names (cgtrace writes
// torch.cuda.get_device_name there) when known, else an H200's.
func simMemory(flagBytes int64, hdr traces.Header) int64 {
	if flagBytes > 0 {
		return flagBytes
	}
	var meta struct {
		GPU string `json:"gpu"`
	}
	if len(hdr.Meta) > 0 && json.Unmarshal(hdr.Meta, &meta) == nil {
		if n, ok := sim.GPUTotalBytes(meta.GPU); ok {
			return n
		}
	}
	return sim.H200TotalBytes
}
