#!/bin/sh
# bench/run.sh — the benchmarks, one section each; `make bench` runs it
# with BUILD set (default build).  Each section runs its binary from
# $BUILD/bench and prints a short table; bench/README.md says what the
# figures mean.  To add a benchmark, append a section at the end in the
# same form: a "# ---- NAME ----" comment, a `section NAME` call, the run,
# and a table.  A section that fails sets status=1 and the rest still run.
# Not a test: nothing here passes or fails on speed.
set -u

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
BUILD=${BUILD:-build}
status=0

REMOTE_RUNS=${REMOTE_RUNS:-1000}

section() {
	echo
	echo "== $1"
}

# kv FILE KEY: the value of "KEY VALUE" in FILE
kv() {
	sed -n "s/^$2 //p" "$1"
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tir-bench.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

# ---- parse ----
section "parse: lex + parse + check of a generated program (median of 5 runs)"
if "$BUILD/bench/parse_bench" 100000 5 >"$tmp/parse"; then
	f=$tmp/parse
	printf '  %-28s %s\n' "statements" "$(kv "$f" statements) ($(kv "$f" nodes) graph nodes, $(kv "$f" prints) prints)"
	printf '  %-28s %s\n' "source" "$(kv "$f" source_bytes) bytes"
	printf '  %-28s %s\n' "parse + check (median)" "$(kv "$f" parse_ms_median) ms (min $(kv "$f" parse_ms_min), max $(kv "$f" parse_ms_max))"
	printf '  %-28s %s\n' "throughput" "$(kv "$f" statements_per_s) statements/s, $(kv "$f" mb_per_s) MB/s"
	printf '  %-28s %s\n' "arena" "$(kv "$f" arena_bytes) bytes, $(kv "$f" arena_bytes_per_statement) bytes/statement"
	printf '  %-28s %s\n' "fmt (once)" "$(kv "$f" fmt_ms) ms, $(kv "$f" fmt_bytes) bytes out"
else
	echo "  parse_bench FAILED"
	status=1
fi

# ---- startup ----
section "startup: tir run of a one-line program (median of 51 runs, wall)"
if /usr/bin/python3 bench/startup.py "$BUILD/tir" >"$tmp/startup"; then
	f=$tmp/startup
	printf '  %-28s %s\n' "tir run one.tir" "$(kv "$f" tir_median_ms) ms (min $(kv "$f" tir_min_ms))"
	printf '  %-28s %s\n' "/bin/true (process start)" "$(kv "$f" true_median_ms) ms"
else
	echo "  startup FAILED"
	status=1
fi

# ---- the fusion sections: chain, softmax, layernorm, mlp, tiny ----
# tir (bench/tir_time), the hand-fused C references (bench/hand_fused)
# and the Python peers (bench/peers.py: NumPy, numexpr, PyTorch eager),
# all at THREADS threads and timed inside their process (start-up, imports
# and parsing excluded), medians of at least RUNS runs lasting at least
# 1 s in all (a short run then samples the load over a fair stretch).
# Every ratio is the row's time divided by the reference row's ("/ref") or
# by tir's ("/tir"); so a peer's "/tir" above 1 means tir is that many
# times faster.  "sum diff" is the relative difference of the output's sum
# from the reference's (all sides get the same input data).
THREADS=${THREADS:-$(nproc 2>/dev/null || echo 2)}
RUNS=${RUNS:-11}
PY=/usr/bin/python3

# the load average before and after says how noisy the figures may be
loadavg() {
	cut -d ' ' -f 1-3 /proc/loadavg 2>/dev/null
}
section "machine: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1)"
echo "  load average before the fusion sections: $(loadavg)"

# row LABEL MS SUM NOTE: one line of the next table
row() {
	printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$tmp/rows"
}

# peer_rows FILE IMPL LABEL: IMPL's row from peers.py's output (or why not)
peer_rows() {
	if [ -n "$(kv "$1" "${2}_missing")" ]; then
		row "$3" "" "" "missing ($(kv "$1" "${2}_missing"))"
	elif [ -n "$(kv "$1" "${2}_ms")" ]; then
		row "$3" "$(kv "$1" "${2}_ms")" "$(kv "$1" "${2}_sum")" "$(kv "$1" "${2}_version")"
	else
		row "$3" "" "" "no figure (see errors above)"
	fi
}

# table REF TIR [PEROP]: print the rows collected, ratios against the row
# labelled REF and the row labelled TIR; with PEROP, a us/op column too
table() {
	awk -F '\t' -v ref="$1" -v tir="$2" -v perop="${3:-0}" '
	{ lab[NR] = $1; ms[NR] = $2; sm[NR] = $3; note[NR] = $4
	  if ($1 == ref) { rms = $2; rsum = $3 }
	  if ($1 == tir) tms = $2 }
	END {
		rh = ref == tir ? "" : "/ref"
		printf "  %-28s %10s", "", "median ms"
		if (perop) printf " %8s", "us/op"
		if (rh != "") printf " %8s", rh
		printf " %8s %9s\n", "/tir", "sum diff"
		for (i = 1; i <= NR; i++) {
			if (ms[i] == "") { printf "  %-28s %10s  %s\n", lab[i], "-", note[i]; continue }
			r = rms > 0 ? sprintf("%7.2fx", ms[i] / rms) : "      -"
			t = tms > 0 ? sprintf("%7.2fx", ms[i] / tms) : "      -"
			d = "-"
			if (rsum != "" && sm[i] != "") {
				den = rsum < 0 ? -rsum : rsum
				dd = sm[i] - rsum; dd = dd < 0 ? -dd : dd
				d = sprintf("%.0e", den > 0 ? dd / den : dd)
				if (dd > 1e-3 * (den > 1 ? den : 1)) d = d " MISMATCH"
			}
			printf "  %-28s %10.3f", lab[i], ms[i]
			if (perop) printf " %8.3f", ms[i] * 1000 / perop
			if (rh != "") printf " %8s", r
			printf " %8s %9s  %s\n", t, d, note[i]
		}
	}' "$tmp/rows"
	: >"$tmp/rows"
}

# target TEXT VALUE OP LIMIT: say whether VALUE OP LIMIT holds (OP: < <= > >=)
target() {
	awk -v text="$1" -v v="$2" -v op="$3" -v lim="$4" 'BEGIN {
		if (v == "") { printf "  target: %-40s no figure\n", text; exit }
		v += 0; lim += 0
		ok = op == "<" ? v < lim : op == "<=" ? v <= lim : op == ">" ? v > lim : v >= lim
		printf "  target: %-40s now %.3g: %s\n", text, v, ok ? "met" : "not met"
	}'
}

