# What make test runs and how it is tuned, included by the Makefile: the
# packages tested under -race, the fuzz targets, and the knobs whose values
# were measured (BENCHMARKS.md has the cold-cache times behind them).

# ---- the lists --------------------------------------------------------------

# Every fuzz target, as package:Name.
FUZZ_TARGETS := \
	./traces:FuzzReader \
	./traces:FuzzCheck \
	./traces:FuzzIndex \
	./traces:FuzzDecoders \
	./engine:FuzzRun \
	./engine/alloc/pickle:FuzzRoundTrip \
	./engine/alloc/internal/unpickle:FuzzDecode \
	./ui:FuzzCommandLine

# The packages whose code or tests start goroutines, tested under -race.
# The detector finds a race only where two goroutines run, so the others
# (single-goroutine code and tests) are tested without it: under -race the
# engine's tests took 75 s, 13 s without. lint-race checks that every other
# package still starts none (a `go` statement), so none is left out unseen.
# cmd/cgtviz/cgtviz-graphviz is not among them: it renders on one goroutine,
# and its -race build compiled go-graphviz, wazero and the image packages
# under the detector (~20 s of CPU) for a test that can find no race.
RACE_PKGS := ./traces ./engine/device/... ./render/... ./sessions ./ui ./cmd/cgtviz

# Tests of RACE_PKGS that run one goroutine over a big input (memory and
# scale checks), as package:Name: -race made them 8x slower and can find
# nothing in them, so they run in unit-plain instead (TestCheckBoundedMemory
# took 21 s of the race run, 2.5 s without; a 12 MB line, 1 s). The same
# holds for sessions' tests on in-memory traces (no Index, whose scan is
# the package's one goroutine; TestOnGrow 8.4 s under -race, 0.8 s
# without) and sim's device suite (3.7 s of CPU, 0.4 s; TestSnapshotCOW is
# its goroutine test). Each package here is compiled a second time, without
# -race, for these (sim's test build: ~1 s), so a test is here only where
# that costs less CPU than -race does: cmd/cgtviz's tests that only start
# children, slow under -race, were slow for the detector's sleep at exit
# (RACE_GORACE), not for CPU. A name here must be its package's alone among
# RACE_PKGS (-skip takes no package): lint-race checks that, and that each
# is still defined.
SERIAL_TESTS := ./traces:TestCheckBoundedMemory ./traces:TestReaderLongLine ./ui:TestSearchBigTrace \
	./sessions:TestKeyframeCostMeasured ./sessions:TestOnGrow ./sessions:TestLocalFrames ./sessions:TestKeyframeBytesBigTree \
	./engine/device/sim:TestDevice

# Packages that start goroutines in one small part, as package:Test: that
# part's tests run under -race, the rest of the package without (the
# engine's RunStream reads ahead on a goroutine, engine/prefetch.go; its
# whole suite took 75 s under -race). lint-race counts them as covered.
# unit-plain skips them: the -race run is the same test and more.
RACE_TESTS := ./engine:TestRunStreamMatchesRun

# ---- the knobs --------------------------------------------------------------

# Each fuzz target's run in make test: 3 s, on both cores, after everything
# else (CI: 60 s). At 3 s each target still runs 5,000 to 258,000 inputs
# and keeps 6 to 194 new ones (BENCHMARKS.md, make test); at 5 s cold make
# test took 3 min 13 s on the idle machine, at 3 s 2 min 41 s.
FUZZTIME  ?= 3s

# Each new input a fuzzer finds is minimised for at most this many runs:
# with the default (a minute) or even 5 s, the short runs of make test spent
# their whole time minimising (FuzzCheck and FuzzRun ran ~35 inputs in 5 s;
# with 100x, thousands). Crashers are still minimised.
FUZZMINIMIZE ?= 100x

# The packages the fuzz builds instrument for coverage (-d=libfuzzer, what
# go test -fuzz adds): this module's, and go-json's decoder, the trace
# reader's fast path (FuzzDecoders compares it with encoding/json, which
# stays uninstrumented: the charm stack imports it, and its instrumented
# build recompiled all of that for the ui binary). go test -fuzz instruments every
# package of the binary, so each fuzz build compiled the standard library
# and every dependency again (~80 s of CPU, make test's largest build after
# -race); these reuse vet's compiles and recompile only what they name
# (~24 s). A short run also does more: in make test's 5 s FuzzCheck ran
# 93,000 inputs instead of 26,000, FuzzRun 56,000 instead of 19,000 (new
# inputs are now only those that reach new code of this module's or
# go-json's, not of fmt's or strconv's). FUZZ_INSTRUMENT=all instruments everything, as go test
# -fuzz does; .ci/run uses it for its minute-long runs (BENCHMARKS.md has
# each target's inputs in make test's 5 s, before and after). -d=libfuzzer
# is accepted where go test -fuzz instruments (amd64, arm64 and loong64;
# internal/platform.FuzzInstrumented).
FUZZ_INSTRUMENT ?= github.com/cgtviz/cgtviz/... github.com/goccy/go-json github.com/goccy/go-json/internal/decoder

