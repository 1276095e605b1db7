#!/bin/sh
# tests/kernels.sh — the suites whose results pass through OpenBLAS or one
# of tir's vector paths, once under every kernel choice this machine can
# make, as other machines make them: OPENBLAS_CORETYPE set to Haswell,
# SkylakeX, Zen, Sandybridge and Prescott (x86-64 only; Debian's OpenBLAS is
# built for all of them and honours the variable), and TIR_VMATH set to each
# vector path this CPU has.  `make test-kernels` runs it and .ci/run calls
# it after `make test`, which runs under the machine's own choice.
#
# tests/suites/gemm.sh runs there too: the product cases on OpenBLAS under
# each OPENBLAS_CORETYPE (tests/run.sh pins TIR_GEMM=tir for the rest).
# The goldens are compared with tests/numdiff.py's tolerance, so they hold
# under every choice; what tir promises byte for byte (fused vs --no-fuse,
# --threads 1 vs N) is checked within each choice.  One line per setting
# with its counts (and its failures above it); the last line is
# "N passed, M failed" over all.  TESTS overrides the parts run (see
# tests/run.sh).
set -u

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
BUILD=${BUILD:-build}
parts=${TESTS:-unit,golden,samples,readme,oracle,fusion,plan_cache,memory,gemm,scratch}

settings=
case $(uname -m) in
x86_64 | amd64)
	for c in Haswell SkylakeX Zen Sandybridge Prescott; do
		settings="$settings OPENBLAS_CORETYPE=$c"
	done
	settings="$settings TIR_VMATH=scalar TIR_VMATH=sse2"
	flags=$(grep -m 1 '^flags' /proc/cpuinfo 2>/dev/null)
	case " $flags " in *" avx2 "*) case " $flags " in *" fma "*) settings="$settings TIR_VMATH=avx2" ;; esac ;; esac
	case " $flags " in *" avx512f "*) settings="$settings TIR_VMATH=avx512" ;; esac
	;;
*) settings="TIR_VMATH=scalar" ;;
esac

passed=0
failed=0
tmp=$(mktemp "${TMPDIR:-/tmp}/tir-kernels.XXXXXX") || exit 1
trap 'rm -f "$tmp"' EXIT INT TERM
for s in $settings; do
	env "$s" TESTS="$parts" BUILD="$BUILD" sh tests/run.sh >"$tmp" 2>&1
	last=$(tail -n 1 "$tmp")
	c=$(echo "$last" | sed -n 's/^\([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed$/\1 \2/p')
	if [ -z "$c" ]; then
		echo "$s: FAILED: tests/run.sh gave no summary"
		tail -n 5 "$tmp"
		failed=$((failed + 1))
		continue
	fi
	# shellcheck disable=SC2086 # "N M": split on purpose
	set -- $c
	# what failed: every line that says so, not the summaries of the
	# parts that passed (each ends "0 failed")
	[ "$2" -eq 0 ] || grep -i 'fail' "$tmp" | grep -v ' 0 failed$' | head -n 40
	echo "$s: $1 passed, $2 failed"
	passed=$((passed + $1))
	failed=$((failed + $2))
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
