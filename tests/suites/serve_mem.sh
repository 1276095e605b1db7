#!/bin/sh
# tests/suites/serve_mem.sh — what a hostile tenant sends stays within
# `tir serve --max-memory` (tests/net/mem_test.py, with Debian's
# /usr/bin/python3; servers on free loopback ports, started and stopped by
# the test): batch texts charged as they are parsed and held to --max-ops
# and --graph-cache, the million-add body and eight queued loop texts
# within the budget (peak RSS from /proc), /healthz answered while texts
# are parsed, a crafted bound that cannot starve a tiny batch, the default
# --max-batch-seconds, and tenants' shares with their own figures in a
# refusal.  Only the failures are shown (VERBOSE=1: every line); the last
# line is "N passed, M failed".  Run from the repository root; BUILD picks
# the build.
set -u

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
. tests/py-suite.sh
py_build
py_suite 600 tests/net/mem_test.py "$tir"
