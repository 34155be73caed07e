# cgtviz: `make run` opens the TUI on the embedded demo trace (simulated
# device); `make test` is what CI runs. docs/development.md explains the
# targets; mk/test.mk holds make test's lists and measured knobs,
# mk/test-order.mk the order of its steps on two cores.

GO        ?= go
BIN       := .bin
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X main.version=$(VERSION)
# Flags of every go test below (make test adds -vet=off: lint runs go vet).
TESTFLAGS ?=

# staticcheck, pinned, built once a machine into the user's cache folder
# (named by its version and Go's), as a tool of the machine's like tmux.
STATICCHECK_VERSION := v0.8.2
GOVERSION := $(shell $(GO) env GOVERSION 2>/dev/null)
TOOLS ?= $(if $(HOME),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/cgtviz,.tools)
STATICCHECK_BIN := $(TOOLS)/staticcheck-$(STATICCHECK_VERSION)-$(GOVERSION)
STATICCHECK ?= $(STATICCHECK_BIN)

# The fuzz targets' instrumented test binaries (not in $(BIN), which is
# carried to the GPU machine), and the SVG helper the tests run.
FUZZ_BIN := .fuzz
GRAPHVIZ_BIN := $(BIN)/cgtviz-graphviz

include mk/test.mk

.PHONY: screenshot run test test-jobs staticcheck-bin build gpu lint gofmt vet staticcheck lint-race unit unit-race unit-race-pkgs unit-race-tests race-deps unit-plain unit-plain-pkgs unit-serial pyunit graphviz-helper fuzz fuzz-build fuzz-run bench scale-table size-table bench-gpu ptx gpu-build oracle oracle-probe e2e reliability clean

run: build
	./cgtviz

# cgtviz and, beside it, cgtviz-graphviz: the child process that renders
# SVG through Graphviz (export -o x.svg, the TUI's e), kept out of cgtviz
# so that only renders pay go-graphviz's start-up (README, Commands).
build:
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o cgtviz ./cmd/cgtviz
	$(GO) build -trimpath -o cgtviz-graphviz ./cmd/cgtviz/cgtviz-graphviz

# make test: what `make lint unit fuzz` runs, its steps on both cores in
# two chains (mk/test-order.mk), then the fuzzing alone: under -O its
# output would show only when it ended.
test:
	@GOFLAGS="$(strip $(shell $(GO) env GOFLAGS) $(TEST_GOFLAGS))" $(MAKE) --no-print-directory -j2 -O test-jobs TEST_ORDER=1 TESTFLAGS=-vet=off
	@$(MAKE) --no-print-directory fuzz-run

test-jobs: fuzz-build staticcheck

# staticcheck's build, as a step: nothing when STATICCHECK names another.
staticcheck-bin: $(filter $(STATICCHECK_BIN),$(STATICCHECK))

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

# Every package outside RACE_PKGS must start no goroutine, and the test
# lists of mk/test.mk must name tests that exist.
lint-race:
	@GO="$(GO)" RACE_PKGS="$(RACE_PKGS)" RACE_TESTS="$(RACE_TESTS)" SERIAL_TESTS="$(SERIAL_TESTS)" bash tools/lint-race.sh

unit: unit-race unit-plain pyunit

unit-race: unit-race-pkgs unit-race-tests

unit-race-pkgs: export CGTVIZ_GRAPHVIZ := $(abspath $(GRAPHVIZ_BIN))
unit-race-pkgs: graphviz-helper
	GORACE=$(RACE_GORACE) GOGC=$(BUILD_GOGC) $(GO) test -race -count=1 $(TESTFLAGS) -skip '$(serial_re)' $(RACE_PKGS)

unit-race-tests:
	GORACE=$(RACE_GORACE) GOGC=$(BUILD_GOGC) $(GO) test -race -count=1 $(TESTFLAGS) -run '$(racetest_re)' $(racetest_pkgs)

