#!/bin/sh
# tests/suites/fuzz_serve.sh — the protocol fuzzer (tests/net/fuzz_serve.py)
# against $BUILD/tir for a few seconds: once with a fixed seed (the same
# traffic every time), once with a random one (named in any failure line,
# so that `fuzz_serve.py --seed N` sends that traffic again).  Under `make
# asan` it runs against the ASan build.  `make fuzz` runs it for
# FUZZTIME seconds instead.  Only failures are shown (VERBOSE=1: every
# line, the counts of answers too); what a failure sent is saved under
# $BUILD/fuzz-serve; the last line is "N passed, M failed".
set -u

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
. tests/py-suite.sh
BUILD=${BUILD:-build}
case $BUILD in /*) bdir=$BUILD ;; *) bdir=$root/$BUILD ;; esac
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tir-fuzz-serve.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
secs=${FUZZ_SERVE_SECONDS:-3.5}
random=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')

passed=0
failed=0
for seed in 1 "$random"; do
	timeout 300 /usr/bin/python3 tests/net/fuzz_serve.py --tir "$bdir/tir" --seed "$seed" \
		--seconds "$secs" --reset-gone --out "$bdir/fuzz-serve" >"$tmp/out" 2>&1
	st=$?
	last=$(tail -n 1 "$tmp/out")
	py_shown "$tmp/out"
	p=$(echo "$last" | sed -n 's/^\([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed$/\1/p')
	f=$(echo "$last" | sed -n 's/^\([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed$/\2/p')
	if [ -z "$p" ]; then
		tail -n 5 "$tmp/out"
		echo "fuzz_serve.py --seed $seed: FAILED: exit $st, no summary line"
		failed=$((failed + 1))
		continue
	fi
	passed=$((passed + p))
	failed=$((failed + f))
	if [ "$st" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "fuzz_serve.py --seed $seed: FAILED: exit $st"
		failed=$((failed + 1))
	fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