# ratio A B: A / B, or nothing when either is missing
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN { if (a != "" && b > 0) printf "%.6g", a / b }'
}

# tir_rows NAME FILE: run tir_time on FILE, fused and --no-fuse, and add
# tir's two rows
tir_rows() {
	for mode in fused unfused; do
		flag= label=tir
		[ $mode = unfused ] && flag=--no-fuse label="tir --no-fuse"
		# shellcheck disable=SC2086
		if "$BUILD/bench/tir_time" --threads "$THREADS" --runs "$RUNS" $flag "$2" >"$tmp/tir.$1.$mode"; then
			f=$tmp/tir.$1.$mode
			row "$label" "$(kv "$f" ms_median)" "$(kv "$f" sum)" \
				"($(kv "$f" nops) ops -> $(kv "$f" nkernels) kernels)"
		else
			row "$label" "" "" "tir_time FAILED"
			status=1
		fi
	done
}

# big_section NAME TITLE TIRFILE: the chain, softmax and layernorm sections
big_section() {
	section "$2, $THREADS threads (median of >= $RUNS runs, >= 1 s)"
	: >"$tmp/rows"
	if "$BUILD/bench/hand_fused" --threads "$THREADS" --runs "$RUNS" "$1" >"$tmp/hf.$1"; then
		f=$tmp/hf.$1
		isa=$(kv "$f" isa)
		note="($isa)"
		[ "$1" = chain ] && note="($isa; tanh as tir's, 1.1 ULP)"
		row "hand-fused C" "$(kv "$f" "${1}_ms_median")" "$(kv "$f" "${1}_sum")" "$note"
		[ -n "$(kv "$f" "${1}_sleef_tanh_ms_median")" ] &&
			row "hand-fused C, SLEEF tanh" "$(kv "$f" "${1}_sleef_tanh_ms_median")" \
				"$(kv "$f" "${1}_sleef_tanh_sum")" "(Sleef_tanhf16_u10, 1 ULP)"
		[ -n "$(kv "$f" "${1}_tanh_exp_ms_median")" ] &&
			row "hand-fused C, tanh via exp" "$(kv "$f" "${1}_tanh_exp_ms_median")" \
				"$(kv "$f" "${1}_tanh_exp_sum")" "(1 - 2/(e+1): inexact near 0)"
	else
		row "hand-fused C" "" "" "hand_fused FAILED"
		status=1
	fi
	tir_rows "$1" "$3"
	$PY bench/peers.py --threads "$THREADS" --runs "$RUNS" "$1" >"$tmp/py.$1" || status=1
	peer_rows "$tmp/py.$1" numpy numpy
	peer_rows "$tmp/py.$1" numexpr numexpr
	peer_rows "$tmp/py.$1" torch "torch eager"
	table "hand-fused C" tir
}

# ---- chain ----
big_section chain "chain: 10 elementwise ops over f32[16777216] in one expression" bench/chain.tir
echo "  y = sqrt(tanh(x * 0.5) * exp(x * x * -0.5) + sigmoid(x) + 0.5)   (bench/chain.tir)"
tir_ms=$(kv "$tmp/tir.chain.fused" ms_median)
target "tir <= 1.2x hand-fused C" "$(ratio "$tir_ms" "$(kv "$tmp/hf.chain" chain_ms_median)")" "<=" 1.2
target "tir >= 8x faster than numpy" "$(ratio "$(kv "$tmp/py.chain" numpy_ms)" "$tir_ms")" ">=" 8

# ---- blocks ----
section "blocks: bench/chain.tir's chain as N repeated blocks, each summed into t (bench/blocks.tir, a for loop), $THREADS threads"
echo "  tir: median of >= $RUNS runs (64 blocks: >= 3), >= 1 s; numpy: >= 3 runs (64 blocks: 1, no warm-up)"
: >"$tmp/rows"
for n in 1 8 64; do
	sed "s/^n = 8\$/n = $n/" bench/blocks.tir >"$tmp/blocks$n.tir"
	runs=$RUNS
	[ "$n" = 64 ] && runs=3
	if "$BUILD/bench/tir_time" --threads "$THREADS" --runs "$runs" --out t "$tmp/blocks$n.tir" >"$tmp/tir.blocks$n"; then
		f=$tmp/tir.blocks$n
		row "tir" "$(kv "$f" ms_median)" "$(kv "$f" sum)" "($(kv "$f" nops) ops -> $(kv "$f" nkernels) kernels)"
	else
		row "tir" "" "" "tir_time FAILED"
		status=1
	fi
	pyruns="--runs 3 --warmup 1"
	[ "$n" = 64 ] && pyruns="--runs 1 --warmup 0"
	# shellcheck disable=SC2086
	$PY bench/peers.py --threads "$THREADS" $pyruns --blocks "$n" blocks >"$tmp/py.blocks$n" || status=1
	peer_rows "$tmp/py.blocks$n" numpy numpy
	echo "  $n block(s):"
	table tir tir
