# cgtviz: `make run` opens the TUI on the embedded demo trace (simulated
# device); `make test` is what CI runs. See README.md.

GO        ?= go
BIN       := .bin
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X main.version=$(VERSION)
# Each fuzz target's run in make test: 3 s, on both cores, after everything
# else (CI: 60 s). At 3 s each target still runs 5,000 to 258,000 inputs
# and keeps 6 to 194 new ones (BENCHMARKS.md, make test); at 5 s cold make
# test took 3 min 13 s on the idle machine, at 3 s 2 min 41 s.
FUZZTIME  ?= 3s
# staticcheck, pinned. It is built once a machine (from the module proxy;
# CI needs nothing installed beforehand) into the user's cache folder
# (TOOLS: $XDG_CACHE_HOME or ~/.cache, /cgtviz; .tools without a home),
# named by its version and Go's, so that neither `go clean -cache` nor a
# fresh clone builds it again: `go run pkg@version` kept it only in the
# build cache, and building it took ~57 s of CPU, an eighth of a cold
# make test's (BENCHMARKS.md). Like tmux for the TUI's tests, it is a tool
# of the machine's, not a part of the build.
STATICCHECK_VERSION := v0.8.2
GOVERSION := $(shell $(GO) env GOVERSION 2>/dev/null)
TOOLS ?= $(if $(HOME),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/cgtviz,.tools)
STATICCHECK_BIN := $(TOOLS)/staticcheck-$(STATICCHECK_VERSION)-$(GOVERSION)
STATICCHECK ?= $(STATICCHECK_BIN)
# Each new input a fuzzer finds is minimised for at most this many runs:
# with the default (a minute) or even 5 s, the short runs of make test spent
# their whole time minimising (FuzzCheck and FuzzRun ran ~35 inputs in 5 s;
# with 100x, thousands). Crashers are still minimised.
FUZZMINIMIZE ?= 100x

# Where fuzz-build links the fuzz targets' test binaries (*.test, which git
# ignores): not in $(BIN), which is carried to the GPU machine.
FUZZ_BIN := .fuzz
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
fuzz_flags = $(if $(filter all,$(FUZZ_INSTRUMENT)),-fuzz .,$(foreach p,$(FUZZ_INSTRUMENT),-gcflags='$(p)=-d=libfuzzer $(TEST_GCFLAGS)'))
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
serial_re = ^($(subst $(space),|,$(strip $(foreach t,$(SERIAL_TESTS),$(lastword $(subst :, ,$(t)))))))$$
serial_pkgs = $(sort $(foreach t,$(SERIAL_TESTS),$(firstword $(subst :, ,$(t)))))
# Packages that start goroutines in one small part, as package:Test: that
# part's tests run under -race, the rest of the package without (the
# engine's RunStream reads ahead on a goroutine, engine/prefetch.go; its
# whole suite took 75 s under -race). lint-race counts them as covered.
# unit-plain skips them: the -race run is the same test and more.
RACE_TESTS := ./engine:TestRunStreamMatchesRun
# The race detector's options in make test's -race runs. By default a
# program built with -race sleeps a second when it exits (TSan's
# atexit_sleep_ms: time for other threads' reports of a race at exit to
# print), which every test binary and every child a test starts (cmd/cgtviz
# starts ~30, the TUI and start-up tests) paid in wall time with the CPU
# idle: cmd/cgtviz's tests under -race took 38 s instead of 28. A race found
# while the tests run is reported and fails the test as before.
RACE_GORACE := atexit_sleep_ms=0
racetest_re = ^($(subst $(space),|,$(strip $(foreach t,$(RACE_TESTS),$(lastword $(subst :, ,$(t)))))))$$
racetest_pkgs = $(sort $(foreach t,$(RACE_TESTS),$(firstword $(subst :, ,$(t)))))
space := $(subst ,, )
# Flags of every go test below; make test sets -vet=off, as its lint has
# run go vet ./..., whose analyzers include the subset go test runs.
TESTFLAGS ?=
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

