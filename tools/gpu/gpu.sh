#!/usr/bin/env bash
# gpu.sh: every check that needs the GPU machine, as named suites, in one
# entry point (tools/gpu/README.md describes each suite, what it needs and
# what it writes).
#
#     bash tools/gpu/gpu.sh list                  the suites, one line each
#     bash tools/gpu/gpu.sh --dry-run SUITE...     what each would run, run nothing
#     bash tools/gpu/gpu.sh SUITE...               run them, one after the other
#     bash tools/gpu/gpu.sh device engine+peer     A+B: run A and B at once
#
# It runs on the GPU machine from a copy of this repository, where there is
# no Go: the binaries come prebuilt in .bin/ (`make gpu-build` here, then
# carry .bin). Each step runs under a time limit, its output in a log of its
# own; $OUT/summary.txt gets a line a step (and the lines that matter of
# its log), $OUT/gpu-run.tgz every log and output (oracle outputs, recorded
# traces, the PTX nvcc made). $OUT defaults to .bin/gpu-run-DATE.
#
# Exit status: 0 when every step exited 0, 1 when one did not, 2 for a bad
# argument or a missing piece found before anything ran.
set -uo pipefail

self=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")
root=$(cd "$(dirname "$self")/../.." && pwd)
bin=$root/.bin
# (A helper run by a step stays where the step put it.)
[[ ${1:-} == __call ]] || cd "$root" || exit 2

# The suites in the order `list` prints them: name, then what it answers.
suites=(
	"device:the CUDA device alone: its tests (plain and -race), the upload race proof, the committed PTX against nvcc's"
	"engine:the engine's tests on the GPU (same decisions and values as sim), the sessions' GPU test, a node's CUDA graph as the driver prints it"
	"tui:the TUI on the GPU: cmd/cgtviz's TestTUIDevices and the binary stepped in tmux with -device auto"
	"multi:two GPUs (nvidia-h200-x2): the two-device trace, one tree and pool per GPU, decides as on sim"
	"soak:the rare failures, again and again: devices dropped while others work, RunStream against Run under gctrace"
	"bench:the device's and the engine's GPU benchmarks, PyTorch's on the same workloads, BENCHMARKS.md's table"
	"oracle:PyTorch as the judge: its decisions for every example (both oracles), the recompile probes, the random-trace probes, training pairs, our memory snapshot read by its tools"
	"programs:every program of traces/pytorch/programs recorded, each trace replayed on sim and on the GPU; static_generate and killed_train, which die, by crash-trace.py"
	"unchanged:recording changes nothing: each program's graphs unrecorded and recorded, its traces deferred and through the general path, and with the lean paths' C checks and their Python ones"
	"peer:PyTorch's own test_cudagraph_trees.py recorded test by test, every trace replayed on sim and on the GPU"
	"peer-compare:PyTorch's own suite unrecorded and recorded in rounds of one run, each round sharded alike for both modes (same order, same hash seed), outcomes compared test by test (changed by recording, or flaky)"
	"replay:traces already recorded (a peer run's, examples/recorded) replayed on sim and on the GPU"
	"overhead:what recording costs a steady replay loop, with the same input and with a new one at each call, and a training step"
	"peer-seeds:each test of PEER_TESTS alone, a fresh process a run, under hash seeds PEER_SEEDS unrecorded and recorded: PyTorch's seed-dependent failure or recording's (issue 33 item 2)"
	"pool-leak:each test of PEER_TESTS recorded and unrecorded, a process each, what keeps a graph pool's block alive at each tearDown (issue 33 item 2)"
)

usage() {
	cat <<EOF
usage: bash tools/gpu/gpu.sh list
       bash tools/gpu/gpu.sh [--dry-run] SUITE[+SUITE...]...
suites: $(names | paste -sd' ')
EOF
}

names() { printf '%s\n' "${suites[@]}" | cut -d: -f1; }

about() { printf '%s\n' "${suites[@]}" | grep "^$1:" | cut -d: -f2-; }

# ---- running a step ---------------------------------------------------

status=0
dry=0

say() { echo "$*" | tee -a "$sum"; }

