#!/bin/sh
# tests/suites/gen.sh — the creation ops as generators (lib/exec/gen.c):
# each saved .npy is the same bytes on every vector path (TIR_VMATH=scalar,
# sse2, avx2, avx512; a path the CPU lacks runs the best below it), at
# --threads 1, 2, 3 and 7, fused or --no-fuse; a generator read by one
# kernel is computed inside it (one kernel in --profile, never stored);
# rand's f32 values are rng.c's definition (the NumPy oracle's sum), and
# randn's f32 values, whole and read transposed, are the oracle's bit for
# bit.
# Prints `N passed, M failed` last.
root=$(cd "$(dirname "$0")/../.." && pwd)
. "$(dirname "$0")/../sh-suite.sh"
suite_begin gen

cat >"$tmp/p.tir" <<'TIR'
a = rand([1000003], seed=1)
b = randn([1000003], seed=2)
c = rand([3001], seed=-5, dtype=f64)
d = randn([3001], seed=4294967301, dtype=f64)
e = arange(-3, 7, 0.0013)
f = linspace(0, 1, 77777, endpoint=false, dtype=f64)
g = eye(301) * 2 + full([301, 301], 0.5)
h = relu(randn([700, 900], seed=3) * 0.1) + transpose(rand([900, 700], seed=4))
k = sum(randn([4096, 33], seed=6) * linspace(-1, 1, 33), axis=-1)
m = transpose(randn([300, 200], seed=8)) * 2
print sum(a)
TIR
saves=""
for v in a b c d e f g h k m; do saves="$saves --save $v=$tmp/OUT.$v.npy"; done

# run TAG FLAGS...: run with the saves written as TAG.*.npy
run() {
	tag=$1
	shift
	# shellcheck disable=SC2046,SC2086 # the flags and saves are words
	"$@" $(echo "$saves" | sed "s|OUT|$tag|g") >"$tmp/$tag.stdout" 2>"$tmp/$tag.err" ||
		bad "$tag: exit $? ($(head -n 1 "$tmp/$tag.err"))"
}
run ref "$tir" run "$tmp/p.tir" --quiet --threads 2
for p in scalar sse2 avx2 avx512; do
	for t in 1 2 3 7; do
		run "$p$t" env TIR_VMATH=$p "$tir" run "$tmp/p.tir" --quiet --threads $t
	done
	run "${p}nf" env TIR_VMATH=$p "$tir" run "$tmp/p.tir" --quiet --no-fuse
done
for tag in scalar1 scalar2 scalar3 scalar7 scalarnf sse21 sse22 sse23 sse27 sse2nf avx21 avx22 avx23 avx27 avx2nf \
	avx5121 avx5122 avx5123 avx5127 avx512nf; do
	same=yes
	for v in a b c d e f g h k m; do
		cmp -s "$tmp/ref.$v.npy" "$tmp/$tag.$v.npy" || { same=no; bad "$tag: $v.npy differs from the reference run's"; }
	done
	[ $same = yes ] && ok
done

# rand([1000003], seed=1) f32 is the definition's: its sum against the
# NumPy oracle's (tests/oracle/oracle_ref.py, rng.c's definition written
# again over NumPy), within the 6 digits printed
want=$(/usr/bin/python3 -c "
import sys; sys.path.insert(0, '$root/tests/oracle')
import oracle_ref as R
print(float(R.rand([1000003], seed=1).astype('float64').sum()))") || want=missing
got=$(sed -n 2p "$tmp/ref.stdout")
/usr/bin/python3 -c "import sys; g, w = float(sys.argv[1]), float(sys.argv[2]); sys.exit(abs(g - w) > 1e-5 * abs(w))" \
	"$got" "$want" 2>/dev/null && ok || bad "sum(rand([1000003], seed=1)) = $got, the oracle's $want"

# randn f32 (computed in f32 by rng.c's definition, which oracle_ref
# follows step by step): b and m the oracle's bits
/usr/bin/python3 -c "
import sys; sys.path.insert(0, '$root/tests/oracle')
import numpy as np, oracle_ref as R
b, m = np.load('$tmp/ref.b.npy'), np.load('$tmp/ref.m.npy')
wb, wm = R.rand([1000003], seed=2, normal=True), R.rand([300, 200], seed=8, normal=True).T * np.float32(2)
sys.exit(not (b.dtype == wb.dtype and b.tobytes() == wb.tobytes() and m.shape == wm.shape and
              m.dtype == wm.dtype and m.tobytes() == np.ascontiguousarray(wm).tobytes()))" &&
	ok || bad "randn f32 ([1000003], seed=2; transposed [300, 200], seed=8) differs from the oracle's"

# the program of issue 12: one kernel, nothing of 64 MiB stored
printf 'y = relu(randn([4096, 4096], seed=1) * 0.1)\nprint sum(y)\n' >"$tmp/one.tir"
"$tir" run "$tmp/one.tir" --profile 2>"$tmp/prof" >/dev/null
n=$(sed -n 's/^\([0-9]*\) kernels, .*/\1/p' "$tmp/prof")
[ "$n" = 1 ] && ok || { bad "relu(randn * 0.1) then sum: $n kernels, expected 1"; cat "$tmp/prof"; }
grep -q 'fused\[randn mul relu sum\]' "$tmp/prof" && ok || bad "profile does not name fused[randn mul relu sum]"
grep -q 'peak [0-9.]* B$' "$tmp/prof" && ok || bad "peak is not bytes: $(tail -n 1 "$tmp/prof")"

suite_end
