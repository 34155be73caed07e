#!/usr/bin/env bash
# fuzz_bin.sh PKG: the file name, in make fuzz-build's folder, of PKG's
# instrumented test binary (./engine/alloc/pickle: engine_alloc_pickle.fuzz.test).
# One rule, for the Makefile that links it and tools/fuzz.sh that runs it.
p=${1#./}
printf '%s.fuzz.test\n' "${p//\//_}"
