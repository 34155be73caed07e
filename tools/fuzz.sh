#!/usr/bin/env bash
# fuzz.sh GO FUZZTIME MINIMIZE BINDIR PKG:NAME...: runs each fuzz target in
# turn, in the instrumented test binary that make fuzz-build linked into
# BINDIR for its package (PKG.test, PKG the last element of its path, as
# go test -c -o BINDIR/ names it): each is linked once, not
# once by fuzz-build and again by a go test -fuzz for every target (~1.5 s
# of wall time each, the fuzz phase running alone). The binary runs as go
# test would run it: in its package's folder (testdata/fuzz is read and a
# failing input written there), with go test's fuzz cache ($GOCACHE/fuzz/
# PKGPATH), timeout and -test.paniconexit0.
# Go's fuzzing coordinator sometimes fails a run that found nothing with
# "context deadline exceeded" while stopping its workers at the end of
# -fuzztime; such a run (no failing input written) is run once more, so
# that only a real failure (an input in testdata/fuzz) fails the build.
set -u
go=$1 time=$2 minimize=$3 bindir=$4
shift 4
cache=$("$go" env GOCACHE) || exit 1
bindir=$(cd "$bindir" && pwd) || exit 1
for t in "$@"; do
	pkg=${t%%:*} name=${t##*:}
	path=$("$go" list "$pkg") || exit 1
	bin=$bindir/${pkg##*/}.test
	if [ ! -x "$bin" ]; then
		echo "fuzz.sh: $bin is missing: run make fuzz-build first" >&2
		exit 1
	fi
	for try in 1 2; do
		echo "fuzz $pkg $name ($time)"
		log=$(mktemp)
		(cd "$pkg" && "$bin" -test.paniconexit0 -test.timeout=10m -test.run '^$' -test.fuzz "^$name\$" \
			-test.fuzztime "$time" -test.fuzzminimizetime "$minimize" \
			-test.fuzzcachedir "$cache/fuzz/$path") 2>&1 | tee "$log"
		rc=${PIPESTATUS[0]}
		if [ "$rc" -eq 0 ]; then
			rm -f "$log"
			break
		fi
		if [ "$try" -eq 1 ] && grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written' "$log"; then
			echo "fuzz $pkg $name: the coordinator timed out stopping, nothing found: once more"
			rm -f "$log"
			continue
		fi
		rm -f "$log"
		echo "FAIL	$path ($name)"
		exit "$rc"
	done
done
