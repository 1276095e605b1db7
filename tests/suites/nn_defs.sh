#!/bin/sh
# tests/suites/nn_defs.sh — attention is its definition written out in
# tir's own ops, byte for byte: attention(q, k, v) against softmax(q @
# transpose(k) * 1/sqrt(d)) @ v (docs/decisions.md), in f32 and f64, with
# broadcast batch axes, fused and --no-fuse, on every vector path this
# CPU has, at one thread and three (and 900 keys: the scores @ v over
# two k-blocks); and the causal form against the
# written-out mask within rounding (the masked keys leave the softmax's
# sum in other lanes).  Prints `N passed, M failed` last.
. "$(dirname "$0")/../sh-suite.sh"
suite_begin nn_defs

cat >"$tmp/att.tir" <<'EOF'
q = randn([2, 3, 40, 64], seed=1)
k = randn([2, 3, 56, 64], seed=2)
v = randn([1, 3, 56, 24], seed=3)
a = attention(q, k, v)
b = softmax((q @ transpose(k, [0, 1, 3, 2])) * 0.125) @ v
print max(abs(a - b)), sum(abs(a))
q2 = cast(q, f64)
k2 = cast(k, f64)
v2 = cast(v, f64)
a2 = attention(q2, k2, v2)
b2 = softmax((q2 @ transpose(k2, [0, 1, 3, 2])) * 0.125) @ v2
print max(abs(a2 - b2)), sum(abs(a2))
c = attention(q, k, v, causal=true)
i = reshape(arange(40), [40, 1])
j = reshape(arange(56), [1, 56])
s = where(gt(j, i), -inf, (q @ transpose(k, [0, 1, 3, 2])) * 0.125)
d = softmax(s) @ v
print lt(max(abs(c - d)), 1e-6), sum(abs(c))
q3 = randn([1, 2, 20, 16], seed=4)
k3 = randn([1, 2, 900, 16], seed=5)
v3 = randn([1, 2, 900, 8], seed=6)
a3 = attention(q3, k3, v3)
b3 = softmax((q3 @ transpose(k3, [0, 1, 3, 2])) * 0.25) @ v3
print max(abs(a3 - b3)), sum(abs(a3)) * 100
EOF

paths=scalar
case $(uname -m) in
x86_64 | amd64)
	flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null)
	paths="scalar sse2"
	case " $flags " in *" avx2 "*) case " $flags " in *" fma "*) paths="$paths avx2" ;; esac ;; esac
	case " $flags " in *" avx512f "*) paths="$paths avx512" ;; esac
	;;
esac

for p in $paths; do
	for opts in "--threads 1" "--threads 3" "--no-fuse"; do
		# shellcheck disable=SC2086
		TIR_VMATH=$p "$tir" run --quiet $opts "$tmp/att.tir" >"$tmp/out" 2>"$tmp/err"
		st=$?
		# the differences print 0 and the causal check true; the sums
		# are there so that a run of all zeros cannot pass
		diffs=$(awk 'NR == 2 || NR == 6 || NR == 10 || NR == 14' "$tmp/out" | tr '\n' ' ')
		sums=$(awk 'NR == 4 || NR == 8 || NR == 12 || NR == 16' "$tmp/out" | tr '\n' ' ')
		if [ $st -eq 0 ] && [ "$diffs" = "0 0 true 0 " ] &&
			awk -v s="$sums" 'BEGIN { n = split(s, v, " "); for (i = 1; i <= n; i++) if (v[i] + 0 < 100) exit 1; exit n != 4 }'; then
			ok
		else
			bad "TIR_VMATH=$p $opts (exit $st): differences '$diffs', sums '$sums'"
			head -n 5 "$tmp/err"
		fi
	done
done

suite_end
