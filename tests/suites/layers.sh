#!/bin/sh
# tests/suites/layers.sh — the library's layers call one way only (README,
# "Layout"): lib/ir < lib/exec < lib/fusion < lib/engine < lib/net, with
# lib/place (placement: a pass over lib/ir's graph) beside lib/exec and
# lib/fusion, read by lib/engine and lib/net only; the engine and the CLI
# reach lib/net only through its table (tir_net()); and the CLI reaches the
# library through lib/tir.h alone.  Each rule greps the #include lines and
# the calls of the layers above.  Prints `N passed,
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
	'#include "\.\./(exec|fusion|engine|net|place|mpi)/'
# the graph says what the program says: where it runs is lib/place's
rule "lib/ir knows no devices (no placement field, name or call)" lib/ir/*.c lib/ir/*.h -- \
	'(->|\.)(dev|hidden|alias|shown|shard|coll)\b|TIR_DEV_|\btir_(place|placed|shard|dev)_?[a-z_]*\(|struct tir_(placed|shard|coll)\b|^\s+[a-z_ 0-9*]+\b(dev|hidden|alias|shown|shard|coll);'
hits=$(grep -nE '#include "' lib/place/*.c lib/place/*.h | grep -vE ':#include "(place\.h|\.\./ir/ir\.h)"$')
if [ -z "$hits" ]; then pass=$((pass + 1)); else
	fail=$((fail + 1)); echo "layers: lib/place includes only lib/ir and itself:"; printf '%s\n' "$hits" | sed 's/^/    /'; fi
rule "lib/place calls nothing above lib/ir" lib/place/*.c lib/place/*.h -- \
	'\btir_(fuse|fused|plan|group|exec|remote|device|kernel|tensor|pool|node_eval)_?[a-z_]*\('
rule "lib/exec and lib/fusion read no placement" lib/exec/*.c lib/exec/*.h lib/fusion/*.c lib/fusion/*.h -- \
	'#include "\.\./place/|\btir_(place|placed|shard|dev)_?[a-z_]*\(|TIR_DEV_|struct tir_(placed|shard|coll)\b'
rule "lib/exec includes neither lib/fusion, lib/engine, lib/place nor lib/net" lib/exec/*.c lib/exec/*.h -- \
	'#include "\.\./(fusion|engine|place|net)/'
rule "lib/exec calls neither the fuser nor the executor" lib/exec/*.c lib/exec/*.h -- \
	'\btir_(fuse|fused|plan|group|exec|remote|device)_?[a-z_]*\('
rule "lib/fusion includes only lib/exec" lib/fusion/*.c lib/fusion/*.h -- \
	'#include "\.\./(engine|place|net)/'
rule "lib/fusion calls not the executor" lib/fusion/*.c lib/fusion/*.h -- \
	'\btir_(exec|remote|device)_[a-z_]*\('
rule "lib/engine includes not lib/net (door.c loads it)" lib/engine/*.c lib/engine/*.h -- \
	'#include "\.\./net/'
# lib/net's functions (each one lib/net/*.c defines, the door but) are
# reached from below only through the table tir_net() hands out: no call
# of one by its name in the layers below, the CLI, tir.h or the door.
net_fns=$(ls lib/net/*.c | grep -v '^lib/net/door\.c$' | xargs grep -hE '^[a-z][a-z0-9_ ]*[ *]tir_[a-z0-9_]+\(' |
	grep -v '^static' | sed -E 's/^[^(]*[ *](tir_[a-z0-9_]+)\(.*/\1/' | sort -u | paste -sd '|' -)
if [ -z "$net_fns" ]; then
	fail=$((fail + 1)); echo "layers: found no function lib/net defines (the pattern is out of date)"
else
	# every folder of lib/ but lib/net and lib/mpi (a new one joins by itself)
	# shellcheck disable=SC2046
	rule "nothing below lib/net names its functions (door.c hands out its table)" \
		$(ls lib/*/*.[ch] | grep -vE '^lib/(net|mpi)/') lib/tir.h lib/net/door.c cli/*.[ch] \
		-- "\\b($net_fns)\\("
fi
# lib/onnx (the importer) writes programs for lib/ir to check, and uses
# lib/exec's files (the weights it writes, inputs it reads); nothing runs
hits=$(grep -nE '#include "' lib/onnx/*.c lib/onnx/*.h |
	grep -vE ':#include "(onnx\.h|libs\.h|onnx/onnx\.pb-c\.h|\.\./ir/ir\.h|\.\./exec/(exec|half)\.h)"$')
if [ -z "$hits" ]; then pass=$((pass + 1)); else
	fail=$((fail + 1)); echo "layers: lib/onnx includes only lib/ir, lib/exec's files and itself:"; printf '%s\n' "$hits" | sed 's/^/    /'; fi
rule "lib/onnx calls neither the fuser, the executor nor placement" lib/onnx/*.c lib/onnx/*.h -- \
	'\btir_(fuse|fused|plan|group|exec|remote|device|place|placed|shard|kernel|node_eval)_?[a-z_]*\('
rule "no layer below includes lib/onnx" lib/ir/*.[ch] lib/exec/*.[ch] lib/fusion/*.[ch] lib/engine/*.[ch] lib/place/*.[ch] lib/net/*.[ch] -- \
	'#include "\.\./onnx/'
hits=$(grep -nE '#include "' cli/*.c cli/*.h | grep -vE ':#include "(cli\.h|tir\.h|flags\.def)"$')
if [ -z "$hits" ]; then pass=$((pass + 1)); else
	fail=$((fail + 1)); echo "layers: the CLI includes only cli.h, its flags.def and lib/tir.h:"; printf '%s\n' "$hits" | sed 's/^/    /'; fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
