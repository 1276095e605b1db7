#!/bin/sh
# tests/suites/soak_smoke.sh — `make soak` in small: tests/net/soak.py for
# 20 s (one restart, quiet points every 5 s) against this build's
# `tir serve`, with Debian's /usr/bin/python3: every request of its mixed
# clients answered right or with an expected error, the restart answering
# the batches it had, kills and drops seen in the server's log, and
# tir_tensor_bytes back to what blobs and kept values hold at each quiet
# point.  (The memory trend needs the long run: `make soak`.)  Only the
# failures are shown (VERBOSE=1: every line); the last line is "N passed,
# M failed".  Run from the repository root (tests/run.sh does); BUILD picks
# the build.
set -u

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
. tests/py-suite.sh
BUILD=${BUILD:-build}
case $BUILD in /*) tir=$BUILD/tir ;; *) tir=$root/$BUILD/tir ;; esac
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tir-soak.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

timeout 300 /usr/bin/python3 tests/net/soak.py --seconds 20 --restarts 1 --quiet-every 5 --tir "$tir" \
	--out "$tmp/out" >"$tmp/log" 2>&1
st=$?
py_report "$tmp/log" "$st" soak.py