done
one=$(kv "$tmp/tir.blocks1" ms_median)
for n in 8 64; do
	r=$(awk -v a="$(kv "$tmp/tir.blocks$n" ms_median)" -v b="$one" -v n="$n" \
		'BEGIN { if (a != "" && b > 0) printf "%.6g", a / (n * b) }')
	echo "  $n blocks / ($n x 1 block): ${r:-no figure}"
	target "tir $n blocks <= 1.15x $n x 1 block" "$r" "<=" 1.15
done

# ---- softmax ----
big_section softmax "softmax: softmax(x, axis=-1) over f32[4096, 1024]" bench/softmax.tir
tir_ms=$(kv "$tmp/tir.softmax.fused" ms_median)
target "tir <= 1.2x hand-fused C" "$(ratio "$tir_ms" "$(kv "$tmp/hf.softmax" softmax_ms_median)")" "<=" 1.2
target "tir >= 1.5x faster than torch eager" "$(ratio "$(kv "$tmp/py.softmax" torch_ms)" "$tir_ms")" ">=" 1.5

# ---- layernorm ----
big_section layernorm "layernorm: layernorm(x, w, b) over f32[4096, 1024]" bench/layernorm.tir
tir_ms=$(kv "$tmp/tir.layernorm.fused" ms_median)
target "tir <= 1.2x hand-fused C" "$(ratio "$tir_ms" "$(kv "$tmp/hf.layernorm" layernorm_ms_median)")" "<=" 1.2
target "tir >= 1.5x faster than torch eager" "$(ratio "$(kv "$tmp/py.layernorm" torch_ms)" "$tir_ms")" ">=" 1.5

# ---- mlp ----
section "mlp: 1024-1024-1024-10 MLP forward at batch 256, $THREADS threads (median of 21; peers >= $RUNS runs, >= 1 s)"
: >"$tmp/rows"
if "$BUILD/bench/mlp_bench" "$THREADS" >"$tmp/mlp"; then
	# "... tir X ms, direct sgemm Y ms, ratio Z"
	row "direct sgemm (3 calls)" "$(sed -n 's/.*direct sgemm \([0-9.]*\) ms.*/\1/p' "$tmp/mlp")" "" "(OpenBLAS, $THREADS threads)"
	row tir "$(sed -n 's/.* tir \([0-9.]*\) ms.*/\1/p' "$tmp/mlp")" "" ""
else
	row "direct sgemm (3 calls)" "" "" "mlp_bench FAILED"
	status=1
fi
$PY bench/peers.py --threads "$THREADS" --runs "$RUNS" mlp >"$tmp/py.mlp" || status=1
peer_rows "$tmp/py.mlp" numpy numpy
peer_rows "$tmp/py.mlp" torch "torch eager"
table "direct sgemm (3 calls)" tir
tir_ms=$(sed -n 's/.* tir \([0-9.]*\) ms.*/\1/p' "$tmp/mlp" 2>/dev/null)
target "tir <= 1.05x direct sgemm" "$(sed -n 's/.*ratio \([0-9.]*\).*/\1/p' "$tmp/mlp" 2>/dev/null)" "<=" 1.05
target "tir faster than torch eager" "$(ratio "$(kv "$tmp/py.mlp" torch_ms)" "$tir_ms")" ">" 1

# ---- tiny ----
section "tiny: per-op overhead, a 10,000-op graph of f32 scalars, $THREADS threads (median of >= $RUNS runs, >= 1 s)"
: >"$tmp/rows"
if $PY bench/peers.py tiny-tir "$tmp/tiny.tir"; then
	tir_rows tiny "$tmp/tiny.tir"
else
	row tir "" "" "peers.py tiny-tir FAILED"
	status=1
fi
$PY bench/peers.py --threads "$THREADS" --runs "$RUNS" tiny >"$tmp/py.tiny" || status=1
peer_rows "$tmp/py.tiny" numpy "numpy (np.float32 scalars)"
peer_rows "$tmp/py.tiny" torch "torch eager (0-d tensors)"
table tir tir 10000
echo "  ops: mul, add, tanh, mul, sub repeated (bench/peers.py tiny_lines); us/op = median / 10000"
target "tir under 1 us/op" "$(ratio "$(kv "$tmp/tir.tiny.fused" ms_median)" 10)" "<" 1
# issue 28: a cached re-run (REPL, server replay) below NumPy's time an op
target "tir cached re-run < NumPy an op (/numpy)" \
	"$(ratio "$(kv "$tmp/tir.tiny.fused" ms_median)" "$(kv "$tmp/py.tiny" numpy_ms)")" "<" 1

