#!/bin/sh
# tests/suites/gemm.sh — --gemm tir|openblas (TIR_GEMM) and OpenBLAS loaded
# only when used (lib/exec/blas.c): every oracle case with a product
# (matmul, batched matmul, conv2d, attention) and the samples against NumPy
# under --gemm openblas, also with OPENBLAS_CORETYPE=Sandybridge passed to
# those runs alone and under TIR_VMATH=scalar (whose default gemm is
# OpenBLAS's); the flag's spellings and misuse, the flag winning over
# TIR_GEMM, the --profile footer naming the gemm that ran; tir not linked
# with OpenBLAS or its Fortran runtime; a run with no product mapping no
# OpenBLAS and making no sched_yield (strace, when installed), and a live
# REPL mapping it only once a product ran; conv2d's three ways (TIR_CONV)
# against NumPy and giving the same bytes.  POSIX sh.
set -u

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
. tests/sh-suite.sh
suite_begin gemm

# ---- against NumPy under openblas ----
# oracle_check NAME ENV...: the oracle's product cases under ENV
oracle_check() {
	name=$1
	shift
	env "$@" "$py" tests/oracle/oracle.py --tir "$tir" --products >"$tmp/oracle" 2>&1
	last=$(tail -n 1 "$tmp/oracle")
	case $last in
	"0 passed, "*) bad "$name: no product case ran: $last" ;;
	*" passed, 0 failed") ok ;;
	*) bad "$name: $(sed '$d' "$tmp/oracle" | head -n 5) ($last)" ;;
	esac
}
oracle_check "oracle --gemm openblas" TIR_GEMM=openblas
oracle_check "oracle --gemm openblas, OpenBLAS's Sandybridge kernel" TIR_GEMM=openblas OPENBLAS_CORETYPE=Sandybridge
oracle_check "oracle TIR_VMATH=scalar (default: openblas)" TIR_VMATH=scalar TIR_GEMM=

if TIR_GEMM=openblas "$py" tests/oracle/samples_check.py --tir "$tir" >"$tmp/samples" 2>&1; then
	ok
else
	bad "samples_check under --gemm openblas: $(tail -n 3 "$tmp/samples")"
fi

# ---- conv2d's ways (lib/exec/nn.c): columns packed per task, shared by
# tiles with the weights packed, or read where they lie; TIR_CONV forces
# one whatever the shape.  Each against NumPy, and the same bytes by
# every way at 1 and 3 threads, on the shapes of a ResNet's layers at
# batch 1 (56x56 positions: per task; 14x14 and 7x7: shared, weights
# unpacked) and others (a bias, stride 2, an edge panel of 130 filters,
# taps past a k-block, f64, groups, dilation, two images) ----
for way in own shared direct; do
	oracle_check "oracle TIR_CONV=$way" TIR_CONV=$way TIR_GEMM=tir
done
cat >"$tmp/conv.tir" <<'EOF'
x1 = randn([1, 64, 56, 56], seed=1)
w1 = randn([64, 64, 3, 3], seed=2) * 0.05
x3 = randn([1, 256, 14, 14], seed=3)
w3 = randn([256, 256, 3, 3], seed=4) * 0.02
x4 = randn([1, 256, 14, 14], seed=5)
w4 = randn([512, 256, 3, 3], seed=6) * 0.02
w5 = randn([512, 512, 3, 3], seed=7) * 0.02
d1 = randn([512, 256, 1, 1], seed=8) * 0.05
b5 = randn([512], seed=9)
x6 = randn([2, 96, 9, 9], seed=10, dtype=f64)
w6 = randn([130, 96, 3, 3], seed=11, dtype=f64) * 0.05
w7 = randn([96, 48, 3, 3], seed=12) * 0.05
y1 = conv2d(x1, w1, padding=1)
y3 = conv2d(x3, w3, padding=1)
y4 = conv2d(x4, w4, stride=2, padding=1)
y5 = conv2d(y4, w5, b5, padding=1)
y6 = conv2d(x4, d1, stride=2)
y7 = conv2d(x6, w6, stride=2, padding=1)
y8 = conv2d(slice(x3, axis=1, stop=96), w7, groups=2, dilation=2, padding=2)
x9 = randn([1, 3, 90, 97], seed=13)
w9 = randn([16, 3, 7, 7], seed=14) * 0.1
y9 = conv2d(x9, w9, stride=2, padding=3)
EOF
# conv_run OUT THREADS ENV...: every y saved whole into OUT (a .safetensors)
conv_run() {
	out=$1
	threads=$2
	shift 2
	env "$@" TIR_GEMM=tir "$tir" run --quiet --threads "$threads" "$tmp/conv.tir" --save "y1=$out" --save "y3=$out" --save "y4=$out" \
		--save "y5=$out" --save "y6=$out" --save "y7=$out" --save "y8=$out" --save "y9=$out" >/dev/null 2>"$tmp/conv.err"
}
for way in own shared direct; do
	for t in 1 3; do
		if conv_run "$tmp/conv.$way.$t.safetensors" "$t" TIR_CONV=$way; then
			ok
		else
			bad "conv2d by TIR_CONV=$way at --threads $t: $(head -n 3 "$tmp/conv.err")"
		fi
	done
