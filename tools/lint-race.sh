#!/usr/bin/env bash
# lint-race.sh: make lint-race, the check that keeps mk/test.mk's race
# lists true. Every package outside RACE_PKGS and RACE_TESTS' packages
# must start no goroutine in its code or tests, or its races would go
# unseen; and each SERIAL_TESTS and RACE_TESTS name must still be a test of
# its package, and of no other package among RACE_PKGS (-skip and -run take
# no package). The lists come from the environment, as make passes them:
#
#     GO=go RACE_PKGS="./traces ..." RACE_TESTS="./engine:TestX" SERIAL_TESTS="..." bash tools/lint-race.sh
set -uo pipefail
go=${GO:-go}
racetest_pkgs=$(for t in ${RACE_TESTS:-}; do echo "${t%%:*}"; done | sort -u)

# shellcheck disable=SC2086
race=$($go list $RACE_PKGS $racetest_pkgs) || exit 1
bad=$($go list -f '{{.ImportPath}} {{.Dir}}' ./... | while read -r pkg dir; do
	# (a here-string, not printf into a pipe: grep -q stops reading at its
	# match, and under pipefail the writer's SIGPIPE made the pipeline
	# fail, a package of the list reported as not in it, once in a loaded
	# make test)
	grep -qxF "$pkg" <<<"$race" && continue
	grep -lE '^[[:space:]]*go ([A-Za-z_][A-Za-z0-9_.]*\(|func)' "$dir"/*.go 2>/dev/null | sed "s|^|$pkg: |"
done)
if [ -n "$bad" ]; then
	echo "these start goroutines but are not in RACE_PKGS or RACE_TESTS (mk/test.mk):"
	echo "$bad"
	exit 1
fi

mod=$($go list -m) || exit 1
# shellcheck disable=SC2086
files=$($go list -f '{{.ImportPath}}{{range .TestGoFiles}} {{$.Dir}}/{{.}}{{end}}{{range .XTestGoFiles}} {{$.Dir}}/{{.}}{{end}}' $RACE_PKGS $racetest_pkgs) || exit 1
bad=$(for t in ${SERIAL_TESTS:-} ${RACE_TESTS:-}; do
	pkg=${t%%:*} name=${t##*:}
	want=$mod/${pkg#./}
	in=$(printf '%s\n' "$files" | while read -r p f; do
		# shellcheck disable=SC2086
		[ -n "$f" ] && grep -qs "^func $name(t \*testing.T)" $f && echo "$p"
	done | paste -sd " ")
	[ "$in" = "$want" ] || echo "$t: defined in: ${in:-no package}"
done)
if [ -n "$bad" ]; then
	echo "each SERIAL_TESTS and RACE_TESTS name must be a test of its package alone among RACE_PKGS (mk/test.mk):"
	echo "$bad"
	exit 1
fi