# The -race compile of what the race tests import, so that unit-race-pkgs
# finds it compiled (mk/test-order.mk runs it beside the helper).
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
	@# (test_recorder_raised.py needs sys.monitoring: Python 3.12 on, under each
	@# minor version here, one interpreter each: 3.13 reports a raise's offset
	@# otherwise than 3.12)
	@seen=; for p in python3 python3.13 python3.12 $$(ls -d $${PYENV_ROOT:-$$HOME/.pyenv}/versions/3.1[2-9]*/bin/python3 2>/dev/null); do \
	  v=$$($$p -c 'import sys; print("%d.%d" % sys.version_info[:2]) if sys.version_info >= (3, 12) else sys.exit(1)' 2>/dev/null) || continue; \
	  case " $$seen " in *" $$v "*) continue;; esac; seen="$$seen $$v"; \
	  echo "$$p -m unittest test_recorder_raised ($$v)"; (cd traces/pytorch/tests && $$p -m unittest test_recorder_raised) || exit 1; \
	done; \
	[ -n "$$seen" ] || echo "pyunit: no Python 3.12 or later here: test_recorder_raised.py (an eager op's overwritten error) not run"
	python3 -m unittest discover tools/gpu/tests
	bash traces/pytorch/tests/venv_check.sh
	bash tools/recorder-asan.sh

# Always run: go build is a cache hit when nothing changed, and a stale
# helper would test old code. Built without -trimpath, part of every
# compile's cache key, so that it shares go vet's and the tests' compiles.
graphviz-helper:
	GOGC=$(BUILD_GOGC) $(GO) build -ldflags "-s -w" -o $(GRAPHVIZ_BIN) ./cmd/cgtviz/cgtviz-graphviz

fuzz: fuzz-build
	@$(MAKE) --no-print-directory fuzz-run

# The fuzzing itself, in the binaries fuzz-build linked (make test runs
# fuzz-build in its first chain, then this alone).
fuzz-run:
	@bash tools/fuzz.sh $(GO) $(FUZZTIME) $(FUZZMINIMIZE) $(FUZZ_BIN) $(FUZZ_TARGETS)

# The fuzz targets' instrumented test binaries, one a package, linked by
# one go test -c into $(FUZZ_BIN), where tools/fuzz.sh runs them; go test
# -fuzz (FUZZ_INSTRUMENT=all) takes one package at a time.
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
# The README's screenshot and docs/tui-demo.ansi, retaken (tools/screenshot.sh:
# tmux, aha, chromium).
screenshot:
	tools/screenshot.sh docs/tui.png docs/tui-demo.ansi

scale-table: build
	CGTVIZ_BIN=./cgtviz bash tools/scale-table.sh

# BENCHMARKS.md's table by model size: run and the TUI on training loops
# from toy to 1B parameters and an 8B model (tools/size-table.sh).
size-table: build
	CGTVIZ_BIN=./cgtviz bash tools/size-table.sh

# The cuda-tagged binary (needs cuda.h and the libcuda stub: run
# ../shared/tools/cuda-sdk.sh once). It runs only where a driver is.
gpu:
	$(GO) build -trimpath -tags cuda -ldflags "$(LDFLAGS)" -o cgtviz-cuda ./cmd/cgtviz
	$(GO) build -trimpath -o cgtviz-graphviz ./cmd/cgtviz/cgtviz-graphviz

# Test binaries for the GPU machine, carried there in $(BIN) (see README);
# cgtviz-graphviz (8 MB stripped) lies beside cmd-cuda.test, whose SVG tests
# find it there.
# The binaries are stripped (-s -w: no symbol table or DWARF; panics still
# name their functions) so that the device tool's 64 MiB carry holds the
# tree and the binaries a run needs together.
gpu-build:
	$(GO) vet -tags cuda ./...
	mkdir -p $(BIN)
	$(GO) test -c -tags cuda -ldflags "-s -w" -o $(BIN)/cudadev.test ./engine/device/cuda
	$(GO) test -c -race -tags cuda -ldflags "-s -w" -o $(BIN)/cudadev-race.test ./engine/device/cuda
	$(GO) test -c -tags cuda -ldflags "-s -w" -o $(BIN)/engine-cuda.test ./engine
	$(GO) test -c -tags cuda -ldflags "-s -w" -o $(BIN)/sessions-cuda.test ./sessions
	$(GO) test -c -tags cuda -ldflags "-s -w" -o $(BIN)/cmd-cuda.test ./cmd/cgtviz
	$(GO) build -tags cuda -ldflags "-s -w" -o $(BIN)/cgtviz-cuda ./cmd/cgtviz
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

# make test's steps in two chains of equal CPU (only under TEST_ORDER).
include mk/test-order.mk
