#!/bin/sh
# tests/suites/devices.sh — several devices (issue 13): `to`, --remote
# a,b (remote:0, remote:1, ...), placement checked before anything is
# sent, fmt/.vars/--explain saying where values live, the same bytes as a
# local run and NumPy's values (tests/net/devices_test.py, servers on free
# loopback ports).  Each check is one count; one line per failure; the last
# line is "N passed, M failed".  Run from the repository root (tests/run.sh
# does); BUILD picks the build.
set -u

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
. tests/py-suite.sh
py_build
py_suite 600 tests/net/devices_test.py "$tir"