done
conv_run "$tmp/conv.default.safetensors" 2 TIR_CONV= || bad "conv2d by the shapes' ways: $(head -n 3 "$tmp/conv.err")"
# AVX2's kernels make the same chains as AVX-512's (one FMA a step): the
# same bytes, each path's im2col too (AVX-512's stride-2 rows: vectors).
# Only where this run's path is one of those two (SSE2 and C round each
# product, then each sum) and the CPU has AVX2 and FMA.
same=""
case "${TIR_VMATH:-}" in
"" | avx512 | avx2)
	if grep -qw avx2 /proc/cpuinfo 2>/dev/null && grep -qw fma /proc/cpuinfo; then
		conv_run "$tmp/conv.avx2.safetensors" 2 TIR_CONV= TIR_VMATH=avx2 ||
			bad "conv2d on AVX2: $(head -n 3 "$tmp/conv.err")"
		same=avx2
	fi
	;;
esac
for f in own.3 shared.1 shared.3 direct.1 direct.3 default $same; do
	if cmp -s "$tmp/conv.own.1.safetensors" "$tmp/conv.$f.safetensors"; then ok; else
		bad "conv2d: the values of $f differ from TIR_CONV=own at --threads 1"
	fi
done

# ---- the flag ----
cat >"$tmp/p.tir" <<'EOF'
a = randn([64, 48], seed=1)
b = randn([48, 32], seed=2)
print sum(a @ b)
EOF
# footer ENV... -- ARGS: the gemm named by --profile's footer
footer() {
	env "$@" >/dev/null 2>"$tmp/prof"
	sed -n 's/.*; gemm: \(.*\); blas: .*/\1/p' "$tmp/prof"
}
expect_footer() {
	want=$1
	shift
	got=$(footer "$@")
	case $got in
	$want) ok ;;
	*) bad "footer of $*: '$got', want $want" ;;
	esac
}
expect_footer "tir *" TIR_GEMM= "$tir" run --profile --gemm tir "$tmp/p.tir"
expect_footer "openblas (OpenBLAS *" TIR_GEMM= "$tir" run --profile --gemm openblas "$tmp/p.tir"
expect_footer "openblas (OpenBLAS *" TIR_GEMM= "$tir" run --profile --gemm=openblas "$tmp/p.tir"
expect_footer "openblas (OpenBLAS *" TIR_GEMM=openblas "$tir" run --profile "$tmp/p.tir"
expect_footer "tir *" TIR_GEMM=openblas "$tir" run --profile --gemm tir "$tmp/p.tir"
expect_footer "openblas (OpenBLAS *, the default on this vector path" TIR_GEMM= TIR_VMATH=scalar "$tir" run --profile "$tmp/p.tir"
expect_footer "openblas (OpenBLAS *core Sandybridge*" TIR_GEMM=openblas OPENBLAS_CORETYPE=Sandybridge "$tir" run --profile "$tmp/p.tir"
expect_footer "tir scalar *" TIR_GEMM=tir TIR_VMATH=scalar "$tir" run --profile "$tmp/p.tir"
expect_footer "tir scalar *; OpenBLAS, the default on this vector path, is not installed" \
	TIR_GEMM= TIR_VMATH=scalar TIR_OPENBLAS=/nonexistent/libopenblas.so.0 "$tir" run --profile "$tmp/p.tir"
# on a machine with a tuned path (AVX2 or AVX-512) the default is tir's
case $("$tir" --version | sed -n 's/^vector path: //p') in
avx2 | avx512) expect_footer "tir *" TIR_GEMM= "$tir" run --profile "$tmp/p.tir" ;;
esac

# misuse: exit 2 and a message naming the value
"$tir" run --gemm bogus "$tmp/p.tir" >/dev/null 2>"$tmp/err"
st=$?
if [ $st -eq 2 ] && grep -q "gemm wants tir or openblas, got 'bogus'" "$tmp/err"; then ok; else
	bad "--gemm bogus: exit $st, $(head -n 1 "$tmp/err")"; fi
TIR_GEMM=bogus "$tir" run "$tmp/p.tir" >/dev/null 2>"$tmp/err"
st=$?
if [ $st -eq 2 ] && grep -q "TIR_GEMM=bogus: unknown gemm" "$tmp/err"; then ok; else
	bad "TIR_GEMM=bogus: exit $st, $(head -n 1 "$tmp/err")"; fi
"$tir" serve --gemm bogus >/dev/null 2>"$tmp/err"
st=$?
if [ $st -eq 2 ] && grep -q "gemm: bad value 'bogus'" "$tmp/err"; then ok; else
	bad "serve --gemm bogus: exit $st, $(head -n 1 "$tmp/err")"; fi
# openblas asked for by name and missing: a run-time error at the product
TIR_OPENBLAS=/nonexistent/libopenblas.so.0 "$tir" run --gemm openblas "$tmp/p.tir" >/dev/null 2>"$tmp/err"
st=$?
if [ $st -eq 1 ] && grep -q "p.tir:3:.*--gemm openblas: OpenBLAS is not installed" "$tmp/err"; then ok; else
	bad "--gemm openblas with no OpenBLAS: exit $st, $(head -n 1 "$tmp/err")"; fi
