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
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