# step NAME LIMIT DIR CMD...: CMD, from DIR, for at most LIMIT seconds,
# into $logs/NAME.log; then one summary line (go test -v's counts when the
# log has them) and, on failure, what failed. CMD may be @FN ARGS: a helper
# of this script's (below), run in a bash of its own so that timeout can
# stop it.
step() {
	local name=$1 limit=$2 dir=$3
	shift 3
	if ((dry)); then
		printf '  %-20s %4s s  %s%s\n' "$name" "$limit" "$([[ $dir == . ]] || echo "(cd $dir) ")" "$(shown "$@")"
		return 0
	fi
	local log=$logs/$name.log t0=$SECONDS rc
	if [[ $1 == @* ]]; then
		local fn=${1#@}
		shift
		(cd "$dir" && timeout "$limit" bash "$self" __call "$fn" "$@") >"$log" 2>&1
	else
		(cd "$dir" && timeout "$limit" "$@") >"$log" 2>&1
	fi
	rc=$?
	local took=$((SECONDS - t0)) counts=""
	if grep -qE '^=== RUN' "$log"; then
		counts=", $(grep -cE '^\s*--- PASS' "$log") passed, $(grep -cE '^\s*--- FAIL' "$log") failed, $(grep -cE '^\s*--- SKIP' "$log") skipped"
	fi
	if ((rc == 0)); then
		say "ok   $name: ${took} s$counts"
		return 0
	fi
	status=1
	if ((rc == 124)); then
		say "FAIL $name: timed out after $limit s$counts"
	else
		say "FAIL $name: exit $rc, ${took} s$counts"
	fi
	# What the failing tests said before they failed (which trace, which
	# step: a flaky one is told by its message), else the log's end.
	if grep -qE '^\s*--- FAIL|^panic|^fatal error|DATA RACE' "$log"; then
		grep -B 8 -E '^\s*--- FAIL|^panic|^fatal error|DATA RACE' "$log" | grep -vE '^\s*--- PASS|^=== (RUN|PAUSE|CONT)' |
			head -n 40 | cut -c1-240 | sed 's/^/    /' | tee -a "$sum"
	else
		tail -n 12 "$log" | cut -c1-240 | sed 's/^/    /' | tee -a "$sum"
		tailed=$name
	fi
	return 1
}

# shown CMD...: a step's command as a line of shell.
shown() {
	if [[ $1 == @into ]]; then
		local file=$2
		shift 2
		echo "$(shown "$@") > $file"
		return
	fi
	local out="" a
	for a in "$@"; do
		a=${a#"$root/"}
		[[ $a == *[[:space:]\'\$\|\(\)\*]* ]] && a="'$a'"
		out+="$a "
	done
	echo "${out% }"
}

# show NAME ERE [MAX]: the lines of NAME's log that matter, into the summary.
show() {
	((dry)) && return 0
	[[ ${tailed:-} == "$1" ]] && return 0 # its failure printed its end
	grep -E "$2" "$logs/$1.log" 2>/dev/null | head -n "${3:-40}" | cut -c1-240 | sed 's/^/    /' | tee -a "$sum"
}

# note TEXT: a line of the summary (in a dry run, of the listing).
note() {
	if ((dry)); then echo "  # $*"; else say "     $*"; fi
}

# need FILE...: say which prebuilt pieces are missing (their steps then fail).
need() {
	((dry)) && { echo "  needs: $(printf '%s\n' "$@" | sed "s|^$root/||" | paste -sd' ')"; return 0; }
	local f
	for f in "$@"; do
		[[ -e $f ]] || say "missing ${f#"$root/"}: build it with make gpu-build and carry .bin"
	done
}

# ---- the suites -----------------------------------------------------------

dev=engine/device/cuda

suite_device() {
	need "$bin/cudadev.test" "$bin/cudadev-race.test"
	step ptx 60 . @ptx_check "$logs/kernels.ptx"
	step device-tests 560 $dev "$bin/cudadev.test" -test.v -test.count="${DEVICE_COUNT:-3}" -test.timeout=540s
	step device-tests-race 560 $dev "$bin/cudadev-race.test" -test.v -test.count="${DEVICE_COUNT:-3}" -test.timeout=540s
	# Large uploads followed at once by launches on either stream, downloads
	# right after launches, every element checked: TestDevice/Fill failed 4
	# times in 30 before the upload race was fixed (issue 16).
	step race-proof 560 $dev "$bin/cudadev.test" -test.v -test.run '^TestDevice$/^(Ordering|Fill)$' -test.count=30 -test.timeout=540s
}

suite_engine() {
	need "$bin/engine-cuda.test" "$bin/sessions-cuda.test" "$bin/cgtviz-cuda"
	# ENGINE_RUN narrows the tests; CGTVIZ_GPU_TRACES and
	# CGTVIZ_GPU_ADDITIONS, passed through, size the random traces.
	step engine-cuda "${ENGINE_LIMIT:-560}" engine env CGTVIZ_DEVICE=cuda "$bin/engine-cuda.test" -test.v \
		-test.count="${ENGINE_COUNT:-1}" -test.run "${ENGINE_RUN:-.}" -test.timeout="$((${ENGINE_LIMIT:-560} - 20))s"
	step sessions-cuda 150 sessions "$bin/sessions-cuda.test" -test.v -test.run CUDA -test.count=1
	step run-seed 60 . "$bin/cgtviz-cuda" run --device cuda examples/seed-a-checkpoint.cgt.jsonl
	show run-seed '^(counters|expectations)'
	step graph-dot 60 . "$bin/cgtviz-cuda" export --run-on cuda --graph --node 2 examples/seed-a-checkpoint.cgt.jsonl -o "$logs/seed-a-node2-gpu.dot"
	step graph-svg 60 . "$bin/cgtviz-cuda" export --run-on cuda --graph --node 2 examples/seed-a-checkpoint.cgt.jsonl -o "$logs/seed-a-node2-gpu.svg"
}

suite_tui() {
	need "$bin/cmd-cuda.test" "$bin/cgtviz-cuda"
	step tui-devices 90 cmd/cgtviz "$bin/cmd-cuda.test" -test.v -test.run TestTUIDevices -test.count=1
	step tui-tmux 60 . @tui_walk "$logs/tui.txt"
	show tui-tmux '^status line'
}

suite_multi() {
	need "$bin/cgtviz-cuda" "$bin/sessions-cuda.test" "$bin/engine-cuda.test"
	step s35-check 120 . "$bin/cgtviz-cuda" run --device cuda --check examples/s35-two-devices.cgt.jsonl
	show s35-check '^(counters|expectations)'
	step s35-same 120 . @s35_same "$logs"
	show s35-same '^s35'
	step s35-session 120 sessions "$bin/sessions-cuda.test" -test.v -test.run TestCUDASession -test.count=1
	step s35-engine 300 engine env CGTVIZ_DEVICE=cuda "$bin/engine-cuda.test" -test.v -test.run 'TestCUDAMatchesSim|TestScenarios' -test.count=1
	show s35-engine 's35'
}

suite_soak() {
	need "$bin/cudadev.test" "$bin/engine-cuda.test"
	local drop=${SOAK_DROP_S:-45} beside=${SOAK_BESIDE_S:-30} count=${SOAK_COUNT:-12}
	# Devices opened and dropped with none held between them, so the
	# primary context is reset and made again while the collector gives
	# the dropped ones back; then the same beside a live device.
	step drop-alone $((drop + 60)) $dev env CGTVIZ_DROP_SECONDS="$drop" "$bin/cudadev.test" -test.v -test.run '^TestDevicesOpenedAsTheLastGoes$'
	show drop-alone 'devices (opened|dropped)|iteration' 5
	step drop-beside $((beside + 60)) $dev env CGTVIZ_DROP_SECONDS="$beside" "$bin/cudadev.test" -test.v -test.run '^TestDroppedDevicesWhileAnotherWorks$'
	show drop-beside 'devices (opened|dropped)|iteration' 5
	# Values once read as zeros (docs/gpu-runs/2026-12-01-h200.md, runs 12
	# and 51-54): gctrace puts a failure beside a collection.
	step runstream "${SOAK_STREAM_S:-200}" engine env CGTVIZ_DEVICE=cuda GODEBUG=gctrace=1 "$bin/engine-cuda.test" -test.v \
		-test.run '^TestRunStreamMatchesRun$' -test.count="$count"
	((dry)) || say "     runstream: $(grep -c '^gc ' "$logs/runstream.log") collections"
}

suite_bench() {
	need "$bin/cudadev.test" "$bin/engine-cuda.test"
	step device-bench 300 $dev "$bin/cudadev.test" -test.run '^$' -test.bench GPU -test.benchmem -test.count=3 -test.timeout=290s
	show device-bench '^Benchmark' 60
	step engine-bench 300 engine "$bin/engine-cuda.test" -test.run '^$' -test.bench GPU -test.benchmem -test.count=3 -test.timeout=290s
	show engine-bench '^Benchmark' 60
	step torch-bench 300 . python3 tools/gpu/torch-bench.py
	show torch-bench ':'
	step bench-table 30 . python3 tools/gpu/bench-table.py "$logs/engine-bench.log" "$logs/torch-bench.log"
	show bench-table '^\|' 40
}

suite_oracle() {
	need "$bin/torch-oracle.py" "$bin/torch-oracle2.py" "$bin/cgtviz-cuda"
	local probes=(examples/s37-recompile-limit.cgt.jsonl tools/gpu/probes/*.cgt.jsonl)
	step oracle 300 . @into "$logs/oracle.jsonl" python3 "$bin/torch-oracle.py" examples/*.cgt.jsonl examples/recorded/*.cgt.jsonl
	note "hold the engine to it here: CGTVIZ_ORACLE=\$PWD/oracle.jsonl go test ./engine -run TestOracle (make oracle writes it over the committed one)"
	step oracle2 200 . @into "$logs/oracle2-examples.jsonl" python3 "$bin/torch-oracle2.py" --jobs 8 examples/*.cgt.jsonl
	step probes-oracle1 150 . @into "$logs/probes-oracle1.jsonl" env TORCH_LOGS=recompiles python3 "$bin/torch-oracle.py" "${probes[@]}"
	step probes-oracle2 150 . @into "$logs/probes-oracle2.jsonl" env TORCH_LOGS=recompiles python3 "$bin/torch-oracle2.py" "${probes[@]}"
	step probe-random3 150 . @into "$logs/probe-random3.jsonl" python3 tools/gpu/oracle-probe.py "$bin/torch-oracle.py" engine/testdata/oracle/random3/*.cgt.jsonl
	step probe-random1 120 . @into "$logs/probe-random1.jsonl" python3 tools/gpu/oracle-probe.py "$bin/torch-oracle.py" \
		engine/testdata/oracle/random/r1195.cgt.jsonl engine/testdata/oracle/random/r1256.cgt.jsonl
	note "compare a probe here: CGTVIZ_SHARED_CODE=0 CGTVIZ_ORACLE=\$PWD/probe-random3.jsonl go test ./engine -run TestOracle"
	step train-oracle 120 . @into "$logs/train-oracle.jsonl" python3 tools/gpu/train-oracle.py \
		examples/s24-pending-backward.cgt.jsonl examples/recorded/train_mlp.cgt.jsonl
	# Errors raised inside the tree (issue 33 item 6): the actions and
	# states docs/pytorch-bridge.md reads from 2.11's source, each trace's
	# expectations held by PyTorch (train-oracle gives a raised call its action).
	local raised=(engine/testdata/warmup-out-of-memory.cgt.jsonl engine/testdata/recording-out-of-memory.cgt.jsonl engine/testdata/chained-call-of-a-warm-function.cgt.jsonl
		engine/testdata/chained-call-of-a-mutating-function.cgt.jsonl engine/testdata/static-input-moved-2.11.cgt.jsonl)
	step raised-oracle 150 . @into "$logs/raised-oracle.jsonl" python3 tools/gpu/train-oracle.py "${raised[@]}"
	show raised-oracle 'expectation|Traceback|Error' 20
	note "hold the engine to it here: CGTVIZ_SHARED_CODE=0 CGTVIZ_ORACLE=\$PWD/raised-oracle.jsonl go test ./engine -run 'TestOracle\$'"
	step snapshot 120 . @snapshot_check "$logs"
	show snapshot '^(pickle.load|trace_plot|Total)' 5
}

suite_programs() {
	need "${CGTVIZ:-$bin/cgtviz-cuda}"
	# PROGRAMS names some of record_all.sh's programs (default: all).
	# shellcheck disable=SC2086
	step record 330 . bash traces/pytorch/programs/record_all.sh "$logs/recorded" ${PROGRAMS:-}
	show record 'recording stopped|^record_all' 20
	step replay-recorded 300 . @replay_dirs "$logs/recorded"
	show replay-recorded ': [0-9]+ traces; |^    ' 40
	# A program that dies in PyTorch 2.11 (issue 33 item 1), not in
	# record_all.sh's list: how it ends unrecorded and recorded, what its
	# trace holds, the trace checked and replayed. With every program only.
	if [[ -z ${PROGRAMS:-} ]]; then
		step crash-trace 400 . python3 tools/gpu/crash-trace.py static_generate --out "$logs/crash" \
			--cgtviz "${CGTVIZ:-$bin/cgtviz-cuda}" --device sim --device cuda
		show crash-trace 'recorded:|unrecorded:|whole lines|expectations|FAIL' 12
		# Killed by SIGKILL (the OOM killer's signal) after step 50 of
		# steps longer than the recorder's JOURNAL_MS: every call kept.
		step crash-killed 300 . python3 tools/gpu/crash-trace.py killed_train --out "$logs/killed" \
			--cgtviz "${CGTVIZ:-$bin/cgtviz-cuda}" --device sim -- --die-at 50 --load-ms 30
		show crash-killed 'recorded:|unrecorded:|whole lines|expectations|FAIL' 12
		# The same with the bounds in calls alone (as before the time bound):
		# what they keep of the same run.
		step crash-killed-calls 200 . env CGTRACE_JOURNAL_MS=600000 python3 tools/gpu/crash-trace.py killed_train \
			--recorded-only -- --die-at 50 --load-ms 30
		show crash-killed-calls 'recorded:|whole lines|FAIL' 6
	fi
}

suite_unchanged() {
	# The lean paths' C checks built with this host's compiler and Python
	# and held against their Python reference (the stand-in torch), then
	# on the real programs: the C checks against the Python ones.
	step fastpath 120 . python3 -m unittest discover -v -s traces/pytorch/tests -p test_fastpath.py
	show fastpath 'skipped|FAIL|ERROR|^Ran|^OK' 20
	# The lean paths' C++ reads (cgtrace/_cpp.cpp) built against this
	# torch (into the cache the programs below load it from) and held to
	# torch's own reads on every layout, then timed beside them.
	step cpp-check 300 . python3 tools/gpu/cpp-check.py
	show cpp-check '.' 30
	# The recorder's read of a small tensor's values allocates nothing on
	# the GPU, whatever the tensor's layout.
	step host-values 60 . python3 tools/gpu/host-values.py
	show host-values '.' 8
	# shellcheck disable=SC2086
	step graphs-unchanged 300 . python3 tools/gpu/graphs-unchanged.py --jobs 6 ${PROGRAMS:-}
	show graphs-unchanged '.' 40
	# shellcheck disable=SC2086
	step deferred-same 300 . python3 tools/gpu/deferred-same.py --jobs 4 ${PROGRAMS:-}
	show deferred-same '^[^Ww]' 40
	# The same with the lean paths reading tensors through torch's
	# bindings (CGTRACE_CPP=0), where deferred-same's recordings read them
	# through the C++ module that cpp-check built (the default).
	# shellcheck disable=SC2086
	step deferred-same-bindings 300 . env CGTRACE_CPP=0 python3 tools/gpu/deferred-same.py --jobs 4 ${PROGRAMS:-}
	show deferred-same-bindings '^[^Ww]' 40
	# shellcheck disable=SC2086
	step fast-same 300 . python3 tools/gpu/deferred-same.py --against python --jobs 4 ${PROGRAMS:-}
	show fast-same '^[^Ww]' 40
}

# peer_inputs: the pieces the peer suite needs, found before anything runs
# (exit 2 when one is missing: the suite would only fail on the GPU).
peer_inputs() {
	peer_file=${PEER_FILE:-peer/test_cudagraph_trees.py}
	peer_suite=${PEER_SUITE:-}
	local c
	if [[ -z $peer_suite ]]; then
		for c in "$root/../shared/tools/peer-suite" "$root/shared/tools/peer-suite" "$bin/peer-suite"; do
			[[ -f $c/conftest.py ]] && peer_suite=$c && break
		done
	fi
	peer_cgtviz=${CGTVIZ:-$bin/cgtviz-cuda}
	((dry)) && return 0
	[[ -f $peer_file ]] || { echo "gpu.sh peer: no test file $peer_file (PEER_FILE; tools/gpu/README.md says where it comes from)" >&2; return 2; }
	[[ -n $peer_suite && -f $peer_suite/conftest.py ]] || { echo "gpu.sh peer: peer-suite not found (set PEER_SUITE)" >&2; return 2; }
	# (only the peer suite replays: peer-compare and pool-leak record)
	[[ -z ${need_cgtviz:-} || (-f $peer_cgtviz && -x $peer_cgtviz) ]] || { echo "gpu.sh peer: $peer_cgtviz is not an executable cgtviz (make gpu-build; CGTVIZ)" >&2; return 2; }
	peer_file=$(cd "$(dirname "$peer_file")" && pwd)/$(basename "$peer_file")
	peer_suite=$(cd "$peer_suite" && pwd)
	peer_cgtviz=$(cd "$(dirname "$peer_cgtviz")" && pwd)/$(basename "$peer_cgtviz")
	export peer_file peer_suite peer_cgtviz
}

# peer_begin DIR [MORE]: what every peer suite does first: its folder, what
# it needs (a dry run says; MORE adds to the list), the guarded test file.
peer_begin() {
	((dry)) || mkdir -p "$1"
	((dry)) && echo "  needs: PEER_FILE (${peer_file}), PEER_SUITE (${peer_suite:-../shared/tools/peer-suite})${2:-}"
	step peer-guard 60 . @peer_guard "$1"
	# The recorder's C checks and C++ reads built once before the tests
	# (a recording would otherwise start the C++ build itself, in the
	# background, and use it only from the next recording).
	step cgtrace-build 300 traces/pytorch python3 -m cgtrace build
	show cgtrace-build 'cgtrace:' 3
}

suite_peer() {
	local p=$logs
	peer_begin "$p" ", CGTVIZ (${peer_cgtviz#"$root/"})"
	if [[ ${PEER_BASELINE:-0} == 1 ]]; then
		step peer-baseline 330 . @peer_pytest "$p" baseline 0
		show peer-baseline 'passed|failed' 1
	fi
	step peer-record 330 . @peer_pytest "$p" traces 1
	show peer-record 'passed|failed' 1
	step peer-recorder-errors 60 . @peer_errors "$p/traces"
	show peer-recorder-errors 'with a recorder error|plugin errors'
	step peer-replay-sim 300 . @peer_replay "$p" sim
	show peer-replay-sim '.' 2
	step peer-replay-cuda 300 . @peer_replay "$p" cuda
	show peer-replay-cuda '.' 2
}

# suite_peer_compare is issue 33 item 2: PEER_ROUNDS (2) rounds of the
# suite unrecorded and recorded, then tools/gpu/peer_compare.py names
# each test whose outcome recording changed, and each flaky one. Paired
# (the default): each round is split into PEER_JOBS (8) shards
# (peer_shards.py, shuffled by the round's number, from PEER_ROUND0, 1),
# each shard one pytest process a mode, both modes' processes at once,
# under PYTHONHASHSEED = the round's number: a test runs after the same
# tests under the same seed in both modes, so a pair differs by recording
# alone, and a test that fails after some others fails in both (flaky).
# PEER_PAIRED=0: the rounds under pytest-xdist, alternating, as before
# (a test's neighbours then differ from run to run).
suite_peer-compare() {
	local p=$logs r last
	peer_begin "$p"
	if [[ ${PEER_PAIRED:-1} == 1 ]]; then
		step peer-collect 120 . @peer_collect "$p"
		last=$((${PEER_ROUND0:-1} + ${PEER_ROUNDS:-2} - 1))
		for ((r = ${PEER_ROUND0:-1}; r <= last; r++)); do
			step "peer-round-$r" 560 . @peer_round_pair "$p" "$r"
			show "peer-round-$r" '^(unrecorded|recorded|run again|again:|[0-9]+ tests)' 6
		done
		step peer-compare 60 . @peer_compare_paired "$p" "${PEER_ROUND0:-1}" "$last"
		show peer-compare '^(changed|flaky)|tests in' 40
		return
	fi
	for ((r = 1; r <= ${PEER_ROUNDS:-2}; r++)); do
		step "peer-unrecorded-$r" 330 . @peer_pytest "$p" "unrecorded-$r" 0 "$p/unrecorded-$r.xml"
		show "peer-unrecorded-$r" 'passed|failed' 1
		step "peer-recorded-$r" 330 . @peer_pytest "$p" "recorded-$r" 1 "$p/recorded-$r.xml"
		show "peer-recorded-$r" 'passed|failed' 1
	done
	step peer-compare 60 . @peer_compare_rounds "$p" "${PEER_ROUNDS:-2}"
	show peer-compare '^(changed|flaky)|tests in' 40
}

# suite_pool-leak: the peer tests of PEER_TESTS (default the two that
# recording changed on 2026-12-05) with tools/gpu/pool_leak.py, which
# prints what holds each live block of the graph pools before each
# tearDown (pool_leak below: each test recorded and not, or PEER_K's
# recorded in one process); CGTRACE_DEFER and CGTRACE_READS pass through
# to compare the recorder's paths.
suite_pool-leak() {
	local p=$logs
	peer_begin "$p"
	step pool-leak 300 . @pool_leak "$p"
	show pool-leak '^== |^\[pool-leak\] (test|block|[0-9]+ |before|  no Python)|passed|failed' 60
}

# suite_peer-seeds: a test that recording seemed to change in one round
# (default the two of 2026-12-05's run 5), alone in fresh processes under
# PYTHONHASHSEED 1..8 (PEER_SEEDS), unrecorded and recorded: a failure
# under a seed in both modes is PyTorch's, not recording's.
suite_peer-seeds() {
	local p=$logs
	peer_begin "$p"
	step peer-seeds 540 . @peer_seeds "$p"
	show peer-seeds '.' 80
}

suite_replay() {
	need "${CGTVIZ:-$bin/cgtviz-cuda}"
	# shellcheck disable=SC2086
	step replay 540 . @replay_dirs ${REPLAY_DIRS:-.bin/peer-traces examples/recorded}
	show replay ': [0-9]+ traces; |^    ' 60
}

suite_overhead() {
	local base=()
	if [[ -f $bin/cgtrace_head/__init__.py ]]; then
		base=(--baseline "$bin/cgtrace_head")
	elif [[ -f $bin/cgtrace_head.py ]]; then
		base=(--baseline "$bin/cgtrace_head.py")
	fi
	# OVERHEAD_ARGS replaces the first run's arguments; .bin/cgtrace_head
	# (a package folder) or .bin/cgtrace_head.py (a recorder of one file
	# from before the package), when carried, is another recorder timed in
	# the same rounds.
	# shellcheck disable=SC2086
	step overhead 150 . python3 tools/gpu/recorder-overhead.py "${base[@]}" ${OVERHEAD_ARGS:---iters 3000 --rounds 11 --inside --by-path}
	show overhead '^[^ ]' 45
	# (--profile: where a new-input call's time goes with real torch, its
	# C calls among them, which the CPU stand-in has not: on 2026-12-05
	# the H200 added 106 us a call, the stand-in on a slower CPU 52.)
	step overhead-fresh 150 . python3 tools/gpu/recorder-overhead.py --fresh "${base[@]}" --iters 1000 --rounds 7 --by-path --profile 40
	show overhead-fresh '^[^ ]' 40
	show overhead-fresh '^ +[0-9/]+ +[0-9.]+ ' 40
	# A training step (forward on a new batch, backward: two tree calls),
	# the common case the two loops above do not show (session 15: on the
	# CPU stand-in it adds 235 us a step, every call the general path's).
	step overhead-train 150 . python3 tools/gpu/recorder-overhead.py --train "${base[@]}" --iters 500 --rounds 7 --by-path --why
	show overhead-train '^[^ ]|^    +[0-9]+  ' 60
	# The lean paths' C checks against their Python reference, the same
	# recorder both ways in the same rounds (session 16).
	step overhead-c 150 . python3 tools/gpu/recorder-overhead.py --both --baseline python --iters 1000 --rounds 7
	show overhead-c '^[^ ]' 20
	# The lean paths' C++ reads against torch's bindings, the same
	# recorder both ways in the same rounds (session 18; the C++ module
	# built first).
	step overhead-cpp 400 . python3 tools/gpu/recorder-overhead.py --both --baseline bindings --iters 1000 --rounds 7
	show overhead-cpp '^[^ ]' 20
	# Against wrappers of the tree's per-call entry points that do
	# nothing but call them: what hooking there costs before the
	# recorder does anything (session 19: nothing measurable).
	step overhead-hooks 300 . python3 tools/gpu/recorder-overhead.py --both --train --baseline hooks --iters 1000 --rounds 7
	show overhead-hooks '^[^ ]' 24
	# Against a recorder that only notes each new input (a weak
	# reference with a callback, its pointer and size): the floor under
	# any recorder of new inputs (session 29, H100: 7.3 us added a
	# new-input call, cgtrace 16.2, in the same rounds).
	step overhead-minimal 200 . python3 tools/gpu/recorder-overhead.py --both --baseline minimal --iters 2000 --rounds 5
	show overhead-minimal '^[^ ]' 20
	# The new-input call cut short (its C module built with -DCGT_CUT):
	# what is left with every check but no queue (no _Queued, maps or
	# writing), at its floor (the way in, the new input's reads, a weak
	# reference) and at the Runner's way in alone, each beside the whole
	# recorder in the same rounds: what a rewrite of the rest could take
	# at most (session 39, an H100: 63% and 74% of the whole recorder's
	# mean left by the first two).
	step overhead-cut-checks 150 . python3 tools/gpu/recorder-overhead.py --fresh --baseline cut:checks --iters 2000 --rounds 5
	show overhead-cut-checks '^[^ ]' 16
	step overhead-cut-floor 150 . python3 tools/gpu/recorder-overhead.py --fresh --baseline cut:floor --iters 2000 --rounds 5
	show overhead-cut-floor '^[^ ]' 16
	step overhead-cut-entry 150 . python3 tools/gpu/recorder-overhead.py --fresh --baseline cut:entry --iters 2000 --rounds 5
	show overhead-cut-entry '^[^ ]' 16
	# (a host read of the output after every call or step, as a loop that
	# logs its loss has it: queued behind the lean paths' calls, session 37)
	step overhead-read-fresh 150 . python3 tools/gpu/recorder-overhead.py --fresh --read-every 1 --by-path --iters 2000 --rounds 5
	show overhead-read-fresh '^[^ ]' 24
	step overhead-read-train 200 . python3 tools/gpu/recorder-overhead.py --train --read-every 1 --by-path --iters 500 --rounds 5
	show overhead-read-train '^[^ ]' 24
	# Where a lean call's time goes in the C, part by part (a copy of
	# _fastpath.c built with its marks on; session 20: of a new-input
	# call's 45 us added, 22.5 in the C, the queue's writing the largest).
	step overhead-parts 300 . python3 tools/gpu/recorder-overhead.py --both --parts --sections --iters 1000 --rounds 7
	show overhead-parts '^[^ ]|^  [a-z_]+ ' 90
	# At a real model's count of inputs: 64 layers, 128 parameter tensors
	# (session 20: a training step 3.6 ms unrecorded, 5.7 ms added).
	step overhead-deep 400 . python3 tools/gpu/recorder-overhead.py --both --train --layers 64 --dim 512 --iters 200 --rounds 5
	show overhead-deep '^[^ ]' 30
}

# ---- helpers run by steps (bash gpu.sh __call FN ARGS) ----------------------

# into FILE CMD...: CMD's standard output into FILE (its errors in the log).
into() {
	local file=$1
	shift
	"$@" >"$file"
	local rc=$?
	echo "$(wc -l <"$file") lines into $(basename "$file")"
	return $rc
}

ptx_check() {
	command -v nvcc >/dev/null || { echo "no nvcc here: the PTX is not checked"; return 0; }
	nvcc --version | tail -n 2
	nvcc -arch=compute_75 -ptx -o "$1" $dev/kernels.cu || return 1
	if cmp -s "$1" $dev/kernels.ptx; then
		echo "the committed kernels.ptx is nvcc's"
	else
		echo "the committed kernels.ptx differs from nvcc's: copy kernels.ptx from gpu-run.tgz over $dev/kernels.ptx"
		return 1
	fi
}

# replay_dirs DIR...: every trace of each DIR on sim and on the GPU
# (JOBS at a time), a line a trace; then, last, the traces that missed an
# expectation and a summary a folder. Exit 1 when a trace missed one on
# either device.
replay_dirs() {
	local cg=${CGTVIZ:-$bin/cgtviz-cuda} dir rc=0 lines summary
	lines=$(mktemp)
	summary=$(mktemp)
	for dir in "$@"; do
		ls "$dir"/*.cgt.jsonl 2>/dev/null |
			CG=$cg xargs -P "${JOBS:-8}" -I{} sh -c 's=$(timeout 60 "$CG" run "{}" 2>&1 | grep "^expectations" | head -n 1); g=$(timeout 60 "$CG" run --device cuda "{}" 2>&1 | grep "^expectations\|^cgtviz" | head -n 1); echo "$(basename "{}") | sim ${s:-no expectations line} | cuda ${g:-no expectations line}"' >"$lines"
		local n simok cudaok
		n=$(wc -l <"$lines")
		simok=$(grep -c '| sim expectations: [0-9]* passed, 0 failed' "$lines")
		cudaok=$(grep -c '| cuda expectations: [0-9]* passed, 0 failed' "$lines")
		sort "$lines"
		{
			grep -v '| sim expectations: [0-9]* passed, 0 failed | cuda expectations: [0-9]* passed, 0 failed' "$lines" | sort | cut -c1-300 | sed 's/^/    /'
			echo "$dir: $n traces; every expectation met: $simok on sim, $cudaok on cuda"
		} >>"$summary"
		((n == simok && n == cudaok)) || rc=1
	done
	cat "$summary"
	rm -f "$lines" "$summary"
	return $rc
}

# tui_walk FILE: the cuda binary's TUI in tmux (-device auto, the default),
# five steps, the screen into FILE; the status line must name the GPU.
tui_walk() {
	command -v tmux >/dev/null || { echo "no tmux here"; return 1; }
	tmux -L cgt new-session -d -x 140 -y 40 "$bin/cgtviz-cuda examples/seed-a-checkpoint.cgt.jsonl; sleep 30"
	sleep 3
	local k
	for k in n n n n n; do
		tmux -L cgt send-keys "$k"
		sleep 0.3
	done
	sleep 1
	tmux -L cgt capture-pane -p >"$1"
	tmux -L cgt kill-server
	local line
	line=$(grep -o 'cuda:0[^│]*' "$1" | head -n 1)
	echo "status line: ${line:-no cuda:0 on the screen}"
	[[ -n $line ]]
}

# s35_same DIR: the two-device trace's report on sim and on the GPU make
# the same decisions.
s35_same() {
	"$bin/cgtviz-cuda" run --device sim examples/s35-two-devices.cgt.jsonl --json >"$1/s35-sim.json" &&
		"$bin/cgtviz-cuda" run --device cuda examples/s35-two-devices.cgt.jsonl --json >"$1/s35-cuda.json" || return 1
	python3 - "$1/s35-sim.json" "$1/s35-cuda.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
strip = lambda r: [(s["line"], s.get("action"), s.get("node"), s.get("parent"), s.get("checkpoint"), s["error"]) for s in r["steps"]]
same = strip(a) == strip(b)
print("s35 sim vs cuda reports:", "same decisions" if same else "DIFFERENT", "| devices:", b["device"], "| nodes:", [(n["device"], n["id"], n["fn"]) for n in b["nodes"]])
sys.exit(0 if same else 1)
PY
}

# snapshot_check DIR: a memory snapshot of cgtviz's opened by PyTorch's
# own tools (pickle.load, torch.cuda._memory_viz stats and trace_plot).
snapshot_check() {
	"$bin/cgtviz-cuda" snapshot examples/seed-a-checkpoint.cgt.jsonl --line 33 -o "$1/seed-a.pickle" || return 1
	python3 - "$1/seed-a.pickle" <<'PY' || return 1
import pickle, sys
s = pickle.load(open(sys.argv[1], "rb"))
print("pickle.load: %d segments, %d trace entries, pools %s" % (len(s["segments"]), len(s["device_traces"][0]), sorted({seg["segment_pool_id"] for seg in s["segments"]})))
PY
	python3 -m torch.cuda._memory_viz stats "$1/seed-a.pickle" | tail -n 5 || return 1
	python3 -m torch.cuda._memory_viz trace_plot "$1/seed-a.pickle" -o "$1/seed-a-trace.html" &&
		echo "trace_plot: $(wc -c <"$1/seed-a-trace.html") bytes of HTML"
}

# peer_guard DIR: PyTorch's test file with its imports guarded, into DIR.
peer_guard() {
	python3 -c "import torch, pytest, xdist, pytest_timeout; print('torch', torch.__version__, 'pytest', pytest.__version__)" &&
		python3 "$peer_suite/guard_imports.py" "$peer_file" "$1/test_cudagraph_trees_guarded.py"
}

# peer_compare_rounds DIR N: the N unrecorded and N recorded rounds'
# JUnit XML compared test by test.
peer_compare_rounds() {
	local u=() r=() i
	for ((i = 1; i <= $2; i++)); do
		u+=("$1/unrecorded-$i.xml")
		r+=("$1/recorded-$i.xml")
	done
	python3 "$root/tools/gpu/peer_compare.py" --unrecorded "${u[@]}" --recorded "${r[@]}"
}

# peer_collect DIR: the guarded suite's test ids into DIR/collected-ids.txt
# (PEER_IDS: an earlier run's collected-ids.txt of the same test file,
# taken as it is: collecting imports torch and the suite, about a minute).
peer_collect() {
	if [[ -n ${PEER_IDS:-} ]]; then
		grep '::' "$PEER_IDS" >"$1/collected-ids.txt" || { echo "PEER_IDS $PEER_IDS: no test ids"; return 1; }
		echo "$(wc -l <"$1/collected-ids.txt") tests from $PEER_IDS"
		return 0
	fi
	cd "$1" || return 1
	PYTHONPATH="$root/traces/pytorch:$peer_suite:$peer_suite/shim${PYTHONPATH:+:$PYTHONPATH}" \
		python3 -m pytest test_cudagraph_trees_guarded.py --collect-only -q -p no:cacheprovider >collect.txt 2>&1
	grep '::' collect.txt >collected-ids.txt
	echo "$(wc -l <collected-ids.txt) tests collected"
	[[ -s collected-ids.txt ]]
}

# peer_round_pair DIR R: round R, paired: its shards (peer_shards.py), each
# a pytest process unrecorded (DIR/unrecorded-R/K) and one recorded
# (DIR/recorded-R/K), all at once, PYTHONHASHSEED=R; each shard's JUnit
# XML DIR/MODE-R/K.xml. Then each mode's counts.
peer_round_pair() {
	local d=$1 r=$2 f k m mode pids=()
	python3 "$root/tools/gpu/peer_shards.py" --ids "$d/collected-ids.txt" --shards "${PEER_JOBS:-8}" --round "$r" --out "$d/shards-$r" || return 1
	cd "$d" || return 1
	for f in "$d/shards-$r"/shard-*.txt; do
		k=$(basename "$f" .txt)
		for m in 0 1; do
			mode=$([[ $m == 1 ]] && echo recorded || echo unrecorded)
			# shellcheck disable=SC2046
			peer_ids_run "$d/$mode-$r/$k" "$r" "$m" $(cat "$f") &
			pids+=($!)
		done
	done
	for k in "${pids[@]}"; do wait "$k"; done
	for mode in unrecorded recorded; do
		echo "$mode: $(cat "$d/$mode-$r"/shard-*.log | grep -Eo '[0-9]+ (passed|failed|skipped|error|errors)' |
			awk '{ n[$2] += $1 } END { for (k in n) printf "%d %s, ", n[k], k }')"
	done
	# Each test whose pair differs, run again in both modes after the same
	# tests of its shard under the same seed (its shard's lines up to it):
	# a difference the rerun does not repeat is the machine's, not
	# recording's (peer_compare.py --again-*).
	local tid name cls prefix n=0
	pids=()
	python3 "$root/tools/gpu/peer_compare.py" --paired --list-changed --unrecorded "$(peer_xmls "$d/unrecorded-$r")" \
		--recorded "$(peer_xmls "$d/recorded-$r")" >"$d/changed-$r.txt" || return 1
	while read -r tid; do
		[[ -n $tid ]] || continue
		name=${tid##*::}
		cls=${tid%::*}
		cls=${cls##*.}
		# Its shard's ids up to it (the id found by its end, compared as
		# text: a test name may hold [ ] or .).
		prefix=$(awk -v s="::$cls::$name" 'FNR == 1 { ids = "" } { ids = ids $0 "\n" }
			substr($0, length($0) - length(s) + 1) == s { printf "%s", ids; exit }' "$d/shards-$r"/shard-*.txt)
		[[ -n $prefix ]] || { echo "again: $tid is in no shard of round $r"; continue; }
		n=$((n + 1))
		for m in 0 1; do
			mode=$([[ $m == 1 ]] && echo recorded || echo unrecorded)
			# shellcheck disable=SC2086
			peer_ids_run "$d/$mode-$r-again/$n" "$r" "$m" $prefix &
			pids+=($!)
		done
	done <"$d/changed-$r.txt"
	for k in "${pids[@]}"; do wait "$k"; done
	((n)) && echo "run again (same order and seed): $n test(s) whose pair differed"
	python3 "$root/tools/gpu/peer_compare.py" --paired --unrecorded "$(peer_xmls "$d/unrecorded-$r")" \
		--recorded "$(peer_xmls "$d/recorded-$r")" --again-unrecorded "$(peer_again "$d/unrecorded-$r-again")" \
		--again-recorded "$(peer_again "$d/recorded-$r-again")" | tail -n 1
	return 0
}

# peer_again DIR: a round's reruns of one mode (DIR/N.xml) joined by
# commas, or none.
peer_again() {
	local x=("$1"/*.xml)
	[[ -e ${x[0]} ]] || { echo none; return; }
	local IFS=,
	echo "${x[*]}"
}

# peer_ids_run OUT SEED RECORD ID...: the tests ID... in one pytest process,
# in that order, under PYTHONHASHSEED=SEED, recorded when RECORD is 1 (the
# peer plugin's PEER_RECORD), its traces in the folder OUT, its JUnit XML
# OUT.xml and its output OUT.log.
peer_ids_run() {
	local out=$1 seed=$2 record=$3
	shift 3
	mkdir -p "$out"
	PYTHONHASHSEED=$seed PEER_OUT="$out" PEER_RECORD=$record \
		PYTHONPATH="$root/traces/pytorch:$peer_suite:$peer_suite/shim${PYTHONPATH:+:$PYTHONPATH}" \
		python3 -m pytest "$@" -p conftest -q -p no:cacheprovider --timeout "${PEER_TIMEOUT:-120}" \
		--junitxml "$out.xml" >"$out.log" 2>&1
}

# peer_xmls DIR: DIR's shard XMLs joined by commas (one round of a mode).
peer_xmls() {
	local x=("$1"/shard-*.xml)
	local IFS=,
	echo "${x[*]}"
}

# peer_compare_paired DIR FIRST LAST: rounds FIRST..LAST compared, paired,
# with their reruns.
peer_compare_paired() {
	local u=() r=() ua=() ra=() i
	for ((i = $2; i <= $3; i++)); do
		u+=("$(peer_xmls "$1/unrecorded-$i")")
		r+=("$(peer_xmls "$1/recorded-$i")")
		ua+=("$(peer_again "$1/unrecorded-$i-again")")
		ra+=("$(peer_again "$1/recorded-$i-again")")
	done
	python3 "$root/tools/gpu/peer_compare.py" --paired --unrecorded "${u[@]}" --recorded "${r[@]}" \
		--again-unrecorded "${ua[@]}" --again-recorded "${ra[@]}"
}

# peer_pytest DIR DEST RECORD [JUNIT]: the guarded suite under pytest, PEER_JOBS
# workers, one trace a test into DIR/DEST when RECORD is 1.
peer_pytest() {
	rm -rf "${1:?}/$2"
	mkdir -p "$1/$2"
	cd "$1" && PEER_OUT="$1/$2" PEER_RECORD="$3" \
		PYTHONPATH="$root/traces/pytorch:$peer_suite:$peer_suite/shim${PYTHONPATH:+:$PYTHONPATH}" \
		python3 -m pytest test_cudagraph_trees_guarded.py -p conftest -q -n "${PEER_JOBS:-8}" --timeout "${PEER_TIMEOUT:-120}" \
		-p no:cacheprovider -rfE ${4:+--junitxml "$4"}
}

# pool_leak DIR: pool_leak.py over each test of PEER_TESTS (default the
# two recording changed) recorded and unrecorded, each in a process of its
# own, the four at once; or, where PEER_K is set, the tests it selects
# recorded in one process. Each run's log is DIR/pool-leak/NAME.log.
pool_leak() {
	local d=$1/pool-leak t m pids=() rc=0 logsin=()
	mkdir -p "$d"
	cd "$1" || return 1
	export PYTHONPATH="$root/traces/pytorch:$peer_suite:$peer_suite/shim:$root/tools/gpu${PYTHONPATH:+:$PYTHONPATH}"
	if [[ -n ${PEER_K:-} ]]; then
		PEER_OUT="$d" PEER_RECORD=1 python3 -m pytest test_cudagraph_trees_guarded.py -p conftest -p pool_leak -q -s \
			-p no:cacheprovider -k "$PEER_K"
		return
	fi
	for t in ${PEER_TESTS:-test_fallback_to_eager_if_recompiling_too_many_times test_fallback_to_eager_if_recompiling_too_many_times_due_to_cudagraph_managed_tensor}; do
		for m in 1 0; do
			mkdir -p "$d/$t-$m"
			PEER_OUT="$d/$t-$m" PEER_RECORD=$m python3 -m pytest "test_cudagraph_trees_guarded.py::CudaGraphTreeTests::$t" \
				-p conftest -p pool_leak -q -s -p no:cacheprovider >"$d/$t-$m.log" 2>&1 &
			pids+=($!)
			logsin+=("$d/$t-$m.log")
		done
	done
	for t in "${pids[@]}"; do wait "$t" || rc=1; done
	for t in "${logsin[@]}"; do
		echo "== $(basename "$t" .log) (-1 recorded, -0 not)"
		grep -E '^\[pool-leak\]|passed|failed|Error' "$t" | head -80
	done
	return $rc
}

# peer_seeds DIR: tools/gpu/peer_seeds.py over PEER_TESTS in DIR.
peer_seeds() {
	cd "$1" || return 1
	export PYTHONPATH="$root/traces/pytorch:$peer_suite:$peer_suite/shim${PYTHONPATH:+:$PYTHONPATH}"
	# shellcheck disable=SC2086
	python3 "$root/tools/gpu/peer_seeds.py" --file test_cudagraph_trees_guarded.py \
		--tests ${PEER_TESTS:-test_graph_partition_reorder_cpu_and_gpu_interleave test_graph_partition_user_defined_triton_kernel_reuse} \
		--seeds "${PEER_SEEDS:-1-8}" --repeat "${PEER_REPEAT:-1}" --jobs "${PEER_JOBS:-16}" --out "$1/peer-seeds"
}

# peer_errors DIR: the recorder never raises into a test; its own failures
# are in each trace's meta (recorder_error) and in the plugin's log.
peer_errors() {
	python3 - "$1" <<'PY'
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
sys.exit(1 if bad else 0)
PY
	local rc=$?
	[[ -s $1/cgtrace-errors.log ]] && echo "plugin errors: $(grep -c '^===' "$1/cgtrace-errors.log") (peer/traces/cgtrace-errors.log)"
	return $rc
}

# peer_replay DIR DEV: the suite's replay.sh over DIR/traces on DEV (a
# wrapper puts --device into every `cgtviz run`).
peer_replay() {
	local w=$1/cgtviz-$2
	printf '#!/bin/sh\nif [ "$1" = run ]; then shift; exec "%s" run --device %s "$@"; fi\nexec "%s" "$@"\n' \
		"$peer_cgtviz" "$2" "$peer_cgtviz" >"$w"
	chmod +x "$w"
	bash "$peer_suite/replay.sh" "$w" "$1/traces" >"$1/replay-$2.txt" 2>&1
	local rc=$?
	tail -n 2 "$1/replay-$2.txt"
	return $rc
}

# ---- main -----------------------------------------------------------------

if [[ ${1:-} == __call ]]; then
	fn=$2
	shift 2
	"$fn" "$@"
	exit
fi

case ${1:-} in
"")
	usage >&2
	exit 2
	;;
-h | --help | help)
	usage
	exit 0
	;;
list)
	printf '%s\n' "${suites[@]}" | awk -F: '{ n = $1; sub(/^[^:]*:/, ""); printf "%-10s %s\n", n, $0 }'
	exit 0
	;;
--dry-run | -n)
	dry=1
	shift
	;;
esac
[[ $# -gt 0 ]] || { usage >&2; exit 2; }
for arg in "$@"; do
	for s in ${arg//+/ }; do
		names | grep -qx "$s" || { echo "gpu.sh: unknown suite $s" >&2; usage >&2; exit 2; }
		if [[ $s == peer || $s == peer-compare || $s == pool-leak || $s == peer-seeds ]]; then
			[[ $s == peer ]] && need_cgtviz=1
			peer_inputs || exit 2
		fi
	done
done

# run_suite NAME: one suite, its logs in $work/NAME/.
run_suite() {
	if ((dry)); then
		logs=LOGS/$1
	else
		logs=$work/$1
		mkdir -p "$logs"
	fi
	if ((dry)); then echo "== $1: $(about "$1")"; else say "== $1"; fi
	"suite_$1"
}

if ((dry)); then
	sum=/dev/null
	for arg in "$@"; do
		[[ $arg == *+* ]] && echo "# at once: ${arg//+/, }"
		for s in ${arg//+/ }; do
			run_suite "$s"
		done
	done
	exit 0
fi

OUT=${OUT:-$bin/gpu-run-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
work=$(mktemp -d)
trap 'tar -czf "$OUT/gpu-run.tgz" -C "$work" . && rm -rf "$work"' EXIT
sum=$OUT/summary.txt
: >"$sum"
export PYTHONUNBUFFERED=1
say "gpu.sh $* $(date -u +%Y-%m-%dT%H:%M:%SZ) commit $(git -C "$root" log -1 --format=%h 2>/dev/null || echo unknown)"
say "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -n 4 | paste -sd';')"

for arg in "$@"; do
	if [[ $arg != *+* ]]; then
		run_suite "$arg"
		continue
	fi
	# A+B: each suite in a process of its own, its summary printed whole
	# when all have ended.
	pids=()
	for s in ${arg//+/ }; do
		(
			sum=$work/$s.summary
			status=0
			run_suite "$s" >/dev/null
			exit $status
		) &
		pids+=($!)
	done
	for p in "${pids[@]}"; do
		wait "$p" || status=1
	done
	for s in ${arg//+/ }; do
		cat "$work/$s.summary" | tee -a "$sum"
	done
done
say "done $(date -u +%T): $([[ $status == 0 ]] && echo "every step passed" || echo "a step failed"); logs and outputs in $OUT/gpu-run.tgz"
exit $status
