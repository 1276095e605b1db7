#!/bin/sh
# tests/suites/scratch.sh — the scratch kernels hold (gemm's packing
# buffers, the widened bf16 copies for OpenBLAS, conv2d's columns and
# packed weights) is charged to --max-memory: under a budget that holds
# the tensors but not today's scratch a product still runs, in slabs or
# shallower blocks that fit, and the charged peak ("peak" of the timing
# line) and the process's VmHWM stay within it; a generous budget gives
# the bits of no budget; a budget that no blocking fits is the budget's
# error at the op.  tir serve with a small --max-memory runs a matmul
# batch within it.  Prints `N passed, M failed` last.
. "$(dirname "$0")/../sh-suite.sh"
suite_begin scratch

# peak_kib OUTERR: the charged peak of the timing line, in KiB: the least
# value its printed figure can stand for ("8.4 MiB" is 8.35 to 8.45 MiB,
# "13 MiB" 12.5 to 13.5), rounded down, so that a peak within a budget
# that the figure rounds past (8,600 KiB, 8.398 MiB, prints 8.4) is not
# taken for one over it
peak_kib() {
	sed -n 's/.*peak \([0-9.]*\) \([KMG]*i*B\).*/\1 \2/p' "$1" |
		awk '{ m = $2 == "MiB" ? 1024 : $2 == "GiB" ? 1048576 : $2 == "KiB" ? 1 : 1 / 1024
		       d = index($1, ".") ? length($1) - index($1, ".") : 0
		       printf "%d\n", ($1 - 0.5 / 10 ^ d) * m }'
}
# hwm PROGRAM ARGS...: the run's VmHWM in KiB (/usr/bin/time's %M, the
# kernel's high-water mark of its resident set), glibc's mmap threshold
# fixed so that freed buffers go back at once
hwm() {
	MALLOC_MMAP_THRESHOLD_=131072 /usr/bin/time -f 'hwm %M' "$tir" run "$@" 2>&1 >/dev/null | sed -n 's/^hwm //p'
}
[ -x /usr/bin/time ] && have_time=1 || have_time=0
# a sanitizer build's resident set is its shadow memory and quarantine of
# freed blocks, not the budget's: there the charged peaks are checked, the
# process's high-water mark not
case $BUILD in *asan*)
	have_time=0
	echo "scratch: 6 VmHWM checks skipped: a sanitizer build ($BUILD) holds freed memory in quarantine" ;;
esac
flags= base=0
[ $have_time = 1 ] && { echo 'print 1' >"$tmp/one.tir"; base=$(hwm "$tmp/one.tir" --quiet); }

# run_case NAME PROGRAM BUDGET_KIB ENV...: runs PROGRAM ($flags too) with no budget,
# with 1G and with BUDGET_KIB, saving y; sets same_big (1G's bits are no
# budget's) and leaves $tmp/NAME.0.npy, $tmp/NAME.t.npy
run_case() {
	name=$1 prog=$2 kib=$3
	shift 3
	env "$@" "$tir" run "$prog" $flags --quiet --save "y=$tmp/$name.0.npy" || bad "$name: no budget: exit $?"
	env "$@" "$tir" run "$prog" $flags --quiet --max-memory 1G --save "y=$tmp/$name.g.npy" || bad "$name: 1G: exit $?"
	cmp -s "$tmp/$name.0.npy" "$tmp/$name.g.npy" && ok || bad "$name: a generous budget changed the bits"
	if env "$@" "$tir" run "$prog" $flags --max-memory "${kib}K" --save "y=$tmp/$name.t.npy" >/dev/null 2>"$tmp/$name.err"; then
		ok
		p=$(peak_kib "$tmp/$name.err")
		[ -n "$p" ] && [ "$p" -le "$kib" ] && ok || bad "$name: charged peak ${p}K over the budget ${kib}K"
		if [ $have_time = 1 ]; then
			h=$(env "$@" sh -c 'MALLOC_MMAP_THRESHOLD_=131072 exec /usr/bin/time -f "hwm %M" "$0" run "$1" $3 --quiet --max-memory "$2" --save "y=$4" 2>&1 >/dev/null' \
				"$tir" "$prog" "${kib}K" "$flags" "$tmp/h.npy" | sed -n 's/^hwm //p')
			# the process beside its budget: what `print 1` holds, and 2 MiB
			# of OpenBLAS's and the allocator's own
			[ -n "$h" ] && [ "$h" -le $((kib + base + 2048)) ] && ok ||
				bad "$name: VmHWM ${h}K over the budget ${kib}K + ${base}K + 2048K"
		fi
	else
		bad "$name: under ${kib}K it failed: $(head -1 "$tmp/$name.err")"
	fi
}

