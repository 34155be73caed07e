#!/usr/bin/env bash
# peer-suite-run.sh: PyTorch's own CUDAGraph Trees tests as a client of the
# recorder (issue 13 item 8), in one command on the GPU machine: records every
# test of test/inductor/test_cudagraph_trees.py with cgtrace (one trace a
# test, through ../shared/tools/peer-suite), then replays the traces with
# cgtviz on sim and on cuda, and prints replay.sh's summaries.
#
#     bash tools/gpu/peer-suite-run.sh TEST_FILE OUT [CGTVIZ]
#
# TEST_FILE  a copy of PyTorch's test/inductor/test_cudagraph_trees.py. It is
#            PyTorch's code: keep it out of the project's history (peer/ is
#            ignored for it). The copy the suite was first run with is the
#            stored bbus/pytorch one, commit 35f093e4a6cf111dec974d634d5a331fe93b6126
#            (about the 2.11 branch cut; the search tool's read_file, repo
#            bbus/pytorch, path test/inductor/test_cudagraph_trees.py, 218511
#            characters), written whole into peer/test_cudagraph_trees.py and
#            carried to the GPU machine.
# OUT        a folder for everything: traces/ (one .cgt.jsonl a test,
#            outcomes.jsonl, cgtrace-errors.log), pytest.log, replay-sim.txt,
#            replay-cuda.txt, recorder-errors.txt.
# CGTVIZ     the cgtviz binary built with the cuda tag (default .bin/cgtviz-cuda,
#            from `make gpu-build`); it replays on --device sim and --device cuda.
#
# Environment: PEER_JOBS (pytest-xdist workers, default 8), PEER_TIMEOUT (a
# test's limit in s, default 120), PEER_SUITE (the peer-suite folder, default
# the first of ../shared/tools/peer-suite, shared/tools/peer-suite and
# .bin/peer-suite: copy it into .bin to carry it to the GPU machine), PEER_BASELINE=1
# also runs the suite unrecorded into OUT/baseline (outcomes only), and
# CGTRACE_READS=0 records without `read` records (Tensor's methods untouched).
#
# Exit status: 0 when every trace met every expectation on both devices, 1
# otherwise, 2 on bad arguments or a missing piece.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
if [ $# -lt 2 ] || [ $# -gt 3 ]; then
	echo "usage: $0 TEST_FILE OUT [CGTVIZ]" >&2
	exit 2
fi
test_file=$1
out=$2
cgtviz=${3:-$root/.bin/cgtviz-cuda}
suite=${PEER_SUITE:-}
if [ -z "$suite" ]; then
	for c in "$root/../shared/tools/peer-suite" "$root/shared/tools/peer-suite" "$root/.bin/peer-suite"; do
		[ -f "$c/conftest.py" ] && suite=$c && break
	done
fi
[ -f "$test_file" ] || { echo "peer-suite-run: no test file $test_file (see the header for where it comes from)" >&2; exit 2; }
[ -n "$suite" ] && [ -f "$suite/conftest.py" ] || { echo "peer-suite-run: peer-suite not found (set PEER_SUITE)" >&2; exit 2; }
[ -x "$cgtviz" ] || { echo "peer-suite-run: $cgtviz is not an executable cgtviz (make gpu-build)" >&2; exit 2; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
suite=$(cd "$suite" && pwd)
cgtviz=$(cd "$(dirname "$cgtviz")" && pwd)/$(basename "$cgtviz")
jobs=${PEER_JOBS:-8}
limit=${PEER_TIMEOUT:-120}

python3 -c "import torch, pytest, xdist, pytest_timeout; print('torch', torch.__version__, 'pytest', pytest.__version__)" || exit 2
python3 "$suite/guard_imports.py" "$test_file" "$out/test_cudagraph_trees_guarded.py" || exit 2

pytest_run() { # DEST RECORD
	rm -rf "$1"
	mkdir -p "$1"
	(cd "$out" && PEER_OUT="$1" PEER_RECORD="$2" \
		PYTHONPATH="$root/traces/pytorch:$suite:$suite/shim${PYTHONPATH:+:$PYTHONPATH}" \
		python3 -m pytest test_cudagraph_trees_guarded.py -p conftest -q -n "$jobs" --timeout "$limit" \
		-p no:cacheprovider)
}

if [ "${PEER_BASELINE:-0}" = 1 ]; then
	echo "== baseline (unrecorded)"
	pytest_run "$out/baseline" 0 > "$out/pytest-baseline.log" 2>&1
	tail -1 "$out/pytest-baseline.log"
fi
echo "== recording"
t0=$(date +%s)
pytest_run "$out/traces" 1 > "$out/pytest.log" 2>&1
echo "pytest: $(tail -1 "$out/pytest.log") ($(( $(date +%s) - t0 )) s)"

# The recorder never raises into a test: its own failures are in each
# trace's meta (recorder_error) and in the plugin's log.
python3 - "$out/traces" > "$out/recorder-errors.txt" <<'PY'
import glob, json, os, sys
n = bad = 0
for p in sorted(glob.glob(os.path.join(sys.argv[1], "*.cgt.jsonl"))):
    n += 1
    try:
        with open(p) as fh:
            meta = json.loads(fh.readline()).get("meta", {})
    except (OSError, ValueError) as e:
        print("%s: unreadable header: %s" % (os.path.basename(p), e)); bad += 1; continue
    if meta.get("recorder_error"):
        bad += 1
        print("%s: %s" % (os.path.basename(p), meta["recorder_error"]))
print("%d traces, %d with a recorder error" % (n, bad))
PY
tail -1 "$out/recorder-errors.txt"
[ -s "$out/traces/cgtrace-errors.log" ] && echo "plugin errors: $(grep -c '^===' "$out/traces/cgtrace-errors.log") (traces/cgtrace-errors.log)"

status=0
for dev in sim cuda; do
	# replay.sh calls `CGTVIZ check ...` and `CGTVIZ run ...`: a wrapper
	# puts the device into every run.
	w="$out/cgtviz-$dev"
	printf '#!/bin/sh\nif [ "$1" = run ]; then shift; exec "%s" run --device %s "$@"; fi\nexec "%s" "$@"\n' \
		"$cgtviz" "$dev" "$cgtviz" > "$w"
	chmod +x "$w"
	echo "== replay on $dev"
	bash "$suite/replay.sh" "$w" "$out/traces" > "$out/replay-$dev.txt" 2>&1 || status=1
	tail -2 "$out/replay-$dev.txt"
done
exit $status
