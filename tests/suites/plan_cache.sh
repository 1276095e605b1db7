#!/bin/sh
# tests/suites/plan_cache.sh — the plan cache: the same computation asked
# again in a session is not planned again (the timing line says "cached"),
# and a different one is.  Prints `N passed, M failed` last.
BUILD=${BUILD:-build}
pass=0 fail=0
out=$(printf '%s\n' 'x = randn([30, 40], seed=1)' 'y = relu(x * 2 + 1)' '.timer on' \
	'sum(tanh(y) * 3)' 'sum(tanh(y) * 3)' 'sum(tanh(y) * 3)' 'sum(exp(y) - 3)' |
	"$BUILD/tir" repl 2>&1 >/dev/null | grep '^parse')
check() { # N PATTERN WANT(yes|no)
	line=$(printf '%s\n' "$out" | sed -n "$1p")
	if printf '%s' "$line" | grep -q "$2"; then got=yes; else got=no; fi
	if [ "$got" = "$3" ]; then pass=$((pass + 1)); else
		fail=$((fail + 1)); echo "plan_cache: run $1: expected '$2' $3 in: $line"; fi
}
check 1 cached no
check 2 cached no   # reads the kept y: another structure
check 3 cached yes
check 4 cached no   # another computation
# a plan taken from the cache runs on the new nodes of the repeated line:
# every repeat prints what `tir run` prints
want=$(printf '%s\n' 'x = randn([30, 40], seed=1)' 'y = relu(x * 2 + 1)' 'y2 = relu(exp(x) - 1)' \
	'print sum(tanh(y) * 3), sum(exp(y2) - 3, axis=0)' |
	"$BUILD/tir" run --quiet /dev/stdin 2>&1)
got=$(printf '%s\n' 'x = randn([30, 40], seed=1)' 'y = relu(x * 2 + 1)' 'y2 = relu(exp(x) - 1)' \
	'sum(tanh(y) * 3)' 'sum(exp(y2) - 3, axis=0)' 'sum(tanh(y) * 3)' 'sum(exp(y2) - 3, axis=0)' \
	'sum(tanh(y) * 3)' 'sum(exp(y2) - 3, axis=0)' | "$BUILD/tir" repl 2>&1)
for n in 1 2 3; do
	if [ "$(printf '%s\n' "$got" | sed -n "$((4 * n - 3)),$((4 * n))p")" = "$want" ]; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1)); echo "plan_cache: repeat $n printed another value:"; printf '%s\n' "$got"
	fi
done
# the same shapes with other attributes (a transpose's perm, a reduction's
# axis) are another plan: not taken from the cache, and computed right
out=$(printf '%s\n' 'x = rand([6, 6], seed=1)' 'sum(x)' '.timer on' \
	'sum(transpose(exp(x), [0, 1]), axis=-1)' 'sum(transpose(exp(x), [1, 0]), axis=-1)' \
	'sum(exp(x) * 2, axis=0)' 'sum(exp(x) * 2, axis=1)' | "$BUILD/tir" repl 2>&1)
for n in 2 4; do
	line=$(printf '%s\n' "$out" | grep '^parse' | sed -n "${n}p")
	if printf '%s' "$line" | grep -q cached; then
		fail=$((fail + 1)); echo "plan_cache: other attributes reused a plan: $line"
	else pass=$((pass + 1)); fi
done
for e in 'sum(transpose(exp(x), [1, 0]), axis=-1)' 'sum(exp(x) * 2, axis=1)'; do
	want=$(printf 'x = rand([6, 6], seed=1)\nprint %s\n' "$e" | "$BUILD/tir" run --quiet /dev/stdin 2>&1 | tail -n 1)
	if printf '%s\n' "$out" | grep -qxF -- "$want"; then pass=$((pass + 1)); else
		fail=$((fail + 1)); echo "plan_cache: $e: expected $want"; fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
