# make test's two chains, one a core, included by the Makefile.
#
# make test runs its steps under make -j2 with TEST_ORDER set. Each rule
# below gives a step the one before it in its chain as an input, and the
# inputs it needs from the other chain: with only the real inputs, make -j2
# ran the cheap steps first and vet, which half the steps wait for, late.
# Then (make test) the fuzzing runs alone, so that each target has both
# cores for its FUZZTIME. Each step's output is printed when it ends (-O).
#
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
# beside the helper (race-deps).
#
# When a step's cost changes much, measure cold runs again and move steps
# between the chains so that their sums stay close.

ifdef TEST_ORDER
# chain 1: graphviz-helper -> vet -> unit-race-pkgs -> unit-plain-pkgs -> fuzz-build
vet: graphviz-helper
unit-race-pkgs: vet race-deps
unit-plain-pkgs: unit-race-pkgs
fuzz-build: unit-plain-pkgs
# chain 2: gofmt -> lint-race -> race-deps -> unit-race-tests -> pyunit ->
#          staticcheck-bin -> unit-serial -> staticcheck
lint-race: gofmt
race-deps: lint-race
unit-race-tests: race-deps
pyunit: unit-race-tests
$(STATICCHECK_BIN): | pyunit vet
staticcheck-bin: pyunit vet
unit-serial: staticcheck-bin vet
staticcheck: unit-serial vet
endif
