#!/bin/sh
# tests/suites/ops.sh — NumPy's common ops (issue 25) through the whole
# pipeline; their values are tests/oracle/oracle_ops.py's.  Checks:
#  1. a program using every one of them, at sizes where the gemm, conv2d
#     and the fused kernels cut work into tasks, prints the same bytes at
#     --threads 1 and 2, and with --no-fuse;
#  2. the same bytes run --remote against `tir serve` on loopback (started
#     and stopped here), and with a value sharded over two servers;
#  3. `tir help ops` lists each with its parameters, and docs/language.md
#     has a line for each;
#  4. `tir fmt` of the program is a fixed point (it formats to itself).
# Prints `N passed, M failed` last.  POSIX sh.
set -u
. "$(dirname "$0")/../sh-suite.sh"
suite_begin ops

cat >"$tmp/ops.tir" <<'EOF'
x = randn([256, 384], seed=7)
y = randn([384, 320], seed=8)
m = log1p(abs(x)) - expm1(x * 0.1)
print sum(isnan(log(x))), any(isinf(m)), all(isfinite(m), axis=0)
print std(m, axis=1, ddof=1), var(m, ddof=1), logsumexp(m, axis=0, keepdims=true)
print cumsum(m, axis=1), cumprod(slice(m, axis=1, stop=8) * 0.5 + 1.0, axis=0), cumsum(cast(gt(x, 0), i32))
print sort(m), argsort(m, axis=0), stack([x, x * 2.0], axis=1)
print einsum("ik,kj->ij", x, y), einsum("ik,kj,jl->il", x, y, transpose(y)), einsum("ii->i", slice(x, axis=1, stop=256))
img = randn([2, 8, 40, 40], seed=9)
w = randn([16, 2, 3, 3], seed=10)
print conv2d(img, w, padding=2, dilation=2, groups=4), conv2d(img, randn([8, 1, 3, 3], seed=11), groups=8, stride=2)
print maxpool2d(img, 3, stride=2, padding=1), avgpool2d(img, 3, padding=1, count_include_pad=false), avgpool2d(img, 2, padding=1)
print selu(x) + hardswish(x) + softplus(x) + softsign(x), tan(x) + atan(x) + sinh(x) + cosh(x) + asinh(x)
print elu(m) + celu(m, alpha=0.5) + leaky_relu(m) + hardsigmoid(m), prelu(img, reshape(arange(8) * 0.1, [8, 1, 1]))
print tile(slice(x, axis=1, stop=3), [2, 2]), triu(x, k=2), tril(img, k=-3)
print scatter_nd(x, [[3], [0], [3]], slice(x, axis=0, stop=3) * 2.0, reduction=add), scatter_nd(y, [[1, 2], [-1, 0]], [5.0, 6.0])
print sum(where(isnan(log(x)), 0.0, log(x)) + isinf(log(x)) * 2.0 - cast(isfinite(log(x)), f32), axis=0)
EOF

# 1. the same bytes at 1 and 2 threads, fused or not
if "$tir" run --threads 1 "$tmp/ops.tir" >"$tmp/t1" 2>"$tmp/e1"; then ok; else bad "run --threads 1 failed: $(cat "$tmp/e1")"; fi
"$tir" run --threads 2 "$tmp/ops.tir" >"$tmp/t2" 2>/dev/null
if cmp -s "$tmp/t1" "$tmp/t2"; then ok; else bad "--threads 2 prints other bytes than --threads 1"; fi
"$tir" run --threads 2 --no-fuse "$tmp/ops.tir" >"$tmp/nf" 2>/dev/null
if cmp -s "$tmp/t1" "$tmp/nf"; then ok; else bad "--no-fuse prints other bytes than the fused run"; fi
if [ "$(wc -l <"$tmp/t1")" -gt 100 ]; then ok; else bad "the program printed too little: $(head -c 300 "$tmp/t1")"; fi

# 2. --remote: servers on loopback; a value sharded over two of them
# gives the bytes of the same program run here
serve() { # serve N: sets port (empty when it does not start)
	"$tir" serve --port 0 2>"$tmp/serve$1.log" &
	eval "spid$1=\$!"
	port=
	i=0
	while [ $i -lt 1200 ] && [ -z "$port" ]; do
		port=$(sed -n 's|^tir serve: listening on http://127\.0\.0\.1:\([0-9][0-9]*\) .*|\1|p' "$tmp/serve$1.log")
		[ -n "$port" ] || sleep 0.05
		i=$((i + 1))
	done
}
serve 1
port1=$port
serve 2
port2=$port
trap 'kill -9 ${spid1:-} ${spid2:-} 2>/dev/null; rm -rf "$tmp"' EXIT INT TERM
if [ -n "$port1" ] && [ -n "$port2" ]; then
	"$tir" run --remote "127.0.0.1:$port1" "$tmp/ops.tir" >"$tmp/r" 2>"$tmp/re"
	if cmp -s "$tmp/t1" "$tmp/r"; then ok; else bad "--remote prints other bytes: $(head -c 300 "$tmp/re")"; fi
	cat >"$tmp/shard.tir" <<'EOF'
