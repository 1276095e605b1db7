#!/bin/sh
# tests/suites/optable.sh — lib/ir/ops.def is the one list of ops: the fuser
# (lib/fusion) and vmath's dispatch read its columns (fuse, cost, vec) and
# name no elementwise op; no switch in lib/ lists one but the kernels'
# (lib/exec/elementwise.c); every op it gives a vector kernel is checked by
# test_vmath.  The elementwise ops are read from ops.def itself, so a new
# row is checked by adding it.  Prints `N passed, M failed` last.
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "optable: $1"; [ -z "$2" ] || printf '%s\n' "$2" | sed 's/^/    /'; }

# the ENUM of every row of kind $1
rows() {
	awk -v kind="$1," '/^X\(/ && $3 == kind { e = $1; sub(/^X\(/, "", e); sub(/,$/, "", e); print e }' lib/ir/ops.def
}
ew=$(rows ELEMWISE | paste -sd'|' -)
n=$(rows ELEMWISE | wc -l)
if [ "$n" -ge 30 ]; then ok; else bad "ops.def: only $n elementwise rows read (the pattern is stale?)"; fi

hits=$(grep -nE "TIR_OP_($ew)\\b" lib/fusion/*.c lib/fusion/*.h lib/exec/vmath.c lib/exec/vmath.h)
if [ -z "$hits" ]; then ok; else bad "the fuser and vmath name elementwise ops (ask ops.def's columns):" "$hits"; fi

hits=$(grep -rnE "case TIR_OP_($ew):" lib --include='*.c' --include='*.h' | grep -v '^lib/exec/elementwise\.c:')
if [ -z "$hits" ]; then ok; else bad "a switch lists elementwise ops outside their kernels (make it a column of ops.def):" "$hits"; fi

# the vector kernels: each in the table, each tested on every path
vec=$(awk '/^X\(/ && $NF != "NONE)" { e = $1; sub(/^X\(/, "", e); sub(/,$/, "", e); print e }' lib/ir/ops.def)
nv=0
missing=
for e in $vec; do
	nv=$((nv + 1))
	grep -q "TIR_OP_$e\\b" tests/unit/test_vmath.c || missing="$missing $e"
done
if [ "$nv" -ge 27 ]; then ok; else bad "ops.def: only $nv rows with a vector kernel read"; fi
if [ -z "$missing" ]; then ok; else bad "ops with a vector kernel that test_vmath does not check:$missing"; fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
