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

exit $status
