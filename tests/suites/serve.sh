#!/bin/sh
# tests/suites/serve.sh — `tir serve` against docs/protocol.md: every
# endpoint and the doc's curl examples, each error of the protocol table,
# the token, limits, sessions, blob eviction, signals, and a load test of 64
# concurrent clients x 50 batches checked against NumPy (tests/net/
# serve_test.py, with Debian's /usr/bin/python3; servers on free loopback
# ports, started and stopped by the test).  The test prints "ok NAME" or
# "FAIL NAME: WHY" per check and "# " lines with the load test's figures;
# here only the failures are shown (VERBOSE=1: every line), and the last
# line is "N passed, M failed".  Run from the repository root (tests/run.sh does); BUILD picks
# the build.
set -u

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
. tests/py-suite.sh
py_build
py_suite 600 tests/net/serve_test.py "$tir"
