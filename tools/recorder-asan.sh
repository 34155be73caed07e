#!/usr/bin/env bash
# recorder-asan.sh: the recorder's tests with its C checks
# (traces/pytorch/cgtrace/_fastpath.c) built under AddressSanitizer and
# UndefinedBehaviorSanitizer: a reference the C keeps too few of (a read
# of a freed object), a write out of bounds or undefined behaviour fails
# the run where the plain build might pass by luck. The build goes into a
# cache folder of its own, under the name the recorder loads
# (fastpath.module_path), so every recording of the tests takes it.
# test_recorder_crash is left out: its programs crash on purpose, and
# ASan turns their SIGSEGV into an abort.
#
#     bash tools/recorder-asan.sh          (make pyunit runs it)
#
# PYTHON names another interpreter to run them under (a command or a
# path: PYTHON=/usr/bin/python3.12).
#
# Skips, saying so, where gcc has no ASan runtime or Python no headers.
set -euo pipefail
cd "$(dirname "$0")/.."
# (the interpreter itself, not a shim script)
if ! py=$("${PYTHON:-python3}" -c 'import sys; print(sys.executable)' 2>/dev/null) || [[ -z $py ]]; then
	echo "recorder-asan: ${PYTHON:-python3} does not run here" >&2
	exit 2
fi
asan=$(gcc -print-file-name=libasan.so 2>/dev/null || true)
ubsan=$(gcc -print-file-name=libubsan.so 2>/dev/null || true)
inc=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
if [[ ! -f $asan || ! -f $ubsan || ! -f $inc/Python.h ]]; then
	echo "recorder-asan: skipped (no ASan or UBSan runtime for gcc, or no Python.h)"
	exit 0
fi
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
export CGTRACE_CACHE=$cache CGTRACE_FAST=1
so=$(PYTHONPATH=traces/pytorch "$py" -c 'from cgtrace import fastpath; print(fastpath.module_path())')
gcc -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer \
	-shared -fPIC -I "$inc" traces/pytorch/cgtrace/_fastpath.c -o "$so"
# (PYTHONMALLOC=malloc: each object its own allocation, so that a read of
# one freed is one ASan sees; pymalloc would reuse it unseen.)
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 PYTHONMALLOC=malloc
export LD_PRELOAD="$asan $ubsan"
# (The sanitized build is the one loaded, or the run says nothing.)
got=$(PYTHONPATH=traces/pytorch "$py" -c 'from cgtrace import fastpath; m, why = fastpath.load(); print(getattr(m, "__file__", why))')
if [[ $got != "$so" ]]; then
	echo "recorder-asan: the recorder loaded $got, not the sanitized $so" >&2
	exit 1
fi
mods=$(cd traces/pytorch/tests && ls test_*.py | grep -v '^test_recorder_crash\.py$' | sed 's/\.py$//')
# shellcheck disable=SC2086
(cd traces/pytorch/tests && "$py" -m unittest $mods)
