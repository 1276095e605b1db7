#!/bin/sh
# tests/suites/oracle.sh — tir against an independent NumPy oracle
# (tests/oracle/oracle.py: a table of small programs, each run with --save
# and with print, every value compared with NumPy's).  Prints one line per
# failing case and, last, "N passed, M failed" (one count per case).  Run
# from anywhere; BUILD picks the build (default build).  Needs Debian's
# /usr/bin/python3 with NumPy (python3-numpy, installed by the dependency
# step), not whatever python3 is first on PATH: when it is missing the
# setup is broken, and that is one failure.  POSIX sh.
set -u

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
BUILD=${BUILD:-build}
case $BUILD in /*) tir=$BUILD/tir ;; *) tir=$root/$BUILD/tir ;; esac
py=/usr/bin/python3

if [ ! -x "$py" ]; then
	echo "oracle: $py is missing (install python3-numpy: make deps)"
	echo "0 passed, 1 failed"
	exit 1
fi
if ! "$py" -c 'import numpy' >/dev/null 2>&1; then
	echo "oracle: $py has no numpy (install python3-numpy: make deps)"
	echo "0 passed, 1 failed"
	exit 1
fi
if [ ! -x "$tir" ]; then
	echo "oracle: $tir is missing (make $BUILD/tir)"
	echo "0 passed, 1 failed"
	exit 1
fi

# oracle.py makes and removes its own temporary directory under TMPDIR
exec "$py" "$root/tests/oracle/${ORACLE_SCRIPT:-oracle.py}" --tir "$tir"