# What the tests that render SVG (render's, cmd/cgtviz's) run: built once
# here and named to them by $CGTVIZ_GRAPHVIZ (unit-race-pkgs and
# unit-serial, whose packages may render; ./cgtviz finds its own beside
# it). Built without -trimpath, which is part of every
# compile's cache key: with it, the helper's build compiled the standard
# library, wazero and go-graphviz (~45 s of CPU) a second time, beside
# go vet's and the tests' compiles; without, vet finds them compiled.
GRAPHVIZ_BIN := $(BIN)/cgtviz-graphviz

.PHONY: run test test-jobs staticcheck-bin build gpu lint gofmt vet staticcheck lint-race unit unit-race unit-race-pkgs unit-race-tests race-deps unit-plain unit-plain-pkgs unit-serial pyunit graphviz-helper fuzz fuzz-build fuzz-run bench scale-table bench-gpu ptx gpu-build oracle oracle-probe e2e reliability clean

run: build
	./cgtviz

# cgtviz and, beside it, cgtviz-graphviz: the child process that renders
# SVG through Graphviz (export -o x.svg, the TUI's e), kept out of cgtviz
# so that only renders pay go-graphviz's start-up (README, Commands).
build:
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o cgtviz ./cmd/cgtviz
	$(GO) build -trimpath -o cgtviz-graphviz ./cmd/cgtviz/cgtviz-graphviz

# make test runs what `make lint unit fuzz` runs, on both cores (test-jobs
# below), with TEST_GOFLAGS added to GOFLAGS and go test's vet off (lint
# runs go vet ./..., whose analyzers include the subset go test runs).
# The fuzzing runs in a make of its own, after: under -O its output would
# show only when it ended (8 minutes in CI).
test:
	@GOFLAGS="$(strip $(shell $(GO) env GOFLAGS) $(TEST_GOFLAGS))" $(MAKE) --no-print-directory -j2 -O test-jobs TEST_ORDER=1 TESTFLAGS=-vet=off
	@$(MAKE) --no-print-directory fuzz-run

# make test's steps in two chains, one a core (TEST_ORDER below gives each
# step the one before it in its chain as an input, and the inputs it needs
# from the other: with only the inputs, make -j2 ran the cheap steps
# first and vet, which half the steps wait for, late); then (make test)
# the fuzzing, alone, so that each target has both cores for its FUZZTIME.
# Each step's output is printed when it ends (-O).
test-jobs: fuzz-build staticcheck

# staticcheck's build, as a step: nothing when STATICCHECK names another.
staticcheck-bin: $(filter $(STATICCHECK_BIN),$(STATICCHECK))

ifdef TEST_ORDER
# The chains, with the CPU each step took in cold make test runs (user+sys,
# 2026-12-01 18:12-18:29, the machine shared at loads of 2.5-8.5, which
# inflate these by ~20%: BENCHMARKS.md), so that they end together:
#   helper 45 s, vet 51, unit-race-pkgs 37, unit-plain-pkgs 31,
#       fuzz-build 19                                              = 183 s
#   gofmt and lint-race 2 (first: they fail fast), race-deps 61,
#       unit-race-tests 9, pyunit 7, staticcheck-bin 53 (65 beside
#       vet), unit-serial 16, staticcheck 25                       = 173 s
# vet finds the standard library, wazero and go-graphviz compiled by the
# helper; the tests, the fuzz builds and staticcheck's go list find the
# rest compiled by vet (ui's TestE2E builds cgtviz: beside vet, each would
# compile what the other had not yet), and so does staticcheck's build:
# beside vet, both compiled the standard packages they share (12 s more).
# The -race compile shares nothing with them: it runs from the start,
# beside the helper.
vet: graphviz-helper
unit-race-pkgs: vet race-deps
unit-plain-pkgs: unit-race-pkgs
fuzz-build: unit-plain-pkgs
lint-race: gofmt
race-deps: lint-race
unit-race-tests: race-deps
pyunit: unit-race-tests
$(STATICCHECK_BIN): | pyunit vet
staticcheck-bin: pyunit vet
unit-serial: staticcheck-bin vet
staticcheck: unit-serial vet
endif

