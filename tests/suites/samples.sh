#!/bin/sh
# tests/suites/samples.sh — the samples as tests.  For every samples/NAME.tir:
#  1. `$BUILD/tir run --quiet samples/NAME.tir` must exit 0, write nothing on
#     stderr (so a sanitizer report fails it) and print samples/NAME.out:
#     the text exactly, the floats within tests/numdiff.py's tolerance
#     (where and what is shown otherwise) — and the same run with
#     --threads 1 and with --no-fuse must print byte for byte what it did;
#  2. tests/oracle/samples_check.py NAME must agree: NumPy recomputes the
#     sample from its saved random inputs and checks what tir prints.
# Each is one count; the last line is "N passed, M failed".  Run from the
# repository root (tests/run.sh does); BUILD picks the build (default build).
# A sample whose .out is missing fails step 1: the .out files are goldens a
# person reviewed, never written by this script.
set -u

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
BUILD=${BUILD:-build}
case $BUILD in /*) tir=$BUILD/tir ;; *) tir=$root/$BUILD/tir ;; esac
py=/usr/bin/python3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tir-samples.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
. "$root/tests/golden-exec.sh"
passed=0
failed=0

fail() {
	echo "samples $1: FAILED: $2"
	failed=$((failed + 1))
}

# run_variant FILE NAME [OPTION...]: 0 when `tir run --quiet FILE OPTION...`
# exits 0, is silent on stderr and prints what it should (else one
# failure): with no OPTION, samples/NAME.out (golden_same), saved as
# $tmp/first; with one, byte for byte $tmp/first
run_variant() {
	f=$1
	name=$2
	shift 2
	how=${*:+" with $*"}
	timeout 60 "$tir" run --quiet "$f" "$@" >"$tmp/out" 2>"$tmp/err"
	st=$?
	if [ "$st" -ne 0 ]; then
		fail "$name" "exit status $st$how"
		head -n 5 "$tmp/err"
	elif [ -s "$tmp/err" ]; then
		fail "$name" "output on stderr$how"
		head -n 10 "$tmp/err"
	elif [ $# -eq 0 ] && ! golden_same "samples/$name.out" "$tmp/out" "$tmp/diff"; then
		fail "$name" "stdout differs from samples/$name.out"
		cat "$tmp/diff"
	elif [ $# -gt 0 ] && ! diff -u --label "without options" --label "$how" "$tmp/first" "$tmp/out" >"$tmp/diff"; then
		fail "$name" "stdout$how differs from the run without options"
		cat "$tmp/diff"
	else
		[ $# -eq 0 ] && cp "$tmp/out" "$tmp/first"
		return 0
	fi
	return 1
}

if [ ! -x "$tir" ]; then
	echo "samples: $tir is missing"
	echo "0 passed, 1 failed"
	exit 1
fi

for f in samples/*.tir; do
	[ -f "$f" ] || continue
	name=${f##*/}
	name=${name%.tir}

	# 1. stdout against the reviewed golden, then on one thread and op by
	#    op, since tir promises one stdout whatever the threads or fusion
	#    (one count for the three runs)
	if [ ! -f "samples/$name.out" ]; then
		fail "$name" "no samples/$name.out"
	elif run_variant "$f" "$name" && run_variant "$f" "$name" --threads 1 &&
	    run_variant "$f" "$name" --no-fuse; then
		passed=$((passed + 1))
	fi

	# 2. NumPy's recomputation
	if [ ! -x "$py" ] || ! "$py" -c 'import numpy' 2>/dev/null; then
		fail "$name" "no $py with numpy for the NumPy check"
	elif BUILD=$BUILD timeout 300 "$py" tests/oracle/samples_check.py --tir "$tir" "$name" \
	    >"$tmp/check" 2>&1; then
		passed=$((passed + 1))
	else
		fail "$name" "NumPy check"
		grep -v ': FAILED$' "$tmp/check"
	fi
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
