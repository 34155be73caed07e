#!/usr/bin/env bash
# cuda-device.sh: the GPU-machine half of engine/device/cuda's proof. Run it
# from the repository root on a machine with an NVIDIA GPU and nvcc, after
# building the test binaries on the development machine (which needs no GPU,
# only tools/cuda-sdk.sh's header and stub):
#
#   go test -c -tags cuda -o .bin/cudadev.test ./engine/device/cuda
#   go test -c -race -tags cuda -o .bin/cudadev-race.test ./engine/device/cuda
#
# It compiles kernels.cu to PTX into $OUT (copy it back over
# engine/device/cuda/kernels.ptx when it differs), runs the tests with the
# race detector and without, then the benchmarks, and keeps every log in
# $OUT. The exit status is non-zero when nvcc or any test failed.
set -uo pipefail
out=${OUT:-/tmp/cgtviz-gpu}
mkdir -p "$out"
status=0

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
nvcc --version | tail -n 2

if nvcc -arch=compute_75 -ptx -o "$out/kernels.ptx" engine/device/cuda/kernels.cu; then
	if cmp -s "$out/kernels.ptx" engine/device/cuda/kernels.ptx; then
		echo "ptx: the embedded kernels.ptx is nvcc's"
	else
		echo "ptx: the embedded kernels.ptx differs from nvcc's ($out/kernels.ptx)"
	fi
else
	echo "ptx: nvcc failed"
	status=1
fi

for bin in .bin/cudadev-race.test .bin/cudadev.test; do
	if [[ ! -x $bin ]]; then
		echo "$bin: missing (build it first)"
		status=1
		continue
	fi
	log=$out/$(basename "$bin" .test).log
	echo "== $bin -test.v"
	"$bin" -test.v -test.count=1 -test.timeout=150s >"$log" 2>&1 || status=1
	grep -E '^(--- |FAIL|PASS|ok|panic)|--- FAIL|^\s+\S+_test.go:[0-9]+: ' "$log" | tail -n 120
	echo "$(grep -cE '^\s*--- PASS' "$log") passed, $(grep -cE '^\s*--- FAIL' "$log") failed"
done

if [[ -x .bin/cudadev.test ]]; then
	echo "== benchmarks"
	.bin/cudadev.test -test.run='^$' -test.bench=. -test.benchmem -test.benchtime=1s -test.count=3 \
		-test.timeout=150s 2>&1 | tee "$out/bench.log" | grep -E '^(Benchmark|goos|cpu|PASS|FAIL|ok)' || status=1
fi
exit $status
