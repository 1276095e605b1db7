#!/bin/sh
# tests/suites/serve_reserve.sh — the pages `tir serve` keeps faulted in
# for uploads (--upload-reserve) and the check of an upload's chunks on
# several threads (tests/net/reserve_test.py, with Debian's
# /usr/bin/python3; servers on free loopback ports, started and stopped by
# the test): the reserve's size and its charge to --max-memory (given back
# when a value needs it, filled again after), 64 MiB uploads under
# --threads 1, 2 and 4 stored as sent and a changed chunk named.  Only the
# failures are shown (VERBOSE=1: every line); the last line is "N passed,
# M failed".  Run from the repository root; BUILD picks the build.
set -u

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
. tests/py-suite.sh
py_build
py_suite 600 tests/net/reserve_test.py "$tir"