# The race detector's options in make test's -race runs. By default a
# program built with -race sleeps a second when it exits (TSan's
# atexit_sleep_ms: time for other threads' reports of a race at exit to
# print), which every test binary and every child a test starts (cmd/cgtviz
# starts ~30, the TUI and start-up tests) paid in wall time with the CPU
# idle: cmd/cgtviz's tests under -race took 38 s instead of 28. A race found
# while the tests run is reported and fails the test as before.
RACE_GORACE := atexit_sleep_ms=0

# GOGC of the steps that compile or analyse (vet, staticcheck, the helper,
# the fuzz builds) and of the go test runs of unit-race and unit-plain,
# whose compiles are most of their CPU: the compiler and staticcheck spend
# less CPU collecting garbage at 400 (go vet ./traces cold, two runs each:
# 52-54 s -> 42-49 s), for ~420 MB a compile instead of ~300. Their tests inherit it; none of
# them weighs the heap in use, which GOGC changes (the one that does,
# TestCheckBoundedMemory's peak, is in SERIAL_TESTS, run at the default;
# the allocation checks count TotalAlloc, which GOGC does not change).
BUILD_GOGC ?= 400

# What make test adds to GOFLAGS (to go env GOFLAGS: the variable replaces
# the go env file's), for every go command it runs (the tests'
# own go build and go list, and staticcheck's go list -export, included,
# so that every compile has the same cache key): no DWARF, which no test
# reads (a panic's trace comes from the pclntab). The compiler spent 5-20%
# of its CPU writing it (cold builds, two runs each, the machine shared:
# the helper 51-53 s with it, 41-46 s without; ./ui and ./traces 49-52 s,
# 46-49 s), and the linker writes none either (-w). -gcflags given on a go
# command line replace GOFLAGS' for the packages they name, so fuzz-build
# repeats TEST_GCFLAGS after -d=libfuzzer (make fuzz too: only the
# instrumented packages' compile changes).
TEST_GCFLAGS := -dwarf=false
TEST_GOFLAGS := -gcflags=all=$(TEST_GCFLAGS) -ldflags=-w

# ---- derived from the lists -------------------------------------------------

space := $(subst ,, )
# -run/-skip patterns and package lists of SERIAL_TESTS and RACE_TESTS.
serial_re = ^($(subst $(space),|,$(strip $(foreach t,$(SERIAL_TESTS),$(lastword $(subst :, ,$(t)))))))$$
serial_pkgs = $(sort $(foreach t,$(SERIAL_TESTS),$(firstword $(subst :, ,$(t)))))
racetest_re = ^($(subst $(space),|,$(strip $(foreach t,$(RACE_TESTS),$(lastword $(subst :, ,$(t)))))))$$
racetest_pkgs = $(sort $(foreach t,$(RACE_TESTS),$(firstword $(subst :, ,$(t)))))
fuzz_pkgs = $(sort $(foreach t,$(FUZZ_TARGETS),$(firstword $(subst :, ,$(t)))))
fuzz_flags = $(if $(filter all,$(FUZZ_INSTRUMENT)),-fuzz .,$(foreach p,$(FUZZ_INSTRUMENT),-gcflags='$(p)=-d=libfuzzer $(TEST_GCFLAGS)'))
# The -race compile of race-deps: the race tests' packages and everything
# they and their tests import. The main packages are left out: go build
# links them (cgtviz under -race).
race_deps_list = $(GO) list -f '{{if ne .Name "main"}}{{.ImportPath}}{{"\n"}}{{end}}{{range .Imports}}{{.}}{{"\n"}}{{end}}{{range .TestImports}}{{.}}{{"\n"}}{{end}}{{range .XTestImports}}{{.}}{{"\n"}}{{end}}' $(RACE_PKGS) $(racetest_pkgs) | sort -u | grep -vx C
