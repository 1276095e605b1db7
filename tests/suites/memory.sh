#!/bin/sh
# tests/suites/memory.sh — the memory planner: a fused kernel writes its
# result over an input that nothing reads afterwards (peak bytes drop), and
# never over a value that is still read, printed or kept by the REPL.
# Prints `N passed, M failed` last.
. "$(dirname "$0")/../sh-suite.sh"
suite_begin memory

# peak FILE [FLAGS]: the "peak N MiB" of the timing line
peak() {
	f=$1
	shift
	"$tir" run "$f" "$@" 2>&1 >/dev/null | sed -n 's/.*peak \([0-9.]* [KMG]*i*B\).*/\1/p'
}

# c takes a's memory: a (4 MiB) is read by b's kernel alone
cat >"$tmp/own.tir" <<'T'
a = randn([1024, 1024], seed=1)
c = exp((tanh(a) * 2 + 1) * -0.5) - tanh(a)
print argmax(c, axis=-1)
T
# a is printed too: it must stay
cat >"$tmp/kept.tir" <<'T'
a = randn([1024, 1024], seed=1)
c = exp((tanh(a) * 2 + 1) * -0.5) - tanh(a)
print argmax(c, axis=-1), argmax(a, axis=-1)
T
p=$(peak "$tmp/own.tir")
[ "$p" = "4.0 MiB" ] && ok || bad "in place: peak '$p', expected 4.0 MiB (a and c share)"
p=$(peak "$tmp/own.tir" --no-fuse)
[ "$p" = "12.0 MiB" ] && ok || bad "--no-fuse: peak '$p', expected 12.0 MiB"
p=$(peak "$tmp/kept.tir")
[ "$p" = "8.0 MiB" ] && ok || bad "a printed: peak '$p', expected 8.0 MiB (a kept)"
# narrow weights are widened inside the kernels that read them, never by a
# pass of their own: w (bf16, 2 MiB) and q (i8, 1 MiB) made, then a fused
# elementwise kernel and a matmul read them; no f32 copy (4 MiB) of either
# is ever held beside them.  The peak is 7.0 MiB (the f32 randn of w being
# narrowed, w, q) unless the product x @ w passes it: w, q, x and the
# product (3.5 MiB) and the gemm's scratch, which --max-memory counts.
# That scratch depends on the kernel: w's panels packed as bf16 pairs
# (vdpbf16ps: 2 MiB), or widened as packed (tir's other paths: one
# k-block of KC steps, at most all 1,024 of them, 4 MiB), or widened for
# OpenBLAS's sgemm (4 MiB), and a's panels (64 rows: at most 0.25 MiB):
# so at most 7.75, printed 7.8.  A widened copy of w or q held beside
# that, or the elementwise kernel's, passes 11 MiB.  --no-fuse converts
# them (its peak is the check's foil).
cat >"$tmp/narrow.tir" <<'T'
w = cast(randn([1024, 1024], seed=1), bf16)
q = cast(randn([1024, 1024], seed=2) * 20, i8)
x = randn([64, 1024], seed=3)
y = relu(x @ w) @ q
e = sum(exp(cast(w, f32) * 0.5) + cast(q, f32) * 0.25)
print sum(y), e
T
p=$(peak "$tmp/narrow.tir")
case $p in 7.[0-8]" MiB") ok ;; *) bad "narrow weights: peak '$p', expected 7.0 to 7.8 MiB (the f32 randn of w being narrowed, w, q; or x @ w and its kernel's scratch: no widened copy)" ;; esac
p=$(peak "$tmp/narrow.tir" --no-fuse)
case $p in 1[0-9].*" MiB") ok ;; *) bad "narrow weights, --no-fuse: peak '$p', expected 10 MiB or more (widened copies)" ;; esac
"$tir" run "$tmp/narrow.tir" --explain 2>&1 | grep -q 'fused [0-9]* ops \[cast mul exp cast mul add sum\]' && ok ||
	bad "narrow weights: the casts are not inside the sum's kernel"
# x is dead after y's kernel but read there across (a transpose view):
# y must not take its memory
cat >"$tmp/across.tir" <<'T'
x = randn([64, 64], seed=1)
y = tanh(x) + transpose(x)
print argmax(y, axis=0)
T
for f in own kept across; do
	a=$("$tir" run --quiet "$tmp/$f.tir" 2>&1)
	b=$("$tir" run --quiet --no-fuse "$tmp/$f.tir" 2>&1)
	[ "$a" = "$b" ] && ok || bad "$f: fused and --no-fuse print different values"
done
# the REPL keeps named values: b's kernel must not write over a
out=$(printf '%s\n' 'a = randn([64, 64], seed=1)' 'sum(a)' 'b = tanh(a) * 2' 'sum(b)' 'sum(a)' |
	"$tir" repl 2>&1)
first=$(printf '%s\n' "$out" | sed -n 2p)
last=$(printf '%s\n' "$out" | tail -n 1)
[ -n "$first" ] && [ "$first" = "$last" ] && ok || bad "REPL: sum(a) changed after b: '$first' then '$last'"
suite_end
