#!/bin/sh
# tests/suites/tasks.sh — the parallelism a kernel offers, as --profile's
# tasks column shows it: a large matmul ([4096, 4096] @ [4096, 4096]), an
# MLP layer's ([256, 1024] @ [1024, 1024]: tir's gemm packs both operands
# once and shares them, so its tiles can be small), a batched matmul
# ([32, 256, 64] @ [32, 64, 256]), a conv2d ([8, 64, 56, 56], 3x3x64: its
# weights packed once, positions cut toward 256 tasks), an attention (q,
# k, v [4, 8, 512, 64]: each head's k and v packed once, query rows cut), a
# row kernel (softmax over [4096, 1024]), a reduction kernel of its own
# (max by row of a stored [4096, 4096]: reduce.c cuts along a kept axis), a
# reduction to one value (var of the same: the pieces of its pairwise sums;
# also inside a fused kernel that adds to it) and a
# fused elementwise chain over 16M f32, a CNN's last layer at batch 1
# (one per thread at 64: below), a lone relu and sub by their reference
# kernels (below), and programs written by `for`
# loops (repeated blocks, below), each offer at least 4 tasks per thread at --threads 16 and 64
# (the pool starts that many threads on any machine, this one's two cores
# included), the same number at --threads 1 (the cut never follows the
# thread count) and print the same bytes at 1, 16 and 64; `tir --version`
# names the caches the cuts are sized by.  Prints `N passed, M failed` last.
set -u
. "$(dirname "$0")/../sh-suite.sh"
suite_begin tasks

# the caches, as `tir --version` prints them
line=$("$tir" --version | grep '^caches: ')
if printf '%s\n' "$line" |
	grep -Eq '^caches: L1d [0-9]+ (KiB|MiB), L2 [0-9]+ (KiB|MiB), L3 ([0-9]+ (KiB|MiB)|unknown) \((sysconf|sysfs|default)(, (sysfs|default))*\)$'; then
	ok
else
	bad "tir --version: no 'caches: L1d N KiB, L2 N MiB, L3 ... (source)' line: '$line'"
fi

cat >"$tmp/matmul.tir" <<'EOF'
a = ones([4096, 4096])
b = ones([4096, 4096]) * 0.5
y = a @ b
print slice(y, axis=0, stop=1), sum(y)
EOF
cat >"$tmp/layer.tir" <<'EOF'
a = arange(262144) * 0.00001
b = ones([1024, 1024]) * 0.5
y = reshape(a, [256, 1024]) @ b
print slice(y, axis=0, stop=1), sum(y)
EOF
cat >"$tmp/softmax.tir" <<'EOF'
x = arange(4194304) * 0.001
y = softmax(reshape(x, [4096, 1024]), axis=-1)
print sum(y, axis=0)
EOF
cat >"$tmp/reduce.tir" <<'EOF'
x = rand([4096, 4096], seed=1)
print slice(x, stop=1)
print max(x, axis=1), min(transpose(x, [1, 0]), axis=0)
EOF
cat >"$tmp/whole.tir" <<'EOF'
x = rand([4096, 4096], seed=1)
print slice(x, stop=1)
print var(x), sum(x)
EOF
cat >"$tmp/wholefused.tir" <<'EOF'
x = rand([4096, 4096], seed=2)
y = sum(max(x, axis=1)) + var(x) + 1
print y
EOF
cat >"$tmp/batched.tir" <<'EOF'
a = rand([32, 256, 64], seed=1)
b = rand([32, 64, 256], seed=2)
y = a @ b
print sum(y, axis=0)
EOF
cat >"$tmp/conv.tir" <<'EOF'
x = rand([8, 64, 56, 56], seed=1)
w = rand([64, 64, 3, 3], seed=2) * 0.1
y = conv2d(x, w, padding=1)
print sum(y, axis=0)
EOF
cat >"$tmp/attn.tir" <<'EOF'
q = randn([4, 8, 512, 64], seed=1)
k = randn([4, 8, 512, 64], seed=2)
v = randn([4, 8, 512, 64], seed=3)
print sum(attention(q, k, v), axis=1)
EOF
cat >"$tmp/chain.tir" <<'EOF'
x = arange(16777216) * 1e-7
y = sqrt(tanh(x * 0.5) * exp(x * x * -0.5) + sigmoid(x) + 0.5)
print slice(y, stop=3), max(y)
EOF

# tasks PROFILE PATTERN: the tasks column of the first kernel whose name
# matches PATTERN (an ERE on the kernel column)
tasks() {
	awk -v pat="$2" 'NR > 1 && $1 ~ /^[0-9]+$/ {
		name = substr($0, 6, 44); sub(/ +$/, "", name)
		if (name ~ pat) { print $NF; exit }
	}' "$1"
}