x = randn([8, 6], seed=4)
s = shard(x, axis=0, devices=["remote:0", "remote:1"])
print std(s, axis=0, ddof=1), var(s, axis=1, ddof=1), cumsum(s, axis=0), sort(s, axis=0), any(gt(s, 2.0), axis=0)
print logsumexp(s, axis=0), einsum("ij,kj->ik", s, s), isnan(s), log1p(abs(s)), elu(s), tile(s, [1, 2]), triu(s)
EOF
	sed 's/^s = shard.*/s = x/' "$tmp/shard.tir" >"$tmp/local.tir"
	"$tir" run --remote "127.0.0.1:$port1,127.0.0.1:$port2" "$tmp/shard.tir" >"$tmp/sr" 2>"$tmp/se"
	"$tir" run "$tmp/local.tir" >"$tmp/sl" 2>/dev/null
	if [ -s "$tmp/sl" ] && cmp -s "$tmp/sr" "$tmp/sl"; then ok; else bad "sharded over two servers: other bytes than here: $(head -c 300 "$tmp/se")"; fi
else
	bad "tir serve did not start: $(cat "$tmp/serve1.log" "$tmp/serve2.log")"
fi
for p in ${spid1:-} ${spid2:-}; do
	kill -TERM "$p" 2>/dev/null
	wait "$p" 2>/dev/null
done

# 3. the table's help and the docs
"$tir" help ops >"$tmp/help"
for sig in "log1p       (x)" "expm1       (x)" "isnan       (x)" "isinf       (x)" "isfinite    (x)" \
	"var         (x, axis?:axes, keepdims:bool=false, ddof:int=0)" \
	"std         (x, axis?:axes, keepdims:bool=false, ddof:int=0)" \
	"any         (x, axis?:axes, keepdims:bool=false)" "all         (x, axis?:axes, keepdims:bool=false)" \
	"logsumexp   (x, axis?:axes, keepdims:bool=false)" "cumsum      (x, axis?:int)" "cumprod     (x, axis?:int)" \
	"sort        (x, axis:int=-1)" "argsort     (x, axis:int=-1)" "stack       (xs*, axis:int=0)" \
	"einsum      (subscripts:str, operands*)" \
	"conv2d      (x, w, bias?, stride:pair=1, padding:pair=0, dilation:pair=1, groups:int=1)" \
	"maxpool2d   (x, kernel:pair, stride?:pair, padding:pair=0)" \
	"avgpool2d   (x, kernel:pair, stride?:pair, padding:pair=0, count_include_pad:bool=true)" \
	"tile        (x, reps:shape)" "triu        (x, k:int=0)" "elu         (x, alpha:float=1.0)" \
	"leaky_relu  (x, negative_slope:float=0.01)" "prelu       (x, slope)" "atanh       (x)" "selu        (x)"; do
	if grep -qF "  $sig" "$tmp/help"; then ok; else bad "tir help ops has no line '$sig'"; fi
done
for op in log1p expm1 isnan isinf isfinite std any all logsumexp cumsum cumprod sort argsort stack einsum \
	dilation groups count_include_pad ddof selu hardswish softplus softsign tan asin acos atan sinh cosh asinh \
	acosh atanh tile triu tril elu celu leaky_relu hardsigmoid prelu; do
	if grep -q "\`$op" docs/language.md; then ok; else bad "docs/language.md does not name \`$op"; fi
done

# 4. fmt is a fixed point
if "$tir" fmt "$tmp/ops.tir" >"$tmp/f1.tir" 2>"$tmp/fe" && "$tir" fmt "$tmp/f1.tir" >"$tmp/f2.tir" &&
	cmp -s "$tmp/f1.tir" "$tmp/f2.tir"; then ok; else bad "tir fmt is not a fixed point: $(cat "$tmp/fe")"; fi
"$tir" run --threads 1 "$tmp/f1.tir" >"$tmp/tf" 2>/dev/null
if cmp -s "$tmp/t1" "$tmp/tf"; then ok; else bad "the formatted program prints other bytes"; fi

suite_end