# f32 1024^3 on tir's gemm, at 1, 2 and 4 threads: tensors 12 MiB, its
# packing buffer some 6 MiB more; at 13 MiB in slabs, the same bits
cat >"$tmp/mm.tir" <<'T'
a = randn([1024, 1024], seed=1)
b = randn([1024, 1024], seed=2)
y = a @ b
T
for t in 1 2 4; do
	flags="--threads $t"
	run_case "mm$t" "$tmp/mm.tir" 13312 TIR_GEMM=tir
	cmp -s "$tmp/mm$t.0.npy" "$tmp/mm$t.t.npy" && ok || bad "mm at $t threads: the slabs changed the bits"
done
cmp -s "$tmp/mm1.0.npy" "$tmp/mm4.0.npy" && ok || bad "mm: 1 and 4 threads differ"
flags=

# bf16 on OpenBLAS (widened copies: 8 MiB whole): within 17 MiB the
# blocks are shallower or the product runs on tir's gemm, another order
# of the sums: checked against NumPy (float64) within the bf16 result's
# rounding
cat >"$tmp/bf.tir" <<'T'
a = cast(randn([1024, 1024], seed=1), bf16)
b = cast(randn([1024, 1024], seed=2), bf16)
y = cast(a @ b, f32)
af = cast(a, f32)
bf = cast(b, f32)
T
# (the process beside its budget: with OpenBLAS loaded and its own
# buffers touched by a small product)
base0=$base
if [ $have_time = 1 ]; then
	printf 'a = cast(randn([64, 64], seed=1), bf16)\nprint sum(cast(a @ a, f32))\n' >"$tmp/small.tir"
	base=$(TIR_GEMM=openblas TIR_BF16=widen hwm "$tmp/small.tir" --quiet)
fi
run_case bf "$tmp/bf.tir" 17408 TIR_GEMM=openblas TIR_BF16=widen
base=$base0
"$tir" run "$tmp/bf.tir" --quiet --save "af=$tmp/af.npy" --save "bf=$tmp/bf.npy" || bad "bf: operands not saved"
"$py" - "$tmp" <<'P' && ok || bad "bf: a result under the budget is not the product (NumPy, float64)"
import sys, numpy as np
d = sys.argv[1]
r = np.load(d + "/af.npy").astype(np.float64) @ np.load(d + "/bf.npy").astype(np.float64)
for n in ("bf.0", "bf.t"):
    c = np.load(d + "/" + n + ".npy").astype(np.float64)
    # bf16 keeps 8 bits: half an ulp of the element, and the f32 sums' error
    if not np.all(np.abs(c - r) <= np.abs(r) * 2.0 ** -8 + 1e-4 * np.abs(r).max()):
        sys.exit(1)
P

# conv2d on tir's gemm, weights packed (TIR_CONV=own), 2 threads
# (tensors 3.2 MiB, 3.6 MiB with its scratch): under 3600 KiB its
# k-blocks are shallower, the same bits
cat >"$tmp/cv.tir" <<'T'
x = randn([2, 64, 56, 56], seed=1)
w = randn([64, 64, 3, 3], seed=2)
y = conv2d(x, w, padding=1)
T
flags="--threads 2"
run_case cv "$tmp/cv.tir" 3600 TIR_GEMM=tir TIR_CONV=own
flags=
cmp -s "$tmp/cv.0.npy" "$tmp/cv.t.npy" && ok || bad "conv2d: shallower k-blocks changed the bits"

