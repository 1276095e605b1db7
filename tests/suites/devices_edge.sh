#!/bin/sh
# tests/suites/devices_edge.sh — several devices (issue 13), the edges: the
# REPL's values on two servers going stale, .remote changed under placed
# values, what a run of several steps reports (bytes, blobs, the trace), a
# runtime error on remote:1, long chains of moves, --save from remote:1,
# small dtypes moved, one server listed twice, an import refused
# (tests/net/devices_edge_test.py, servers on free loopback ports).  Each
# check is one count; one line per failure; the last line is "N passed, M
# failed".  Run from the repository root (tests/run.sh does); BUILD picks
# the build.
set -u

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
. tests/py-suite.sh
py_build
py_suite 600 tests/net/devices_edge_test.py "$tir"
