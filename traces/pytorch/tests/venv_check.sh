#!/usr/bin/env bash
# Installs the recorder into a fresh virtual environment, offline, the way a
# user does (`pip install traces/pytorch`, then `pip install -e`), and runs
# its tests against the installed module, not the file in this folder.
#
#     bash traces/pytorch/tests/venv_check.sh [VENV_DIR]
#
# Offline: the package's build backend (_build/) needs only the standard
# library, and pip runs with --no-index, so no registry is asked.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
if [ -n "${1:-}" ]; then
	venv=$1
else
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	venv=$tmp/venv
fi
py="$venv/bin/python"
# The host's pip installs into the venv (pip --python, pip 22.3 and later)
# when it can: a venv made with its own pip (ensurepip) cost 5 of this
# script's 10 s of CPU in make test. The install is the same either way:
# the venv's interpreter runs pip, and the package lands in its
# site-packages. Without a host pip new enough, the venv gets its own.
if python3 -c 'import sys, pip; sys.exit(tuple(map(int, pip.__version__.split(".")[:2])) < (22, 3))' 2>/dev/null; then
	python3 -m venv --clear --without-pip "$venv"
	pip=(python3 -m pip --python "$py")
else
	python3 -m venv --clear "$venv"
	pip=("$py" -m pip)
fi
pipi() { "${pip[@]}" install -q --no-index --disable-pip-version-check "$@"; }

check() {
	local mode=$1 where
	# From elsewhere, so the source folder is not on sys.path by accident.
	(cd / && "$venv/bin/cgtrace" --help >/dev/null)
	(cd / && "$py" -m cgtrace --help >/dev/null)
	where=$(cd / && "$py" -c "import cgtrace; print(cgtrace.__file__)")
	case "$mode:$where" in
	copy:"$venv"/*) ;;
	editable:"$here/cgtrace/__init__.py") ;;
	*) echo "venv_check: the $mode install imports cgtrace from $where" >&2; exit 1 ;;
	esac
	# The summary line when the tests pass; what failed when they do not
	# (make test's log is all CI keeps).
	local log
	log=$(mktemp)
	if ! (cd "$here/tests" && CGTRACE_TEST_INSTALLED=1 "$py" -m unittest discover -s . -t . >"$log" 2>&1); then
		grep -v '^[.sEFx]*$' "$log" | tail -80 >&2
		rm -f "$log"
		echo "venv_check: the $mode install's tests failed" >&2
		exit 1
	fi
	tail -1 "$log"
	rm -f "$log"
	echo "venv_check: $mode install ok ($where)"
}

pipi "$here"
check copy
"${pip[@]}" uninstall -q -y --disable-pip-version-check cgtrace
pipi -e "$here"
check editable
