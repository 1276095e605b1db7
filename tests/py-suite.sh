# tests/py-suite.sh — sourced by the suites that run a Python test script
# (tests/suites/serve.sh, devices.sh, xfer.sh, mpi.sh, ...): the script prints
# "ok NAME" or "FAIL NAME: WHY" per check, "# " lines of figures, and last
# "N passed, M failed".  POSIX sh.

# py_shown LOG: LOG's lines but its last, without the "ok" and "# " ones
# (VERBOSE=1: all of them)
py_shown() {
	if [ "${VERBOSE:-0}" = 1 ]; then
		sed '$d' "$1"
	else
		sed '$d' "$1" | grep -v -e '^ok ' -e '^# '
	fi
}

# py_report LOG STATUS NAME: the suite's output for a script NAME that
# wrote LOG and exited with STATUS: the lines py_shown keeps, then its
# counts (or one failure when it printed none); returns 0 only when it
# exited 0
py_report() {
	py_shown "$1"
	last=$(tail -n 1 "$1")
	case $last in
	*" passed, "*" failed") echo "$last" ;;
	*)
		echo "$3: FAILED: exit $2, no summary line: $last"
		echo "0 passed, 1 failed"
		return 1
		;;
	esac
	[ "$2" -eq 0 ]
}

# py_build: the build under test, from BUILD (default build, relative to
# $root): its directory in $bdir and its binary in $tir
py_build() {
	BUILD=${BUILD:-build}
	case $BUILD in /*) bdir=$BUILD ;; *) bdir=$root/$BUILD ;; esac
	tir=$bdir/tir
}

# py_suite SECONDS SCRIPT ARG...: run the Python test script SCRIPT (with
# Debian's /usr/bin/python3, for at most SECONDS) and report it as
# py_report does; returns as py_report
py_suite() {
	_secs=$1
	_script=$2
	shift 2
	_tmp=$(mktemp -d "${TMPDIR:-/tmp}/tir-suite.XXXXXX") || return 1
	trap 'rm -rf "$_tmp"' EXIT INT TERM
	timeout "$_secs" /usr/bin/python3 "$_script" "$@" >"$_tmp/out" 2>&1
	_st=$?
	py_report "$_tmp/out" "$_st" "$(basename "$_script")"
	_st=$?
	rm -rf "$_tmp"
	return $_st
}
