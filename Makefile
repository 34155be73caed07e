# cgtviz: `make run` opens the TUI on the embedded demo trace (simulated
# device); `make test` is what CI runs. See README.md.

GO        ?= go
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X main.version=$(VERSION)
FUZZTIME  ?= 5s
# staticcheck, pinned: `go run` fetches this version through the module
# proxy once and caches it (CI needs nothing installed beforehand).
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2
# Each new input a fuzzer finds is minimised for at most this many runs:
# with the default (a minute) or even 5 s, the short runs of make test spent
# their whole time minimising (FuzzCheck and FuzzRun ran ~35 inputs in 5 s;
# with 100x, thousands). Crashers are still minimised.
FUZZMINIMIZE ?= 100x
BIN       := .bin

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

.PHONY: run test build gpu lint unit fuzz bench bench-gpu ptx gpu-build oracle oracle-probe e2e reliability clean

run: build
	./cgtviz

# cgtviz and, beside it, cgtviz-graphviz: the child process that renders
# SVG through Graphviz (export -o x.svg, the TUI's e), kept out of cgtviz
# so that only renders pay go-graphviz's start-up (README, Commands).
build:
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o cgtviz ./cmd/cgtviz
	$(GO) build -trimpath -o cgtviz-graphviz ./cmd/cgtviz/cgtviz-graphviz

test: lint unit fuzz

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(STATICCHECK) ./...

unit:
	$(GO) test -race -count=1 ./...
	python3 -m unittest discover traces/pytorch/tests
	python3 -m unittest discover tools/gpu/tests
	bash traces/pytorch/tests/venv_check.sh

fuzz:
	@bash tools/fuzz.sh $(GO) $(FUZZTIME) $(FUZZMINIMIZE) $(FUZZ_TARGETS)

# Every CPU benchmark; cmd/cgtviz's run end to end on a 1,000,000-record
# trace it writes to a temporary file (BENCHMARKS.md).
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# The cuda-tagged binary (needs cuda.h and the libcuda stub: run
# ../shared/tools/cuda-sdk.sh once). It runs only where a driver is.
gpu:
	$(GO) build -trimpath -tags cuda -ldflags "$(LDFLAGS)" -o cgtviz-cuda ./cmd/cgtviz
	$(GO) build -trimpath -o cgtviz-graphviz ./cmd/cgtviz/cgtviz-graphviz

# Test binaries for the GPU machine, carried there in $(BIN) (see README).
gpu-build:
	$(GO) vet -tags cuda ./...
	mkdir -p $(BIN)
	$(GO) test -c -tags cuda -o $(BIN)/cudadev.test ./engine/device/cuda
	$(GO) test -c -race -tags cuda -o $(BIN)/cudadev-race.test ./engine/device/cuda
	$(GO) test -c -tags cuda -o $(BIN)/engine-cuda.test ./engine
	$(GO) test -c -tags cuda -o $(BIN)/sessions-cuda.test ./sessions
	$(GO) test -c -tags cuda -o $(BIN)/cmd-cuda.test ./cmd/cgtviz
	$(GO) build -tags cuda -o $(BIN)/cgtviz-cuda ./cmd/cgtviz
	$(GO) build -o $(BIN)/cgtviz-graphviz ./cmd/cgtviz/cgtviz-graphviz
	cp ../shared/tools/torch-oracle.py ../shared/tools/torch-oracle2.py $(BIN)/

# On the GPU machine: the engine's GPU benchmarks and PyTorch's, one run.
bench-gpu:
	cd engine && ../$(BIN)/engine-cuda.test -test.run '^$$' -test.bench GPU -test.benchmem -test.count 3 | tee ../$(BIN)/bench-gpu.log
	python3 tools/gpu/torch-bench.py | tee $(BIN)/torch-bench.log
	python3 tools/gpu/bench-table.py $(BIN)/bench-gpu.log $(BIN)/torch-bench.log

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

# The long runs behind docs/reliability.md.
reliability:
	CGTVIZ_PROPERTY_TRACES=2000 $(GO) test -count=1 -run '^TestProperties$$' -v ./engine/
	$(GO) test -count=1 -run '^TestFaults$$' -v ./engine/
	$(MAKE) fuzz FUZZTIME=60s

# The TUI's end-to-end walk in tmux, alone (make test runs it as ui's TestE2E).
e2e: build
	CGTVIZ_BIN=./cgtviz bash tools/e2e/tui.sh

clean:
	rm -f cgtviz cgtviz-cuda cgtviz-graphviz
	rm -rf $(BIN)