# ---- statements: a long program of scalars end to end ----
# bench/statements.py: `tir run` of the tiny graph as a program of its own
# (x = cast(0.3, f32), 10,000 and 100,000 statements, print y), each run a
# process, its phases from tir's timing line; NumPy the same statements
# compiled from source and run in one Python process.  Medians of 5.
section "statements: tir run of N scalar statements, end to end (median of 5 processes)"
if $PY bench/statements.py "$BUILD/tir" --ops 10000 --ops 100000 >"$tmp/stmts"; then
	f=$tmp/stmts
	printf '  %-9s %9s %9s %9s %9s %9s   %-26s %s\n' statements wall parse plan run "us/stmt" \
		"NumPy: compile, run (ms)" "us/op run"
	for n in 10000 100000; do
		awk -v n="$n" -v w="$(kv "$f" "${n}_tir_wall_ms")" -v pa="$(kv "$f" "${n}_tir_parse_ms")" \
			-v pl="$(kv "$f" "${n}_tir_plan_ms")" -v r="$(kv "$f" "${n}_tir_run_ms")" \
			-v nc="$(kv "$f" "${n}_numpy_compile_ms")" -v nr="$(kv "$f" "${n}_numpy_run_ms")" 'BEGIN {
			printf "  %-9s %9.1f %9.1f %9.1f %9.1f %9.3f   %10.1f, %-14.1f %.3f\n", n, w, pa, pl, r,
				w * 1000 / n, nc, nr, nr * 1000 / n }'
	done
	echo "  ms; wall: the whole process (start-up and exit too); parse includes the type check (one pass)"
	# each run's, in order: a fresh page's first touch is what varies most
	# (bench/README.md, "statements")
	thp=$(kv "$f" 100000_tir_thp | sed 's/ /, /') # none where /proc/vmstat is not
	echo "  100000, each run: wall $(kv "$f" 100000_tir_wall_runs); parse $(kv "$f" 100000_tir_parse_runs)" \
		"${thp:+(huge pages given, fallen back: $thp)}"
	echo "  y: tir $(kv "$f" 100000_tir_y), NumPy $(kv "$f" 100000_numpy_y)"
	t_us=$(ratio "$(kv "$f" 100000_tir_wall_ms)" 100)
	np_us=$(ratio "$(kv "$f" 100000_numpy_run_ms)" 100)
	target "tir under 0.5 us/statement end to end" "$t_us" "<" 0.5
	# the issue's 0.5 us against NumPy's 0.24 us an op on its machine
	target "tir end to end <= 2.08x NumPy's run an op" "$(ratio "$t_us" "$np_us")" "<=" 2.08
	target "plan linear: us/op at 100,000 / at 10,000" \
		"$(ratio "$(kv "$f" 100000_tir_plan_ms)" "$(awk -v a="$(kv "$f" 10000_tir_plan_ms)" 'BEGIN { print a * 10 }')")" "<=" 1.25
else
	echo "  statements.py FAILED"
	status=1
fi

# ---- e2e: whole programs ----
# bench/e2e/*.tir make their own data (arange, rand, randn, ones, full),
# compute and reduce; bench/e2e.py runs the same programs in NumPy and
# torch.  Every side is timed inside its process (start-up, imports and
# tir's parse excluded), each run making its data afresh.  Only chain's
# data is the same on every side (no random numbers), so only its sums
# are compared.
e2e_section() {
	section "e2e $1: $2, $THREADS threads (median of >= $RUNS runs, >= 1 s)"
	: >"$tmp/rows"
	if "$BUILD/bench/tir_time" --threads "$THREADS" --runs "$RUNS" "bench/e2e/$1.tir" >"$tmp/e2e.$1"; then
		f=$tmp/e2e.$1
		s=
		[ "$1" = chain ] && s=$(kv "$f" sum)
		row tir "$(kv "$f" ms_median)" "$s" "($(kv "$f" nops) ops -> $(kv "$f" nkernels) kernels)"
	else
		row tir "" "" "tir_time FAILED"
		status=1
	fi
	(cd bench && $PY e2e.py --threads "$THREADS" --runs "$RUNS" "$1") >"$tmp/e2epy.$1" || status=1
	for impl in numpy torch; do
		f=$tmp/e2epy.$1
		if [ "$1" != chain ] && [ -n "$(kv "$f" "${impl}_sum")" ]; then
			# other random numbers: no sum to compare
			sed -i "/^${impl}_sum /d" "$f"
		fi
	done
	peer_rows "$tmp/e2epy.$1" numpy numpy
	peer_rows "$tmp/e2epy.$1" torch "torch eager"
	table tir tir
}
e2e_target() {
	target "$2" "$(ratio "$(kv "$tmp/e2epy.$1" numpy_ms)" "$(kv "$tmp/e2e.$1" ms_median)")" ">=" "$3"
}
e2e_section chain "arange, the 10-op chain, sum over f32[16777216]"
e2e_target chain "tir >= 8x faster than numpy" 8
e2e_section noise "randn, 4 elementwise ops, sum over f32[16777216]"
e2e_target noise "tir >= 8x faster than numpy" 8
e2e_section reduce "rand, max by row + mean by column + var over f32[4096, 4096]"
e2e_section norm "randn, standardize by hand, softmax, weighted sum over f32[4096, 1024]"
e2e_target norm "tir >= 5x faster than numpy" 5
e2e_section layernorm "randn, layernorm (weights by arange and ones), row sums over f32[4096, 1024]"
e2e_target layernorm "tir >= 5x faster than numpy" 5
e2e_section mlp "randn input and weights, 1024-1024-1024-10 MLP at batch 256, softmax"

echo
echo "== load average after the fusion sections: $(loadavg)"

# ---- remote ----
# bench/remote.sh starts its own `tir serve` on a free loopback port and
# prints its table (round trip, upload, download, mlp remote/local).
section "remote: tir serve on loopback (round trip median of $REMOTE_RUNS; upload and download 256 MiB; mlp remote/local)"
RUNS=$REMOTE_RUNS BUILD=$BUILD sh bench/remote.sh || status=1