for case in "matmul ^matmul$" "layer ^matmul$" "batched ^matmul$" "conv ^conv2d$" "attn ^attention$" "softmax ^softmax$" "reduce ^max$" "whole ^var$" "wholefused ^fused\\[.*var" "chain ^fused\\[mul"; do
	name=${case%% *}
	pat=${case#* }
	"$tir" run --profile --threads 1 "$tmp/$name.tir" >"$tmp/out1" 2>"$tmp/prof1"
	one=$(tasks "$tmp/prof1" "$pat")
	for t in 16 64; do
		"$tir" run --profile --threads "$t" "$tmp/$name.tir" >"$tmp/out$t" 2>"$tmp/prof$t"
		got=$(tasks "$tmp/prof$t" "$pat")
		case $got in
		'' | *[!0-9]*)
			bad "$name at --threads $t: no tasks column for /$pat/ in --profile:"
			cat "$tmp/prof$t"
			continue
			;;
		esac
		if [ "$got" -ge $((4 * t)) ]; then ok; else
			bad "$name at --threads $t: $got tasks, fewer than 4 per thread"
		fi
		if [ "$got" = "$one" ]; then ok; else
			bad "$name: $got tasks at --threads $t, $one at --threads 1"
		fi
		if cmp -s "$tmp/out1" "$tmp/out$t"; then ok; else
			bad "$name: stdout at --threads $t differs from --threads 1"
			diff "$tmp/out1" "$tmp/out$t" | head -n 5
		fi
	done
done

# a CNN's last layer at batch 1 (x [1, 512, 7, 7], w [512, 512, 3, 3]: 49
# positions, one panel of them and a part, so its tasks are cut along the
# filters): at least 4 tasks per thread at --threads 16, one per thread at
# 64 (86 tiles of 12 filters by a panel of 32 positions), the same number
# at 1, the same bytes.  --profile's tasks are the compute's: packing
# tasks are not counted (before, 258 of them packed the weights and one
# task made the whole product, and the column said 259; TIR_CONV=own still
# runs so, and shows 1).
cat >"$tmp/late.tir" <<'EOF'
x = rand([1, 512, 7, 7], seed=1)
w = rand([512, 512, 3, 3], seed=2) * 0.01
y = conv2d(x, w, padding=1)
print sum(y, axis=0)
EOF
"$tir" run --profile --threads 1 "$tmp/late.tir" >"$tmp/out1" 2>"$tmp/prof1"
one=$(tasks "$tmp/prof1" '^conv2d$')
for t in 16 64; do
	"$tir" run --profile --threads "$t" "$tmp/late.tir" >"$tmp/out$t" 2>"$tmp/prof$t"
	got=$(tasks "$tmp/prof$t" '^conv2d$')
	want=$((t == 16 ? 4 * t : t))
	case $got in
	'' | *[!0-9]*) bad "late conv2d at --threads $t: no tasks column in --profile" ;;
	*) if [ "$got" -ge "$want" ]; then ok; else bad "late conv2d at --threads $t: $got tasks, fewer than $want"; fi ;;
	esac
	if [ "$got" = "$one" ]; then ok; else bad "late conv2d: $got tasks at --threads $t, $one at --threads 1"; fi
	if cmp -s "$tmp/out1" "$tmp/out$t"; then ok; else bad "late conv2d: stdout at --threads $t differs from --threads 1"; fi
done

# --profile's tasks are the compute's, not the packing's: TIR_CONV=own
# packs the same layer's weights in some 258 tasks and makes its product
# in a task or two, and the column must say the latter
TIR_CONV=own "$tir" run --profile --threads 16 "$tmp/late.tir" >/dev/null 2>"$tmp/prof_own"
got=$(tasks "$tmp/prof_own" '^conv2d$')
case $got in
'' | *[!0-9]*) bad "late conv2d, TIR_CONV=own: no tasks column in --profile" ;;
*) if [ "$got" -lt 16 ]; then ok; else bad "late conv2d, TIR_CONV=own: $got tasks: packing counted as compute"; fi ;;
esac

# an elementwise op by its reference kernel (--no-fuse; a relu after a
# conv2d, which nothing fuses with, runs so too): a float op over one
# contiguous run is cut into tasks (elementwise.c), unary and binary, at
# least 4 per thread at 16 and 64, the same number at 1, and the bytes
# the fused kernel prints.
cat >"$tmp/lone.tir" <<'EOF'
x = rand([4096, 4096], seed=6)
y = relu(x - 0.5)
print sum(y), slice(y, stop=2)
EOF
"$tir" run "$tmp/lone.tir" >"$tmp/fused.out" 2>/dev/null
for op in relu sub; do
	"$tir" run --no-fuse --profile --threads 1 "$tmp/lone.tir" >"$tmp/out1" 2>"$tmp/prof1"
	one=$(tasks "$tmp/prof1" "^$op\$")
	for t in 16 64; do
		"$tir" run --no-fuse --profile --threads "$t" "$tmp/lone.tir" >"$tmp/out$t" 2>"$tmp/prof$t"
		got=$(tasks "$tmp/prof$t" "^$op\$")
		case $got in
		'' | *[!0-9]*) bad "lone $op at --threads $t: no tasks column in --profile" ;;
		*) if [ "$got" -ge $((4 * t)) ]; then ok; else bad "lone $op at --threads $t: $got tasks, fewer than 4 per thread"; fi ;;
		esac
		if [ "$got" = "$one" ]; then ok; else bad "lone $op: $got tasks at --threads $t, $one at --threads 1"; fi
		if cmp -s "$tmp/fused.out" "$tmp/out$t"; then ok; else bad "lone $op: stdout at --threads $t differs from the fused run's"; fi
	done
