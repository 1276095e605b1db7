#!/bin/sh
# tests/suites/layers.sh — the library's layers call one way only (README,
# "Layout"): lib/ir < lib/exec < lib/fusion < lib/engine < lib/net, and the
# CLI reaches the library through lib/tir.h alone.  Each rule greps the
# #include lines and the calls of the layers above.  Prints `N passed,
# M failed` last.
pass=0 fail=0
# rule NAME FILES... -- PATTERN: no line of FILES matches PATTERN (ERE)
rule() {
	name=$1
	shift
	files=
	while [ "$1" != -- ]; do files="$files $1"; shift; done
	shift
	# shellcheck disable=SC2086
	hits=$(grep -nE "$1" $files)
	if [ -z "$hits" ]; then pass=$((pass + 1)); else
		fail=$((fail + 1)); echo "layers: $name:"; printf '%s\n' "$hits" | sed 's/^/    /'; fi
}
rule "lib/ir includes only tir.h and its own" lib/ir/*.c lib/ir/*.h -- \
	'#include "\.\./(exec|fusion|engine|net)/'
rule "lib/exec includes neither lib/fusion, lib/engine nor lib/net" lib/exec/*.c lib/exec/*.h -- \
	'#include "\.\./(fusion|engine|net)/'
rule "lib/exec calls neither the fuser nor the executor" lib/exec/*.c lib/exec/*.h -- \
	'\btir_(fuse|fused|plan|group|exec|remote|device)_?[a-z_]*\('
rule "lib/fusion includes only lib/exec" lib/fusion/*.c lib/fusion/*.h -- \
	'#include "\.\./(engine|net)/'
rule "lib/fusion calls not the executor" lib/fusion/*.c lib/fusion/*.h -- \
	'\btir_(exec|remote|device)_[a-z_]*\('
rule "lib/engine includes not lib/net (door.c loads it)" lib/engine/*.c lib/engine/*.h -- \
	'#include "\.\./net/'
hits=$(grep -nE '#include "' cli/*.c cli/*.h | grep -vE ':#include "(cli\.h|tir\.h|flags\.def)"$')
if [ -z "$hits" ]; then pass=$((pass + 1)); else
	fail=$((fail + 1)); echo "layers: the CLI includes only cli.h, its flags.def and lib/tir.h:"; printf '%s\n' "$hits" | sed 's/^/    /'; fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