# ---- fair ----
# bench/fair.py starts its own `tir serve`: a small batch's round trip on an
# idle server and beside another session's endless matmul chain; how soon
# a batch stops once its client leaves in the middle of a 6144^3 matmul
# (close to the server's log line), and how far past --max-batch-seconds 1
# its answer comes.
section "fair: a small batch beside a long one, and stops (tir serve on loopback; medians)"
if $PY bench/fair.py "$BUILD/tir" --runs 200 >"$tmp/fair"; then
	printf '  %-44s %10s\n' what ms
	printf '  %-44s %10s\n' "small batch, idle server" "$(kv "$tmp/fair" idle_ms)"
	printf '  %-44s %10s\n' "small batch beside a long one (median)" "$(kv "$tmp/fair" beside_ms)"
	printf '  %-44s %10s\n' "  p90 / worst" "$(kv "$tmp/fair" beside_p90_ms) / $(kv "$tmp/fair" beside_max_ms)"
	printf '  %-44s %10s\n' "client gone mid-matmul: stopped after" "$(kv "$tmp/fair" gone_ms)"
	printf '  %-44s %10s\n' "--max-batch-seconds 1: answered past it by" "$(kv "$tmp/fair" overrun_ms)"
	target "small batch beside a long one < 50 ms" "$(kv "$tmp/fair" beside_ms)" "<" 50
	target "stopped mid-matmul < 100 ms" "$(kv "$tmp/fair" gone_ms)" "<" 100
else
	echo "  fair.py FAILED"
	status=1
fi

# ---- create ----
# The creation ops at 16M f32 (eye: 4096 x 4096): tir (bench/tir_time,
# `y = OP`, the output's memory reused run to run as the executor's pool
# does), NumPy and torch (bench/create.py), all timed inside their
# process, medians; and the machine's write bandwidth (bench/write_bw: 64
# MiB in touched memory, memset and streaming stores, the faster) so that
# "tir / write" is the time over the time to write 64 MiB.  NumPy's zeros
# is calloc (pages mapped lazily, nothing written) and runs on one thread;
# the last row is relu(randn * 0.1), one kernel in tir.
section "create: creation ops over f32[16777216], $THREADS threads (median of >= $RUNS runs, >= 1 s)"
if "$BUILD/bench/write_bw" "$THREADS" >"$tmp/bw"; then
	bw_ms=$(kv "$tmp/bw" best_ms)
	echo "  write bandwidth: 64 MiB in $bw_ms ms ($(kv "$tmp/bw" gb_per_s) GB/s; memset $(kv "$tmp/bw" memset_ms) ms, streaming stores $(kv "$tmp/bw" stream_ms) ms; of zeros $(kv "$tmp/bw" zero_stream_ms) ms, not the reference)"
else
	echo "  write_bw FAILED"
	bw_ms=
	status=1
fi
$PY bench/create.py --threads "$THREADS" --runs "$RUNS" >"$tmp/py.create" || status=1
for impl in numpy torch; do
	[ -n "$(kv "$tmp/py.create" "${impl}_missing")" ] && echo "  $impl: missing ($(kv "$tmp/py.create" "${impl}_missing"))"
done
printf '  %-10s %10s %10s %10s %12s %s\n' op "tir ms" "numpy ms" "torch ms" "tir / write" "target"
for op in zeros ones full arange linspace eye rand randn fused; do
	case $op in
	eye) prog='y = eye(4096)' ;;
	arange) prog='y = arange(16777216, dtype=f32)' ;;
	linspace) prog='y = linspace(0, 1, 16777216)' ;;
	full) prog='y = full([16777216], 2.5)' ;;
	rand | randn) prog="y = $op([16777216], seed=1)" ;;
	fused) prog='y = relu(randn([16777216], seed=1) * 0.1)' ;;
	*) prog="y = $op([16777216])" ;;
	esac
	echo "$prog" >"$tmp/create.$op.tir"
	t=
	if "$BUILD/bench/tir_time" --threads "$THREADS" --runs "$RUNS" "$tmp/create.$op.tir" >"$tmp/tir.create.$op"; then
		t=$(kv "$tmp/tir.create.$op" ms_median)
	else
		status=1
	fi
	case $op in rand) lim=2 ;; randn | fused) lim=4 ;; *) lim=1.43 ;; esac
	awk -v op="$op" -v t="$t" -v np="$(kv "$tmp/py.create" "${op}_numpy_ms")" \
		-v th="$(kv "$tmp/py.create" "${op}_torch_ms")" -v bw="$bw_ms" -v lim="$lim" 'BEGIN {
		f = "%10s"
		r = (t != "" && bw > 0) ? t / bw : ""
		printf "  %-10s %10s %10s %10s %12s ", op, t == "" ? "-" : sprintf("%.3f", t),
			np == "" ? "-" : sprintf("%.3f", np), th == "" ? "-" : sprintf("%.3f", th),
			r == "" ? "-" : sprintf("%.2fx", r)
		if (r == "") print "no figure"
		else printf "<= %.2fx: %s\n", lim, r <= lim + 0 ? "met" : "not met"
	}'
done
echo "  targets: fills, arange, linspace, eye at >= 70% of write bandwidth (<= 1.43x), rand <= 2x, randn <= 4x"