# the same answer within f32 rounding either way
a=$("$tir" run --quiet --gemm tir "$tmp/p.tir" | tail -n 1)
b=$("$tir" run --quiet --gemm openblas "$tmp/p.tir" | tail -n 1)
if "$py" -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(abs(a - b) > 1e-3 * max(1, abs(a)))" "$a" "$b"; then
	ok
else
	bad "sum(a @ b): $a with --gemm tir, $b with --gemm openblas"
fi

# tir serve --gemm openblas: the server's products on OpenBLAS (a remote
# run's --profile footer is the server's), the same answer
pids=
trap 'for p in $pids; do kill -TERM "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT INT TERM
: >"$tmp/serve.log"
TIR_GEMM= "$tir" serve --port=0 --host=127.0.0.1 --threads=2 --gemm openblas 2>"$tmp/serve.log" &
spid=$!
pids=$spid
addr=
i=0
while [ $i -lt 1200 ] && [ -z "$addr" ] && kill -0 "$spid" 2>/dev/null; do
	port=$(sed -n 's|^tir serve: listening on http://127\.0\.0\.1:\([0-9][0-9]*\) .*|\1|p' "$tmp/serve.log")
	[ -n "$port" ] && addr=127.0.0.1:$port || sleep 0.05
	i=$((i + 1))
done
if [ -z "$addr" ]; then
	bad "tir serve --gemm openblas did not start: $(head -n 3 "$tmp/serve.log")"
else
	expect_footer "openblas (OpenBLAS *" TIR_GEMM=tir "$tir" run --profile --remote "$addr" "$tmp/p.tir"
	r=$("$tir" run --quiet --remote "$addr" "$tmp/p.tir" | tail -n 1)
	[ "$r" = "$b" ] && ok || bad "serve --gemm openblas: $r, a local --gemm openblas run $b"
fi

# ---- OpenBLAS not loaded unless used ----
if command -v ldd >/dev/null 2>&1; then
	if ldd "$tir" | grep -q -e openblas -e gfortran; then
		bad "tir is linked with OpenBLAS or libgfortran: $(ldd "$tir" | grep -e openblas -e gfortran | tr '\n' ' ')"
	else
		ok
	fi
fi
"$py" - "$tir" >"$tmp/maps" 2>&1 <<'EOF'
# a live REPL: no OpenBLAS mapped until a product runs on it
import os, select, subprocess, sys, time
env = dict(os.environ, TIR_GEMM="openblas", TIR_HISTORY="")
p = subprocess.Popen([sys.argv[1], "repl"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     stderr=subprocess.STDOUT, env=env)
def answer(line, want):
    p.stdin.write(line.encode() + b"\n")
    p.stdin.flush()
    out, end = b"", time.monotonic() + 20
    while want.encode() not in out:
        r, _, _ = select.select([p.stdout], [], [], max(0, end - time.monotonic()))
        if not r:
            sys.exit("no answer to %r (got %r)" % (line, out))
        out += os.read(p.stdout.fileno(), 4096)
def mapped():
    with open("/proc/%d/maps" % p.pid) as f:
        maps = f.read()
    return "libopenblas" in maps, "libgfortran" in maps
answer("a = ones([3, 3], f32)", "")
answer("sum(a)", "9")
before = mapped()
answer("sum(a @ a)", "27")
after = mapped()
p.stdin.close()
p.wait(20)
print("before %s %s after %s %s" % (before + after))
sys.exit(0 if before == (False, False) and after == (True, True) else 1)
EOF
if [ $? -eq 0 ]; then ok; else bad "repl maps: $(tail -n 1 "$tmp/maps") (want nothing before a product, both after)"; fi

# no product: no spinning thread (OpenBLAS's spun with sched_yield beside
# tir's pool when it was linked); a product at --threads 1: OpenBLAS on one
# thread, no spinning either
case $BUILD in *asan*) sanitized=1 ;; *) sanitized= ;; esac
if [ -n "$sanitized" ]; then
	echo "gemm: 4 checks skipped: a sanitizer build ($BUILD) calls sched_yield itself"
elif command -v strace >/dev/null 2>&1; then
	"$py" -c "
print('t = 0.0')
for i in range(2000): print('t = t + %d.0' % (i % 7))
print('print t')" >"$tmp/long.tir"
	for g in tir openblas; do
		for prog in long p; do
			strace -f -c -o "$tmp/strace" -e trace=sched_yield "$tir" run --quiet --threads 1 --gemm $g \
				"$tmp/$prog.tir" >/dev/null 2>&1
			n=$(awk '$NF == "sched_yield" {print $4}' "$tmp/strace")
			if [ "${n:-0}" -le 2 ]; then ok; else
				bad "$prog.tir --threads 1 --gemm $g: $n sched_yield calls (want at most 2)"; fi
		done
	done
else
	echo "gemm: 4 checks skipped: strace is not installed (the sched_yield counts)"
fi

suite_end
