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
venv=${1:-$(mktemp -d)/venv}
python3 -m venv --clear "$venv"
py="$venv/bin/python"
pipi() { "$py" -m pip install -q --no-index --disable-pip-version-check "$@"; }

check() {
	local mode=$1 where
	# From elsewhere, so the source folder is not on sys.path by accident.
	(cd / && "$venv/bin/cgtrace" --help >/dev/null)
	(cd / && "$py" -m cgtrace --help >/dev/null)
	where=$(cd / && "$py" -c "import cgtrace; print(cgtrace.__file__)")
	case "$mode:$where" in
	copy:"$venv"/*) ;;
	editable:"$here/cgtrace.py") ;;
	*) echo "venv_check: the $mode install imports cgtrace from $where" >&2; exit 1 ;;
	esac
	(cd "$here/tests" && CGTRACE_TEST_INSTALLED=1 "$py" -m unittest discover -s . -t . 2>&1 | tail -1)
	echo "venv_check: $mode install ok ($where)"
}

pipi "$here"
check copy
"$py" -m pip uninstall -q -y cgtrace
pipi -e "$here"
check editable