# ---- bf16: a product of two bf16 operands against the same product in f32 ----
# On a CPU with AVX-512 BF16 tir's gemm runs vdpbf16ps on pairs of bf16
# (lib/exec/gemm.c, kern_bf16); elsewhere the bf16 operands are widened as
# they are packed and the f32 kernel runs, or, where f32 products run on
# OpenBLAS (TIR_VMATH=sse2 or scalar), widened for OpenBLAS's sgemm, the
# whole depth in one call (Debian 12's OpenBLAS 0.3.21 has no
# cblas_sbgemm), except over OpenBLAS's SSE kernel (a CPU before AVX),
# where tir's SSE2 gemm runs them widened as packed.  The bf16 result is
# rounded in the gemm's store (OpenBLAS: by rows after).  One row pair per
# vector path this CPU has (TIR_VMATH; TIR_BF16=widen: AVX-512 without
# its BF16 kernel), and one for the SSE2 path as on a CPU with SSE only
# (OPENBLAS_CORETYPE=Nehalem given to those two runs alone, so f32 runs
# on OpenBLAS's SSE kernel), the ratio f32 / bf16 (target: >= 1 on every
# path, >= 1.6 for vdpbf16ps).  f32 and bf16 are timed in turn, BF16_ROUNDS
# rounds of 3 runs each (tir_time, a process each), and the ratio is the
# median of the rounds' own: a guest whose speed moves by 20% from one
# second to the next (as the KVM guests these figures came from did) moved
# a ratio of two sequences timed one after the other by as much.
BF16_ROUNDS=${BF16_ROUNDS:-7}
# median_col FILE COL: the median of column COL of FILE's lines
median_col() {
	awk -v c="$2" '{ print $c }' "$1" | sort -g |
		awk '{ v[NR] = $1 } END { if (NR) printf "%.6g", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
section "bf16 matmul: [2048, 2048] @ [2048, 2048], $THREADS threads, per vector path (medians of $BF16_ROUNDS rounds, f32 and bf16 in turn, 3 runs each)"
for t in f32 bf16; do
	printf 'input a: %s[2048, 2048]\ninput b: %s[2048, 2048]\ny = a @ b\n' "$t" "$t" >"$tmp/mm_$t.tir"
done
has_bf16=$(grep -q avx512_bf16 /proc/cpuinfo 2>/dev/null && echo 1)
has_avx512=$(grep -q avx512f /proc/cpuinfo 2>/dev/null && echo 1)
has_avx2=$(grep -q avx2 /proc/cpuinfo 2>/dev/null && echo 1)
printf '  %-42s %8s %8s %8s %9s %12s  %s\n' "path" "f32 ms" "bf16 ms" "f32/bf16" "(CPU)" "target" "kernel"
for path in vdpbf16ps avx512 avx2 sse2 sse-only scalar; do
	case $path in
	vdpbf16ps) [ -n "$has_bf16" ] || continue; envs="TIR_VMATH=avx512"; want=1.6; kern="vdpbf16ps" ;;
	avx512) [ -n "$has_avx512" ] || continue; envs="TIR_VMATH=avx512 TIR_BF16=widen"; want=1; kern="widened as packed, tir's f32 kernel" ;;
	avx2) [ -n "$has_avx2" ] || continue; envs="TIR_VMATH=avx2 TIR_BF16=widen"; want=1; kern="widened as packed, tir's f32 kernel" ;;
	sse-only) envs="TIR_VMATH=sse2 TIR_BF16=widen OPENBLAS_CORETYPE=Nehalem"; want=1
		kern="as on an SSE-only CPU: tir's SSE2 gemm, widened as packed (f32: OpenBLAS's Nehalem sgemm)" ;;
	*) envs="TIR_VMATH=$path TIR_BF16=widen"; want=1; kern="widened, OpenBLAS's sgemm (f32: sgemm)" ;;
	esac
	# the kernel the gemm line names (a CPU whose OpenBLAS kernel is an
	# SSE one runs bf16 on tir's SSE2 gemm on the sse2 row too)
	# shellcheck disable=SC2086
	if [ "$path" = sse2 ] && env $envs "$BUILD/tir" --version | grep -q "bf16 and other dtypes on tir"; then
		kern="tir's SSE2 gemm, widened as packed (f32: OpenBLAS's SSE sgemm)"
	fi
	: >"$tmp/bf16rounds.$path"
	round=0
	while [ "$round" -lt "$BF16_ROUNDS" ]; do
		for t in f32 bf16; do
			# shellcheck disable=SC2086
			env $envs "$BUILD/bench/tir_time" --threads "$THREADS" --runs 3 --min-ms 0 --out y "$tmp/mm_$t.tir" \
				>"$tmp/tir.mm_$t.$path" || status=1
		done
		fm=$(kv "$tmp/tir.mm_f32.$path" ms_median) bm=$(kv "$tmp/tir.mm_bf16.$path" ms_median)
		fc=$(kv "$tmp/tir.mm_f32.$path" cpu_ms_median) bc=$(kv "$tmp/tir.mm_bf16.$path" cpu_ms_median)
		[ -n "$fm" ] && [ -n "$bm" ] &&
			echo "$fm $bm $(ratio "$fm" "$bm") $(ratio "$fc" "$bc")" >>"$tmp/bf16rounds.$path"
		round=$((round + 1))
	done
	f32=$(median_col "$tmp/bf16rounds.$path" 1) bf=$(median_col "$tmp/bf16rounds.$path" 2)
	r=$(median_col "$tmp/bf16rounds.$path" 3) rc=$(median_col "$tmp/bf16rounds.$path" 4)
	label="$path ($envs)"
	[ "$path" = sse-only ] && label="sse2, OPENBLAS_CORETYPE=Nehalem (these 2)"
	awk -v p="$label" -v f="$f32" -v b="$bf" -v r="$r" -v rc="$rc" -v w="$want" -v k="$kern" 'BEGIN {
		if (r == "") { printf "  %-42s %8s %8s %8s  no figure (tir_time FAILED)\n", p, f, b, "-"; exit }
		printf "  %-42s %8.1f %8.1f %7.2fx %8.2fx %12s  %s\n", p, f, b, r, rc, (r + 0 >= w + 0 ? ">= " w ": met" : ">= " w ": not met"), k
	}'
	[ "$path" = vdpbf16ps ] && target "bf16 >= 1.6x faster than f32" "$r" ">=" 1.6
	[ "$path" = vdpbf16ps ] || target "bf16 no slower than f32 ($path)" "$r" ">=" 1
