#!/bin/sh
# tests/run.sh — the whole test suite; `make test` runs it with BUILD=build,
# `make asan` with BUILD=build-asan.  POSIX sh.  It runs, and adds up:
#
#  1. unit tests: every $BUILD/tests/test_* binary.  Each prints a line
#     "NAME: N passed, M failed".  One that crashes, hangs or exits non-zero
#     without such a line counts as 1 failed.
#  2. golden cases, tests/golden/NAME.tir (see "Golden format" below).
#  3. suites: every tests/suites/*.sh and tests/oracle/*.sh script, run as
#     `sh SCRIPT` from the repository root with BUILD in the environment.
#     A suite MUST print as its last line "N passed, M failed" (its own
#     totals) and keep the rest of its output to one line per failure.
#     One without that line, or that exits non-zero while saying 0 failed,
#     counts as 1 failed.
#
# The last line printed is "N passed, M failed" over everything; the exit
# status is 0 only when M is 0 and N is not.  TESTS=PART,... runs only those
# parts: unit, golden, or a suite's name (samples, readme, ...); default all.
#
# Golden format.  NAME.tir is the program; NAME.out the expected stdout
# (required, may be empty; compared by golden_same: the text exactly, the
# floats within tests/numdiff.py's stated tolerance, since the last digits
# of what goes through OpenBLAS or a vector path differ between machines); NAME.err the expected stderr, exactly (when
# absent stderr is not compared); NAME.status the expected exit status
# (default 0).  A first line "# tir: CMD [ARGS...]" picks the command
# (check, fmt, run --precision 3, ...); the default is "run --quiet".  The
# case runs in tests/golden as `../../$BUILD/tir CMD NAME.tir ARGS`, so
# messages say NAME.tir:LINE:COL, and may read fixture files beside it.
# "# tir: repl [ARGS...]" is a REPL transcript: `tir repl ARGS < NAME.tir`
# (stdin not a terminal: no prompt; messages say <stdin>:LINE:COL).
# Instead of NAME.tir a case may have NAME.gen: a shell script whose stdout
# is the program (for big or deep inputs that should not be committed); it
# is written to a temporary NAME.tir and run there; its own first line may
# be the "# tir:" line.  A run case must print the same stdout, with the
# same status, with --no-fuse and with --threads 1 added, byte for byte
# (what tir promises on one machine).  A fmt case (but fmt --dot) is
# also checked to be idempotent (fmt of the output is the output) and its
# output to pass `check`.  Every run has a 20 s timeout.
# tests/golden-update.sh NAME rewrites a case's expected files from the
# current binary (for a person to review).
set -u

root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/tests/golden-exec.sh"
cd "$root" || exit 1
BUILD=${BUILD:-build}
case $BUILD in /*) bdir=$BUILD ;; *) bdir=$root/$BUILD ;; esac
tir=$bdir/tir
case $BUILD in *asan*) export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}" ;; esac
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"
# Products on tir's gemm, whatever this machine's default: the goldens,
# samples and unit tests compare bytes across --threads, which only tir's
# gemm promises.  tests/suites/gemm.sh runs the product cases on OpenBLAS.
export TIR_GEMM="${TIR_GEMM:-tir}"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tir-test.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
passed=0
failed=0

# wanted PART: 0 when TESTS (default all) names PART
wanted() {
	case ",${TESTS:-all}," in *,all,* | *,"$1",*) return 0 ;; esac
	return 1
}

# "NAME: N passed, M failed" or "N passed, M failed" -> "N M"
counts() {
	sed -n 's/^\(.*: \)\{0,1\}\([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed$/\2 \3/p' "$1" | tail -n 1
}

# ---- 1. unit tests ----
for t in "$bdir"/tests/test_*; do
	[ -x "$t" ] && wanted unit || continue
	name=${t##*/}
	timeout 120 "$t" >"$tmp/unit.out"
	st=$?
	c=$(counts "$tmp/unit.out")
	if [ -z "$c" ]; then
		echo "$name: FAILED (exit $st, no summary line)"
		tail -n 5 "$tmp/unit.out"
		failed=$((failed + 1))
		continue
	fi
	grep -E '^.*: [0-9]+ passed, [0-9]+ failed$' "$tmp/unit.out" | tail -n 1
	# shellcheck disable=SC2086 # "N M": split on purpose
	set -- $c
	passed=$((passed + $1))
	failed=$((failed + $2))
	if [ "$st" -ne 0 ] && [ "$2" -eq 0 ]; then
		echo "$name: FAILED (exit $st)"
		failed=$((failed + 1))
	fi
done

# ---- 2. golden cases ----
gpass=0
gfail=0
gfail_case() {
	echo "golden $1: FAILED: $2"
	gfail=$((gfail + 1))
}