done

# programs written by `for` loops: N repeated blocks fuse as one block
# does (no cap on a kernel's ops splits them into pieces), and every
# kernel over a million elements (4 MiB or more moved, --profile's MiB
# column) offers at least 4 tasks per thread, a sum to one value under an
# elementwise root (t = t + sum(y)) included; the same bytes at 1, 16
# and 64 threads.  (The values are of 16M elements: a task holds at least
# L1d's bytes, so a kernel of 1M f32 offers 85 tasks at 48 KiB.)
# blocks: bench/chain.tir's chain 8 times, each summed into t; steps: 48
# steps of x = x * 1.001 + 0.001 * i and their sum, one kernel of 97 ops
# reading 96 values; means: a mean to one value under an elementwise
# root, 6 times.  Each prints what --no-fuse prints.
cat >"$tmp/blocks.tir" <<'EOF'
x = rand([16777216], seed=3) * 4 - 2
t = 0
for i in range(8) {
  y = sqrt(tanh(x * 0.5) * exp(x * x * -0.5) + sigmoid(x) + 0.5)
  t = t + sum(y)
}
print t
EOF
cat >"$tmp/steps.tir" <<'EOF'
x = rand([16777216], seed=4)
for i in range(48) {
  x = x * 1.001 + 0.001 * i
}
print sum(x)
EOF
cat >"$tmp/means.tir" <<'EOF'
x = rand([4096, 4096], seed=5)
t = 1
for i in range(6) {
  t = t * 0.5 + mean(exp(x * (0.25 * i)))
}
print t
EOF
# big_tasks PROFILE THREADS: each kernel moving 4 MiB or more with fewer
# than 4 tasks per thread, "NAME (N tasks)"
big_tasks() {
	awk -v want=$((4 * $2)) 'NR > 1 && $1 ~ /^[0-9]+$/ && $(NF - 2) + 0 >= 4 && $NF + 0 < want {
		name = substr($0, 6, 44); sub(/ +$/, "", name); print name " (" $NF " tasks)"
	}' "$1"
}
# NAME:KERNELS:PATTERN: --explain shows KERNELS kernels matching PATTERN
for case in "blocks:8:fused 11 ops \[mul tanh mul mul exp mul sigmoid add add sqrt sum\]" \
	"steps:1:fused 9[0-9] ops" "means:6:fused 3 ops \[mul exp mean\]"; do
	name=${case%%:*}
	rest=${case#*:}
	want=${rest%%:*}
	pat=${rest#*:}
	"$tir" run --explain "$tmp/$name.tir" >/dev/null 2>"$tmp/explain"
	got=$(grep -Ec "^kernel [0-9]+: $pat" "$tmp/explain")
	if [ "$got" = "$want" ] && ! grep -Eq 'kernel is full|values already' "$tmp/explain"; then ok; else
		bad "$name: $got kernels /$pat/, expected $want:"
		head -n 20 "$tmp/explain"
	fi
	"$tir" run --threads 1 "$tmp/$name.tir" >"$tmp/out1" 2>/dev/null
	"$tir" run --threads 1 --no-fuse "$tmp/$name.tir" >"$tmp/ref" 2>/dev/null
	if cmp -s "$tmp/out1" "$tmp/ref"; then ok; else
		bad "$name: stdout fused differs from --no-fuse"
		diff "$tmp/ref" "$tmp/out1" | head -n 5
	fi
	for t in 16 64; do
		"$tir" run --profile --threads "$t" "$tmp/$name.tir" >"$tmp/out$t" 2>"$tmp/prof$t"
		few=$(big_tasks "$tmp/prof$t" "$t")
		if [ -z "$few" ] && grep -q '^1 ' "$tmp/prof$t"; then ok; else
			bad "$name at --threads $t: kernels over a million elements with fewer than 4 tasks a thread: $few"
			cat "$tmp/prof$t"
		fi
		if cmp -s "$tmp/out1" "$tmp/out$t"; then ok; else
			bad "$name: stdout at --threads $t differs from --threads 1"
			diff "$tmp/out1" "$tmp/out$t" | head -n 5
		fi
	done
done

# a kernel that runs on the calling thread alone shows 1
printf 'x = ones([4])\nprint x + 1\n' >"$tmp/small.tir"
"$tir" run --profile --threads 16 "$tmp/small.tir" >/dev/null 2>"$tmp/prof"
got=$(tasks "$tmp/prof" '^(add|fused\[(ones )?add\])$')
if [ "$got" = 1 ]; then ok; else bad "a 4-element add: '$got' tasks, expected 1"; cat "$tmp/prof"; fi

suite_end