done

# ---- xfer ----
# bench/xfer.py starts two `tir serve`s and moves a 64 MiB f32 value from
# one's session to the other's (an export on A, an import on B: B fetches
# it from A and checks it), medians of 5 after 3 warm-up transfers.
section "xfer: 64 MiB f32 server to server on loopback (median of 5, after 3 warm-up)"
if $PY bench/xfer.py "$BUILD/tir" --runs 5 >"$tmp/xfer"; then
	f=$tmp/xfer
	printf '  %-52s %10s %10s\n' what ms GB/s
	printf '  %-52s %10s %10s\n' "import (B fetches from A and checks every chunk)" "$(kv "$f" import_ms)" "$(kv "$f" import_gbs)"
	printf '  %-52s %10s %10s\n' "export + import, a value just computed (hashed)" "$(kv "$f" fresh_ms)" "$(kv "$f" fresh_gbs)"
	printf '  %-52s %10s %10s\n' "export + import, a value exported before" "$(kv "$f" again_ms)" "$(kv "$f" again_gbs)"
	printf '  %-52s %10s\n' "  export: hashing the value / its list kept" "$(kv "$f" export_hash_ms) / $(kv "$f" export_kept_ms)"
	printf '  %-52s %10s\n' "  the first import, into pages B never had" "$(kv "$f" cold_import_ms)"
	target "import >= 1 GB/s" "$(kv "$f" import_gbs)" ">=" 1
else
	echo "  xfer.py FAILED"
	status=1
fi

# ---- io ----
# bench/io.sh: 100 loads of one tensor of a checkpoint, a fresh remote
# run's round trips (loopback, and through bench/delay.py's 10 ms a round
# trip), and uploads with OpenSSL's SHA extensions masked (its children only).
section "io: checkpoint loads, a fresh remote run's round trips, uploads without SHA extensions"
if ! BUILD=$BUILD sh bench/io.sh; then
	echo "  io.sh FAILED"
	status=1
fi

# ---- devices ----
# bench/devices.py: an MLP (1024 -> 2048 -> 1024) over 4096 rows on one
# local tir serve, and split by rows over two (each half moved to its
# server, both computing at once, the results moved back and joined);
# medians of 5 whole `tir run` commands after a warm-up.  With --threads 1
# each server is one core (two machines' worth); with default threads the
# two servers share this machine's cores.
section "devices: data-parallel MLP, 4096 rows, one server vs two (median of 5)"
if $PY bench/devices.py "$BUILD/tir" --runs 5 >"$tmp/devices"; then
	f=$tmp/devices
	printf '  %-40s %10s %10s %10s %6s\n' servers "one (ms)" "two (ms)" "two/one" same
	printf '  %-40s %10s %10s %10s %6s\n' "--threads 1 (a core each)" "$(kv "$f" threads1_one_ms)" \
		"$(kv "$f" threads1_two_ms)" "$(kv "$f" threads1_speedup)x" "$(kv "$f" threads1_same)"
	printf '  %-40s %10s %10s %10s %6s\n' "default threads (sharing the cores)" "$(kv "$f" default_one_ms)" \
		"$(kv "$f" default_two_ms)" "$(kv "$f" default_speedup)x" "$(kv "$f" default_same)"
else
	echo "  devices.py FAILED"
	status=1
fi

# ---- allreduce ----
# bench/allreduce.py: all_reduce(op=sum) of 64 MiB f32 on each of 4 ranks
# of a group (mpirun --oversubscribe tir serve) against a plain C
# MPI_Allreduce of the same buffer on 4 ranks (bench/mpi/allreduce.c);
# medians of 9.  Needs MPI (libtir-mpi.so and mpirun).
section "allreduce: 64 MiB f32 over 4 ranks of a group vs plain MPI_Allreduce (median of 9)"
if [ ! -x "$BUILD/bench/allreduce_mpi" ] || [ ! -f "$BUILD/libtir-mpi.so" ] || ! command -v mpirun >/dev/null 2>&1; then
	echo "  skipped: MPI is not installed (make deps installs libopenmpi-dev and openmpi-bin)"
elif $PY bench/allreduce.py "$BUILD/tir" "$BUILD/bench/allreduce_mpi" --runs 9 >"$tmp/allreduce"; then
	f=$tmp/allreduce
	printf '  %-62s %10s\n' what ms
	printf '  %-62s %10s\n' "tir: the collective as the client sees it (request to answer)" "$(kv "$f" tir_ms)"
	printf '  %-62s %10s\n' "tir: its MPI_Iallreduce alone (the servers' figure)" "$(kv "$f" tir_data_ms)"
	printf '  %-62s %10s\n' "plain C MPI_Allreduce (barrier to the last rank's end)" "$(kv "$f" plain_ms)"
	printf '  %-62s %10s\n' "tir / plain" "$(kv "$f" ratio)x"
	printf '  %-62s %10s\n' "the sum as a local run's" "$(kv "$f" same)"
	target "all_reduce <= 1.2x plain MPI_Allreduce" "$(kv "$f" ratio)" "<=" 1.2
