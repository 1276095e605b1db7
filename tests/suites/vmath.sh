#!/bin/sh
# tests/suites/vmath.sh — TIR_VMATH at the command line: an unknown value
# is refused before run, repl and serve do anything (exit 2, one line on
# stderr); a path the CPU has is the one `tir --version` and --profile
# name (and tir's gemm kernels with it), one it lacks gives the best below
# it, "auto" and "" the best.
# Prints `N passed, M failed` last.
. "$(dirname "$0")/../sh-suite.sh"
suite_begin vmath

printf 'print sum(exp(randn([100, 30], seed=1)), axis=1)\n' >"$tmp/p.tir"
msg='tir: TIR_VMATH=avx9: unknown vector path (scalar, sse2, avx2, avx512)'
for cmd in "run $tmp/p.tir" repl "serve --port 0"; do
	# shellcheck disable=SC2086 # the command's words
	TIR_VMATH=avx9 timeout 10 "$tir" $cmd </dev/null >"$tmp/out" 2>"$tmp/err"
	st=$?
	[ "$st" -eq 2 ] && [ ! -s "$tmp/out" ] && [ "$(cat "$tmp/err")" = "$msg" ] && ok ||
		bad "TIR_VMATH=avx9 tir $cmd: exit $st, stderr '$(cat "$tmp/err")'"
done

# path NAME: the path `tir --version` names with TIR_VMATH=NAME ("-": unset)
path() {
	if [ "$1" = - ]; then
		env -u TIR_VMATH "$tir" --version
	else
		TIR_VMATH=$1 "$tir" --version
	fi | sed -n 's/^vector path: //p'
}
best=$(path -)
case $best in scalar | sse2 | avx2 | avx512) ok ;; *) bad "tir --version: no vector path ('$best')" ;; esac
[ "$(path auto)" = "$best" ] && [ "$(path '')" = "$best" ] && ok || bad "auto or empty is not the best ($best)"
# each path up to the best is itself; those above give the best
below=yes
for p in scalar sse2 avx2 avx512; do
	want=$p
	[ $below = yes ] || want=$best
	[ "$p" = "$best" ] && below=no
	got=$(path $p)
	[ "$got" = "$want" ] && ok || bad "TIR_VMATH=$p: path '$got', expected '$want'"
	TIR_VMATH=$p "$tir" run --profile --quiet "$tmp/p.tir" >/dev/null 2>"$tmp/err"
	grep -q "; vector path: $want; " "$tmp/err" && ok || bad "TIR_VMATH=$p: --profile does not say '$want'"
	# the gemm kernels follow the same path
	g=$(TIR_VMATH=$p "$tir" --version | sed -n 's/^gemm: //p')
	case $g in "tir $want ("*) ok ;; *) bad "TIR_VMATH=$p: tir --version's gemm is '$g', not tir $want" ;; esac
	grep -q "; gemm: tir $want (" "$tmp/err" && ok || bad "TIR_VMATH=$p: --profile does not name gemm tir $want"
done

# SLEEF is loaded at the first transcendental, not at start (lib/exec/vmath.c):
# tir is not linked with it, a one-line program without one never maps it,
# and every path loads it for exp, pow and gelu, whose values it gives.
# loads PROGRAM [ENV...]: whether a run of PROGRAM loads libsleef
loads() {
	f=$1
	shift
	env "$@" LD_DEBUG=files "$tir" run --quiet "$f" 2>&1 >/dev/null | grep -q 'file=libsleef'
}
if command -v ldd >/dev/null 2>&1; then
	ldd "$tir" | grep -q sleef && bad "tir is linked with SLEEF: $(ldd "$tir" | grep sleef)" || ok
fi
printf 'print add(1, 2)\n' >"$tmp/one.tir"
printf 'x = [0.5, 2.0]\nprint add(x, x)\nprint sqrt(x)\n' >"$tmp/plain.tir"
printf 'x = [0.5, 2.0]\nprint exp(x)\nprint pow(x, 0.5)\nprint gelu(x)\n' >"$tmp/tr.tir"
loads "$tmp/one.tir" && bad "print add(1, 2) loads libsleef" || ok
loads "$tmp/plain.tir" && bad "add and sqrt of floats load libsleef" || ok
for p in scalar sse2 avx2 avx512; do
	loads "$tmp/tr.tir" TIR_VMATH=$p && ok || bad "TIR_VMATH=$p: exp, pow and gelu do not load libsleef"
	out=$(TIR_VMATH=$p "$tir" run --quiet "$tmp/tr.tir" 2>&1)
	[ "$(printf '%s\n' "$out" | sed -n 2p)" = "[1.64872, 7.38906]" ] && ok ||
		bad "TIR_VMATH=$p: exp([0.5, 2.0]) printed: $out"
done
suite_end