# run_case NAME: 0 when the case passes (messages printed otherwise)
run_case() {
	name=$1
	dir=$root/tests/golden
	src=$dir/$name.tir
	if [ -f "$dir/$name.gen" ]; then
		dir=$tmp/gen
		rm -rf "$dir" && mkdir -p "$dir"
		if ! sh "$root/tests/golden/$name.gen" >"$dir/$name.tir"; then
			gfail_case "$name" "$name.gen failed"
			return 1
		fi
		src=$root/tests/golden/$name.gen
	fi
	if [ ! -f "$root/tests/golden/$name.out" ]; then
		gfail_case "$name" "no $name.out"
		return 1
	fi
	golden_exec "$tir" "$dir" "$name" "$src" "$tmp/out" "$tmp/err"
	want=0
	[ -f "$root/tests/golden/$name.status" ] && want=$(cat "$root/tests/golden/$name.status")
	ok=1
	if [ "$st" -eq 124 ]; then
		gfail_case "$name" "timed out (20 s)"
		return 1
	fi
	if [ "$st" -ne "$want" ]; then
		gfail_case "$name" "exit status $st, expected $want"
		ok=0
	fi
	if ! golden_same "$root/tests/golden/$name.out" "$tmp/out" "$tmp/diff"; then
		[ $ok = 1 ] && gfail_case "$name" "stdout differs"
		cat "$tmp/diff"
		ok=0
	fi
	if [ -f "$root/tests/golden/$name.err" ] &&
	   ! diff -u --label "$name.err (expected)" --label "$name.err (got)" "$root/tests/golden/$name.err" "$tmp/err" >"$tmp/diff"; then
		[ $ok = 1 ] && gfail_case "$name" "stderr differs"
		cat "$tmp/diff"
		ok=0
	elif [ $ok = 0 ] && [ ! -f "$root/tests/golden/$name.err" ]; then
		head -n 5 "$tmp/err"
	fi
	[ $ok = 1 ] || return 1
	# run: byte for byte the same stdout (and status) unfused and on one
	# thread as the run above, on this machine
	if [ "$verb" = run ]; then
		for extra in --no-fuse "--threads 1"; do
			golden_exec "$tir" "$dir" "$name" "$src" "$tmp/out2" "$tmp/err2" "$extra"
			if [ "$st" -ne "$want" ] ||
			   ! diff -u --label "$name.out (got)" --label "$name.out (got with $extra)" \
				"$tmp/out" "$tmp/out2" >"$tmp/diff"; then
				gfail_case "$name" "with $extra: exit status $st or stdout differs"
				cat "$tmp/diff"
				return 1
			fi
		done
	fi
	# fmt: the output is a fixed point, and it checks (run from the
	# case's folder, so that load() finds the fixtures); not fmt --dot,
	# whose output is a Graphviz graph (tests/suites/dot.sh renders them)
	if [ "$verb" = fmt ] && [ "$st" -eq 0 ] && [ "${args#*--dot}" = "$args" ]; then
		rm -rf "$tmp/fmt" && mkdir -p "$tmp/fmt"
		cp "$tmp/out" "$tmp/fmt/$name.tir"
		# load paths are relative to the program's file: its fixtures beside it
		for f in "$dir"/*.npy "$dir"/*.safetensors; do
			[ -e "$f" ] && ln -sf "$f" "$tmp/fmt/"
		done
		(cd "$dir" && timeout 20 "$tir" fmt "$tmp/fmt/$name.tir" >"$tmp/out2" 2>"$tmp/err2")
		st2=$?
		if [ "$st2" -ne 0 ] || ! diff -u --label "fmt" --label "fmt of fmt" "$tmp/out" "$tmp/out2" >"$tmp/diff"; then
			gfail_case "$name" "fmt is not idempotent (exit $st2)"
			cat "$tmp/diff" "$tmp/err2"
			return 1
		fi
		(cd "$dir" && timeout 20 "$tir" check "$tmp/fmt/$name.tir" >"$tmp/out2" 2>"$tmp/err2")
		st2=$?
		if [ "$st2" -ne 0 ] || [ -s "$tmp/out2" ] || [ -s "$tmp/err2" ]; then
			gfail_case "$name" "check rejects the fmt output (exit $st2)"
			cat "$tmp/err2"
			return 1
		fi
	fi
	return 0
}

if ! wanted golden; then
	:
elif [ ! -x "$tir" ]; then
	echo "golden: $tir is missing"
	failed=$((failed + 1))
else
	for f in tests/golden/*.tir tests/golden/*.gen; do
		[ -f "$f" ] || continue
		n=${f##*/}
		n=${n%.*}
		# a .gen case with a committed fixture of the same name runs once
		case $f in *.tir) [ -f "tests/golden/$n.gen" ] && continue ;; esac
		if run_case "$n"; then
			gpass=$((gpass + 1))
		fi
	done
	echo "golden: $gpass passed, $gfail failed"
	passed=$((passed + gpass))
	failed=$((failed + gfail))
fi

# ---- 3. suites ----
for s in tests/suites/*.sh tests/oracle/*.sh; do
	[ -f "$s" ] || continue
	n=${s##*/}
	wanted "${n%.*}" || continue
	BUILD=$BUILD timeout 1800 sh "$s" >"$tmp/suite.out" 2>&1
	st=$?
	tail -n 1 "$tmp/suite.out" >"$tmp/suite.last"
	c=$(counts "$tmp/suite.last")
	# its output, less its own summary line, which we restate with its name
	sed '$d' "$tmp/suite.out"
	if [ -z "$c" ]; then
		tail -n 1 "$tmp/suite.out"
		echo "$s: FAILED (exit $st, no final 'N passed, M failed' line)"
		failed=$((failed + 1))
		continue
	fi
	# shellcheck disable=SC2086 # "N M": split on purpose
	set -- $c
	echo "$s: $1 passed, $2 failed"
	passed=$((passed + $1))
	failed=$((failed + $2))
	if [ "$st" -ne 0 ] && [ "$2" -eq 0 ]; then
		echo "$s: FAILED (exit $st)"
		failed=$((failed + 1))
	fi
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
