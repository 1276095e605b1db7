# bench/gemm.sh — the gemm section of bench/run.sh (which sources it), or
# alone: BUILD=build sh bench/gemm.sh.  $BUILD/bench/gemm_bench at 1, 2,
# 4, ... threads up to this machine's CPUs, under each --gemm (TIR_GEMM=tir
# and TIR_GEMM=openblas: which code tir's matmul, conv2d and attention
# call), each against OpenBLAS's threaded cblas_sgemm at the same count on
# the same shapes (bench/README.md, "gemm"), OpenBLAS picking its own
# kernel for this CPU (OPENBLAS_CORETYPE unset for these runs: the kernel
# a user's machine gets); then once at $THREADS threads with the
# environment's OPENBLAS_CORETYPE when it sets one.  The figure is the
# median of the paired runs' ratios tir / OpenBLAS (rounds of 5, each side
# after a pause and 50 ms of untimed runs).  The targets are tir's gemm's;
# under openblas a matmul is OpenBLAS's own call (about 1.0), conv2d and
# attention tir's tasks calling it on one thread each.
if ! command -v section >/dev/null 2>&1; then
	root=$(cd "$(dirname "$0")/.." && pwd)
	cd "$root" || exit 1
	BUILD=${BUILD:-build}
	THREADS=${THREADS:-$(nproc)}
	status=0
	section() {
		echo
		echo "== $1"
	}
	target() {
		awk -v text="$1" -v v="$2" -v op="$3" -v lim="$4" 'BEGIN {
			if (v == "") { printf "  target: %-40s no figure\n", text; exit }
			v += 0; lim += 0
			ok = op == "<" ? v < lim : op == "<=" ? v <= lim : op == ">" ? v > lim : v >= lim
			printf "  target: %-40s now %.3g: %s\n", text, v, ok ? "met" : "not met"
		}'
	}
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/tir-bench.XXXXXX") || exit 1
	trap 'rm -rf "$tmp"' EXIT INT TERM
	gemm_alone=1
fi
GEMM_REPS=${GEMM_REPS:-20}

section "gemm: tir / OpenBLAS's own cblas_sgemm on the same shapes, by threads and --gemm (paired ratios of $GEMM_REPS runs)"
n=$(nproc)
ts=1
t=2
while [ "$t" -lt "$n" ]; do ts="$ts $t"; t=$((t * 2)); done
[ "$n" -gt 1 ] && ts="$ts $n"
: >"$tmp/gemm.tir"
: >"$tmp/gemm.openblas"
: >"$tmp/gemm.note"
for g in tir openblas; do
	for t in $ts; do
		if env -u OPENBLAS_CORETYPE TIR_GEMM=$g "$BUILD/bench/gemm_bench" "$t" "$GEMM_REPS" >"$tmp/gemm.$g.$t"; then
			[ "$t" = 1 ] && sed -n "1s/^gemm: /  --gemm $g: /p" "$tmp/gemm.$g.$t"
			# NAME|THREADS|TIR MS|OPENBLAS MS|PAIRED RATIO, and attention's
			# ratio with the softmax on both sides as a row of its own
			awk -v t="$t" -v g="$g" '
				/ threads: tir / {
					name = $0; sub(/ +[0-9]+ threads: .*/, "", name)
					for (i = 1; i <= NF; i++) {
						if ($i == "tir") tms = $(i + 1)
						if ($i == "openblas") oms = $(i + 1)
					}
					r = $NF; sub(/\)$/, "", r)
					print name "|" t "|" tms "|" oms "|" r
				}
				/with the softmax/ { r = $NF; print "attention, softmax both sides|" t "|||" r }
				/conv2d against the products/ { sub(/^ +/, ""); note = "--gemm " g ": " $0 }
				END { if (note != "") print note > "/dev/stderr" }
			' "$tmp/gemm.$g.$t" >>"$tmp/gemm.$g" 2>>"$tmp/gemm.note"
		else
			echo "  gemm_bench $t (--gemm $g) FAILED"
			status=1
		fi
	done
done
sed 's/^/  /' "$tmp/gemm.note"
printf '  %-30s %7s %10s %10s %7s %10s %7s\n' "" "" "--gemm" tir "" "--gemm" openblas
printf '  %-30s %7s %10s %10s %7s %10s %7s\n' shape threads "tir ms" "OpenBLAS" ratio "tir ms" ratio
# the rows of both, by shape and threads (the order gemm_bench prints)
awk -F'|' 'NR == FNR { ms[$1 "|" $2] = $3; r[$1 "|" $2] = $5; next }
	{ printf "  %-30s %7s %10s %10s %7s %10s %7s\n", $1, $2, $3, $4, $5, ms[$1 "|" $2], r[$1 "|" $2] }' \
	"$tmp/gemm.openblas" "$tmp/gemm.tir"
worst=$(awk -F'|' '$1 !~ /^attention/ && $5 > w { w = $5 } END { if (NR) print w + 0 }' "$tmp/gemm.tir")
target "matmul, batched, conv2d <= 1.1x OpenBLAS" "$worst" "<=" 1.1
worst=$(awk -F'|' '$1 ~ /softmax both/ && $5 > w { w = $5 } END { if (NR) print w + 0 }' "$tmp/gemm.tir")
target "attention <= 1.1x (softmax both sides)" "$worst" "<=" 1.1
if [ -n "${OPENBLAS_CORETYPE:-}" ]; then
	echo "  with this environment's OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE, $THREADS threads, --gemm tir:"
	if TIR_GEMM=tir "$BUILD/bench/gemm_bench" "$THREADS" 10 >"$tmp/gemm.env"; then
		sed -n 's/^\(.*[^ ]\)  *\([0-9][0-9]*\) threads: .*(paired \([0-9.]*\))$/    \1: \3/p' "$tmp/gemm.env"
	else
		echo "  gemm_bench FAILED"
		status=1
	fi
fi
if [ -n "${gemm_alone:-}" ]; then
	exit $status
fi
