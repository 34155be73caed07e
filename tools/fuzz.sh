#!/usr/bin/env bash
# fuzz.sh GO FUZZTIME MINIMIZE PKG:NAME...: runs each fuzz target in turn.
# Go's fuzzing coordinator sometimes fails a run that found nothing with
# "context deadline exceeded" while stopping its workers at the end of
# -fuzztime; such a run (no failing input written) is run once more, so
# that only a real failure (an input in testdata/fuzz) fails the build.
set -u
go=$1 time=$2 minimize=$3
shift 3
for t in "$@"; do
	pkg=${t%%:*} name=${t##*:}
	for try in 1 2; do
		echo "fuzz $pkg $name ($time)"
		log=$(mktemp)
		"$go" test -run '^$' -fuzz "^$name\$" -fuzztime "$time" -fuzzminimizetime "$minimize" "$pkg" 2>&1 | tee "$log"
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
		exit "$rc"
	done
done