lint: gofmt vet lint-race staticcheck

gofmt:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	GOGC=$(BUILD_GOGC) $(GO) vet ./...

# Builds the pinned staticcheck first unless STATICCHECK names another.
staticcheck: $(filter $(STATICCHECK_BIN),$(STATICCHECK))
	GOGC=$(BUILD_GOGC) $(STATICCHECK) ./...

# (Installed into a folder of its own, then renamed: two clones building
# it at once each rename a whole binary.)
$(STATICCHECK_BIN):
	@mkdir -p $(TOOLS)
	@tmp=$$(mktemp -d "$(abspath $(TOOLS))/staticcheck.XXXXXX") && \
	echo "GOGC=$(BUILD_GOGC) GOBIN=$$tmp $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)" && \
	GOGC=$(BUILD_GOGC) GOBIN=$$tmp $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) && \
	mv $$tmp/staticcheck $@ && rmdir $$tmp || { rm -rf $$tmp; exit 1; }

# Every package outside RACE_PKGS must start no goroutine in its code or
# tests, or its races would go unseen.
lint-race:
	@race=$$($(GO) list $(RACE_PKGS) $(racetest_pkgs)) && \
	bad=$$($(GO) list -f '{{.ImportPath}} {{.Dir}}' ./... | while read -r pkg dir; do \
		printf '%s\n' "$$race" | grep -qxF "$$pkg" && continue; \
		grep -lE '^[[:space:]]*go ([A-Za-z_][A-Za-z0-9_.]*\(|func)' "$$dir"/*.go 2>/dev/null | sed "s|^|$$pkg: |"; \
	done; true) && \
	if [ -n "$$bad" ]; then echo "these start goroutines but are not in RACE_PKGS or RACE_TESTS (Makefile):"; echo "$$bad"; exit 1; fi
	@mod=$$($(GO) list -m) && \
	files=$$($(GO) list -f '{{.ImportPath}}{{range .TestGoFiles}} {{$$.Dir}}/{{.}}{{end}}{{range .XTestGoFiles}} {{$$.Dir}}/{{.}}{{end}}' $(RACE_PKGS) $(racetest_pkgs)) && \
	bad=$$(for t in $(SERIAL_TESTS) $(RACE_TESTS); do \
		pkg=$${t%%:*} name=$${t##*:}; want=$$mod/$${pkg#./}; \
		in=$$(printf '%s\n' "$$files" | while read -r p f; do \
			[ -n "$$f" ] && grep -qs "^func $$name(t \*testing.T)" $$f && echo "$$p"; done | paste -sd " "); \
		[ "$$in" = "$$want" ] || echo "$$t: defined in: $${in:-no package}"; \
	done) && \
	if [ -n "$$bad" ]; then echo "each SERIAL_TESTS and RACE_TESTS name must be a test of its package alone among RACE_PKGS (Makefile):"; echo "$$bad"; exit 1; fi

unit: unit-race unit-plain pyunit

unit-race: unit-race-pkgs unit-race-tests

unit-race-pkgs: export CGTVIZ_GRAPHVIZ := $(abspath $(GRAPHVIZ_BIN))
unit-race-pkgs: graphviz-helper
	GORACE=$(RACE_GORACE) GOGC=$(BUILD_GOGC) $(GO) test -race -count=1 $(TESTFLAGS) -skip '$(serial_re)' $(RACE_PKGS)

unit-race-tests:
	GORACE=$(RACE_GORACE) GOGC=$(BUILD_GOGC) $(GO) test -race -count=1 $(TESTFLAGS) -run '$(racetest_re)' $(racetest_pkgs)

# make test's step beside the helper (after gofmt and lint-race, 2 s): the
# -race compile of the race tests' packages and of everything they and
# their tests import, so that unit-race-pkgs, waiting for vet (see
# TEST_ORDER), finds it compiled. The
# main packages are left out: go build links them (cgtviz under -race).
race_deps_list = $(GO) list -f '{{if ne .Name "main"}}{{.ImportPath}}{{"\n"}}{{end}}{{range .Imports}}{{.}}{{"\n"}}{{end}}{{range .TestImports}}{{.}}{{"\n"}}{{end}}{{range .XTestImports}}{{.}}{{"\n"}}{{end}}' $(RACE_PKGS) $(racetest_pkgs) | sort -u | grep -vx C
race-deps:
	@deps=$$($(race_deps_list)) && \
	echo "$(GO) build -race (the race tests' packages and their imports)" && \
	GOGC=$(BUILD_GOGC) $(GO) build -race $$deps

unit-plain: unit-plain-pkgs unit-serial

unit-plain-pkgs:
	@race=$$($(GO) list $(RACE_PKGS)) && \
	plain=$$($(GO) list ./... | grep -vxF "$$race") && \
	echo "$(GO) test -count=1 $(TESTFLAGS) (every package not in RACE_PKGS)" && \
	GOGC=$(BUILD_GOGC) $(GO) test -count=1 $(TESTFLAGS) -skip '$(racetest_re)' $$plain

# At the default GOGC: TestCheckBoundedMemory weighs the heap in use.
unit-serial: export CGTVIZ_GRAPHVIZ := $(abspath $(GRAPHVIZ_BIN))
unit-serial: graphviz-helper
	$(GO) test -count=1 $(TESTFLAGS) -run '$(serial_re)' $(serial_pkgs)

pyunit:
	python3 -m unittest discover traces/pytorch/tests
	python3 -m unittest discover tools/gpu/tests
	bash traces/pytorch/tests/venv_check.sh

# Always run: go build is a cache hit when nothing changed, and a stale
# helper would test old code.
graphviz-helper:
	GOGC=$(BUILD_GOGC) $(GO) build -ldflags "-s -w" -o $(GRAPHVIZ_BIN) ./cmd/cgtviz/cgtviz-graphviz

fuzz: fuzz-build
	@$(MAKE) --no-print-directory fuzz-run

# The fuzzing itself, in the binaries fuzz-build linked (make test runs
# fuzz-build in its first chain, then this alone).
fuzz-run:
	@bash tools/fuzz.sh $(GO) $(FUZZTIME) $(FUZZMINIMIZE) $(FUZZ_BIN) $(FUZZ_TARGETS)

# The fuzz targets' instrumented test binaries, one a package, linked into
# $(FUZZ_BIN), where tools/fuzz.sh runs them.
# -vet=off as in make test's go test: go test's vet is a subset of lint's
# go vet ./..., and here it ran again (~8 s of CPU) as its analyzer set is
# not vet's.
# One go test -c for all of them (each named PKG.test, PKG the last element
# of its path, as go test -c -o DIR/ names them and tools/fuzz.sh finds
# them): built one after the other, the five kept about one core busy (26 s
# of wall time for 24 s of CPU), when the race chain may have ended already.
# go test -fuzz (FUZZ_INSTRUMENT=all) takes one package at a time.
fuzz_pkgs = $(sort $(foreach t,$(FUZZ_TARGETS),$(firstword $(subst :, ,$(t)))))
fuzz-build:
	@mkdir -p $(FUZZ_BIN)
	@if [ "$(FUZZ_INSTRUMENT)" = all ]; then \
		for pkg in $(fuzz_pkgs); do \
			echo "$(GO) test -c -fuzz . $$pkg"; \
			GOGC=$(BUILD_GOGC) $(GO) test -c -vet=off -fuzz . -o $(FUZZ_BIN)/ $$pkg || exit 1; \
		done; \
	else \
		echo "$(GO) test -c $(fuzz_flags) $(fuzz_pkgs)"; \
		GOGC=$(BUILD_GOGC) $(GO) test -c -vet=off $(fuzz_flags) -o $(FUZZ_BIN)/ $(fuzz_pkgs); \
	fi

# Every CPU benchmark; cmd/cgtviz's run end to end on a 1,000,000-record
# trace it writes to a temporary file (BENCHMARKS.md).
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# The scaling table of BENCHMARKS.md (cgtviz run on 10k-10M records, trees
# of 10-10,000 nodes) in one run; SCALE_RECORDS, SCALE_NODES, SCALE_TIMEOUT
# and SCALE_ARGS narrow it (tools/scale-table.sh).
scale-table: build
	CGTVIZ_BIN=./cgtviz bash tools/scale-table.sh

# The cuda-tagged binary (needs cuda.h and the libcuda stub: run
# ../shared/tools/cuda-sdk.sh once). It runs only where a driver is.
gpu:
	$(GO) build -trimpath -tags cuda -ldflags "$(LDFLAGS)" -o cgtviz-cuda ./cmd/cgtviz
	$(GO) build -trimpath -o cgtviz-graphviz ./cmd/cgtviz/cgtviz-graphviz

# Test binaries for the GPU machine, carried there in $(BIN) (see README);
# cgtviz-graphviz (8 MB stripped) lies beside cmd-cuda.test, whose SVG tests
# find it there.
gpu-build:
	$(GO) vet -tags cuda ./...
	mkdir -p $(BIN)
	$(GO) test -c -tags cuda -o $(BIN)/cudadev.test ./engine/device/cuda
	$(GO) test -c -race -tags cuda -o $(BIN)/cudadev-race.test ./engine/device/cuda
	$(GO) test -c -tags cuda -o $(BIN)/engine-cuda.test ./engine
	$(GO) test -c -tags cuda -o $(BIN)/sessions-cuda.test ./sessions
	$(GO) test -c -tags cuda -o $(BIN)/cmd-cuda.test ./cmd/cgtviz
	$(GO) build -tags cuda -o $(BIN)/cgtviz-cuda ./cmd/cgtviz
	$(GO) build -trimpath -ldflags "-s -w" -o $(BIN)/cgtviz-graphviz ./cmd/cgtviz/cgtviz-graphviz
	cp ../shared/tools/torch-oracle.py ../shared/tools/torch-oracle2.py $(BIN)/

# On the GPU machine: the device's and the engine's GPU benchmarks and
# PyTorch's, one run (tools/gpu/README.md has the other suites).
bench-gpu:
	bash tools/gpu/gpu.sh bench

# On a machine with nvcc: regenerate the committed PTX of the kernels.
ptx:
	nvcc -arch=compute_75 -ptx -o engine/device/cuda/kernels.ptx engine/device/cuda/kernels.cu

# On the GPU machine: PyTorch's decisions for every example trace.
oracle:
	python3 $(BIN)/torch-oracle.py examples/*.cgt.jsonl examples/recorded/*.cgt.jsonl > engine/testdata/oracle/oracle.jsonl

# On the GPU machine: the open random-trace differences again, each function
# compiled from its own code object, with check_invariants' statuses
# (docs/oracle-differences.md). Compare with
# CGTVIZ_SHARED_CODE=0 CGTVIZ_ORACLE=../$(BIN)/probe-random3.jsonl go test ./engine -run TestOracle
# (the probe compiles each def from its own code object).
oracle-probe:
	python3 tools/gpu/oracle-probe.py $(BIN)/torch-oracle.py engine/testdata/oracle/random3/*.cgt.jsonl > $(BIN)/probe-random3.jsonl

# The long runs behind docs/reliability.md (the fuzzing instrumented as
# CI's: every package).
reliability:
	CGTVIZ_PROPERTY_TRACES=2000 $(GO) test -count=1 -run '^TestProperties$$' -v ./engine/
	$(GO) test -count=1 -run '^TestFaults$$' -v ./engine/
	$(MAKE) fuzz FUZZTIME=60s FUZZ_INSTRUMENT=all

# The TUI's end-to-end walk in tmux, alone (make test runs it as ui's TestE2E).
e2e: build
	CGTVIZ_BIN=./cgtviz bash tools/e2e/tui.sh

clean:
	rm -f cgtviz cgtviz-cuda cgtviz-graphviz
	rm -rf $(BIN) $(FUZZ_BIN)