# attention on tir's gemm, 2 threads: tensors 8 MiB; under 8600 KiB
# chunks of fewer query rows and one entry's k and v packed at a time,
# the same bits
cat >"$tmp/at.tir" <<'T'
q = randn([16, 512, 64], seed=1)
k = randn([16, 512, 64], seed=2)
v = randn([16, 512, 64], seed=3)
y = attention(q, k, v)
T
flags="--threads 2"
run_case at "$tmp/at.tir" 8600 TIR_GEMM=tir
flags=
cmp -s "$tmp/at.0.npy" "$tmp/at.t.npy" && ok || bad "attention: fewer rows a chunk changed the bits"
# below what its least scratch needs beside the tensors: refused by the
# plan, at the attention, before anything is made
TIR_GEMM=tir "$tir" run "$tmp/at.tir" --threads 2 --max-memory 8400K --save "y=$tmp/x.npy" >"$tmp/o" 2>"$tmp/e"
rc=$?
[ $rc = 1 ] && grep -q 'at.tir:4:5: error: attention: the batch would hold .* least scratch this kernel needs' "$tmp/e" && ok ||
	bad "attention under 8400K: exit $rc, $(head -1 "$tmp/e")"

# no blocking fits: the budget's error at the op, exit 1
cat >"$tmp/tight.tir" <<'T'
a = randn([1024, 1024], seed=1)
b = randn([1024, 1024], seed=2)
print sum(a @ b)
T
TIR_GEMM=tir "$tir" run "$tmp/tight.tir" --max-memory 12300K >"$tmp/o" 2>"$tmp/e"
rc=$?
[ $rc = 1 ] && grep -q '^.*tight.tir:3:[0-9]*: error: matmul: .*(--max-memory)' "$tmp/e" && ok ||
	bad "no blocking fits: exit $rc, $(head -1 "$tmp/e")"

# tir serve --max-memory 14M: a batch of a matmul whose tensors (12 MiB)
# fit but not beside its whole packing buffer (6 MiB) and the upload
# reserve: in slabs, the same output as here, the server's peak (the
# timing line's, from its reply) within the budget
: >"$tmp/serve.log"
"$tir" serve --port 0 --max-memory 14M 2>"$tmp/serve.log" &
spid=$!
addr= i=0
while [ $i -lt 1200 ] && [ -z "$addr" ] && kill -0 $spid 2>/dev/null; do
	port=$(sed -n 's|^tir serve: listening on http://127\.0\.0\.1:\([0-9][0-9]*\) .*|\1|p' "$tmp/serve.log")
	[ -n "$port" ] && addr=127.0.0.1:$port || sleep 0.05
	i=$((i + 1))
done
if [ -n "$addr" ]; then
	TIR_GEMM=tir "$tir" run "$tmp/tight.tir" --quiet >"$tmp/local" 2>&1
	"$tir" run "$tmp/tight.tir" --remote "$addr" >"$tmp/remote" 2>"$tmp/remote.err" && ok ||
		bad "serve: the batch failed: $(head -1 "$tmp/remote.err")"
	cmp -s "$tmp/local" "$tmp/remote" && ok || bad "serve: the output differs from a local run"
	p=$(peak_kib "$tmp/remote.err")
	[ -n "$p" ] && [ "$p" -le 14336 ] && ok || bad "serve: the batch's peak ${p}K over the budget 14336K"
	kill -TERM $spid 2>/dev/null
	wait $spid 2>/dev/null
else
	bad "tir serve --port 0 did not start"
	kill -TERM $spid 2>/dev/null
fi
suite_end
