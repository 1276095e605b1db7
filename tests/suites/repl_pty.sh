#!/bin/sh
# tests/suites/repl_pty.sh — `tir repl` beyond the golden transcripts:
#  1. piped, stdout is exactly `tir run`'s: for every samples/NAME.tir and
#     every golden case that `tir run --quiet` runs cleanly (exit 0), the
#     stdout of `tir repl < NAME.tir` must be the same and its exit 0;
#  2. a value bound to a name is computed once: a later computation that
#     reads it runs no kernel for it (.explain lists what ran);
#  3. the interactive REPL in a pseudo-terminal (tests/repl_pty.py with
#     Debian's /usr/bin/python3): prompts, history, completion, errors,
#     Ctrl-C at the prompt and during a computation, Ctrl-D.
# One line per failure; the last line is "N passed, M failed".  Run from
# the repository root (tests/run.sh does); BUILD picks the build.
set -u

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
BUILD=${BUILD:-build}
case $BUILD in /*) tir=$BUILD/tir ;; *) tir=$root/$BUILD/tir ;; esac
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tir-repl.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
passed=0
failed=0

# same_as_run DIR NAME: `tir repl < NAME.tir` prints what `tir run` prints
same_as_run() {
	(cd "$1" && timeout 60 "$tir" run --quiet "$2.tir" >"$tmp/run.out" 2>/dev/null) || return 0
	(cd "$1" && timeout 60 "$tir" repl <"$2.tir" >"$tmp/repl.out" 2>"$tmp/repl.err")
	st=$?
	if [ $st -ne 0 ]; then
		echo "repl piped $2: FAILED: exit $st: $(head -n 1 "$tmp/repl.err")"
		failed=$((failed + 1))
	elif ! cmp -s "$tmp/run.out" "$tmp/repl.out"; then
		echo "repl piped $2: FAILED: stdout differs from tir run's"
		diff "$tmp/run.out" "$tmp/repl.out" | head -n 5
		failed=$((failed + 1))
	else
		passed=$((passed + 1))
	fi
}

for f in samples/*.tir tests/golden/*.tir; do
	[ -f "$f" ] || continue
	case $(head -n 1 "$f") in "# tir: fmt"*) continue ;; esac
	n=${f##*/}
	same_as_run "$(dirname "$f")" "${n%.tir}"
done

# the second .explain must show the sum only: w and s are kept
printf '%s\n' 'w = randn([256, 256], seed=5)' 's = sum(w, axis=0)' 'print s' '.explain' \
	'print max(s)' '.explain' | timeout 60 "$tir" repl >"$tmp/keep.out" 2>&1
if [ "$(grep -c '^kernel.*randn' "$tmp/keep.out")" -ne 1 ] ||
   ! tail -n 1 "$tmp/keep.out" | grep -q '^kernel 1: max'; then
	echo "repl kept values: FAILED: a kept value was computed again"
	cat "$tmp/keep.out"
	failed=$((failed + 1))
else
	passed=$((passed + 1))
fi

/usr/bin/python3 tests/repl_pty.py "$tir" >"$tmp/pty.out" 2>&1
sed '$d' "$tmp/pty.out"
c=$(tail -n 1 "$tmp/pty.out" | sed -n 's/^\([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed$/\1 \2/p')
if [ -z "$c" ]; then
	tail -n 3 "$tmp/pty.out"
	echo "repl pty: FAILED: no summary line"
	failed=$((failed + 1))
else
	# shellcheck disable=SC2086 # "N M": split on purpose
	set -- $c
	passed=$((passed + $1))
	failed=$((failed + $2))
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