else
	echo "  allreduce.py FAILED"
	status=1
fi

# ---- gemm: tir's matmul, batched matmul, conv2d and attention against OpenBLAS ----
# bench/gemm.sh (runs alone too: BUILD=build sh bench/gemm.sh)
. "$root/bench/gemm.sh"

# ---- linalg ----
# The linear algebra on OpenBLAS's LAPACK against NumPy's np.linalg (the
# same LAPACK routines) on the same data, both at 1 thread and at THREADS
# (NumPy's OpenBLAS set to that many; tir's batch of at least THREADS
# matrices spread over its pool, each matrix on one thread; the one eigh
# on OpenBLAS's THREADS threads, as NumPy's).  tir_time and bench/linalg.py,
# medians.
for t in 1 "$THREADS"; do
	[ "$t" = 1 ] && [ "$THREADS" = 1 ] && [ -n "${linalg_once:-}" ] && continue
	linalg_once=1
	section "linalg: np.linalg against tir, $t thread(s) (median of >= $RUNS runs, >= 1 s)"
	: >"$tmp/rows"
	for case in solve eigh; do
		if "$BUILD/bench/tir_time" --threads "$t" --runs "$RUNS" bench/linalg_$case.tir >"$tmp/la.$case"; then
			row "tir $case" "$(kv "$tmp/la.$case" ms_median)" "$(kv "$tmp/la.$case" sum)" ""
		else
			row "tir $case" "" "" "tir_time FAILED"
			status=1
		fi
		$PY bench/linalg.py --threads "$t" --runs "$RUNS" "$case" >"$tmp/lapy.$case" || status=1
		peer_rows "$tmp/lapy.$case" numpy "numpy $case"
	done
	echo "  solve: 64 x f64[256, 256] (+ 64 I) against f64[64, 256]; eigh: f64[1024, 1024]"
	awk -F '\t' '{ lab[NR] = $1; ms[NR] = $2; sm[NR] = $3; note[NR] = $4 }
	END {
		printf "  %-28s %10s %10s %14s\n", "", "median ms", "/tir", "sum"
		for (i = 1; i <= NR; i++) {
			tir = i % 2 ? ms[i] : ms[i - 1]
			if (ms[i] == "") { printf "  %-28s %10s  %s\n", lab[i], "-", note[i]; continue }
			printf "  %-28s %10.3f %9.2fx %14s  %s\n", lab[i], ms[i], (tir > 0 ? ms[i] / tir : 0), sm[i], note[i]
		}
	}' "$tmp/rows"
	: >"$tmp/rows"
	target "solve batch no slower than numpy" "$(ratio "$(kv "$tmp/lapy.solve" numpy_ms)" "$(kv "$tmp/la.solve" ms_median)")" ">=" 1
	target "eigh 1024 no slower than numpy" "$(ratio "$(kv "$tmp/lapy.eigh" numpy_ms)" "$(kv "$tmp/la.eigh" ms_median)")" ">=" 1
done

# ---- onnx ----
# a ResNet-18 exported to ONNX (bench/onnx.py): tir import's time and peak
# memory, then the imported program (bench/tir_time) against PyTorch eager
section "onnx: ResNet-18 (random weights, opset 17, 1 x 3 x 224 x 224): import, and tir against PyTorch eager, $THREADS threads"
if $PY bench/onnx.py --tir "$BUILD/tir" --tir-time "$BUILD/bench/tir_time" --threads "$THREADS" --runs "$RUNS" \
	>"$tmp/onnx"; then
	f=$tmp/onnx
	if [ -n "$(kv "$f" torch_missing)" ]; then
		echo "  missing ($(kv "$f" torch_missing))"
	else
		printf '  %-28s %s\n' "model" "$(kv "$f" model_bytes) bytes, $(kv "$f" params) parameters ($(kv "$f" weights_mib) MiB of weights)"
		printf '  %-28s %s\n' "tir import (median of 5)" "$(kv "$f" import_ms_median) ms wall, process start and writing included (min $(kv "$f" import_ms_min))"
		printf '  %-28s %s\n' "tir import peak memory" "$(kv "$f" import_peak_mib) MiB resident"
		printf '  %-28s %s\n' "tir (tir_time, median)" "$(kv "$f" tir_ms_median) ms (CPU $(kv "$f" tir_cpu_ms_median) ms), sum $(kv "$f" tir_sum)"
		printf '  %-28s %s\n' "PyTorch eager (median)" "$(kv "$f" torch_ms_median) ms (CPU $(kv "$f" torch_cpu_ms_median) ms), sum $(kv "$f" torch_sum) (torch $(kv "$f" torch_version))"
		printf '  %-28s %s\n' "PyTorch / tir" "$(ratio "$(kv "$f" torch_ms_median)" "$(kv "$f" tir_ms_median)")"
		target "import under 0.2 s" "$(awk -v v="$(kv "$f" import_ms_median)" 'BEGIN { if (v != "") print v / 1000 }')" "<" 0.2
		target "tir no slower than PyTorch eager" "$(ratio "$(kv "$f" torch_ms_median)" "$(kv "$f" tir_ms_median)")" ">=" 1
	fi
else
	echo "  onnx.py FAILED"
	status=1
fi
exit $status
