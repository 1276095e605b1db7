#!/bin/sh
# bench/remote.sh — the remote section of the benchmarks: starts `tir serve`
# on a free loopback port (and a sink that reads uploads and drops them),
# runs $BUILD/bench/remote_bench against them and prints a table of
# medians.  bench/run.sh runs it as a section; alone:
#     make build/bench/remote_bench && sh bench/remote.sh
# RUNS (default 1000) is the round trips timed, BIG (default 7) the
# 256 MiB uploads and downloads.  Not a test.
set -u

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
BUILD=${BUILD:-build}
RUNS=${RUNS:-1000}
BIG=${BIG:-7}
tir=${TIR_SERVE_BIN:-$BUILD/tir} # the server (another build's with TIR_SERVE_BIN)
bench=$BUILD/bench/remote_bench
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tir-rbench.XXXXXX") || exit 1
spid=
fpid=
cleanup() {
	[ -n "$spid" ] && kill "$spid" 2>/dev/null && wait "$spid" 2>/dev/null
	[ -n "$fpid" ] && kill "$fpid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
unset TIR_TOKEN

kv() {
	sed -n "s/^$2 //p" "$1"
}

if [ ! -x "$bench" ]; then
	echo "  $bench is missing (make build/bench/remote_bench)"
	exit 1
fi
"$tir" serve --port 0 2>"$tmp/serve.log" &
spid=$!
/usr/bin/python3 tests/net/remote_fake.py sink >"$tmp/sink.port" &
fpid=$!
addr=
i=0
while [ $i -lt 100 ] && { [ -z "$addr" ] || [ ! -s "$tmp/sink.port" ]; }; do
	sleep 0.05
	addr=$(sed -n 's|^tir serve: listening on http://\(127\.0\.0\.1:[0-9]*\) (protocol [0-9]*)$|\1|p' "$tmp/serve.log")
	i=$((i + 1))
done
if [ -z "$addr" ] || [ ! -s "$tmp/sink.port" ]; then
	echo "  the server or the sink did not start"
	cat "$tmp/serve.log"
	exit 1
fi
sink=127.0.0.1:$(head -n 1 "$tmp/sink.port")

status=0
"$bench" "$addr" --runs "$RUNS" --big "$BIG" --server-pid "$spid" >"$tmp/r" 2>"$tmp/err" || status=1
"$bench" "$sink" --only put --big "$BIG" >"$tmp/s" 2>>"$tmp/err" || status=1
if [ $status -ne 0 ]; then
	echo "  remote_bench FAILED"
	cat "$tmp/err"
	exit 1
fi
r=$tmp/r
s=$tmp/s
mib=$(($(kv "$r" up_bytes) / 1048576))
printf '  %-46s %s\n' "figure" "median"
printf '  %-46s %s\n' "round trip, one-op batch (aim < 200 us)" \
	"$(kv "$r" rt_median_us) us (min $(kv "$r" rt_min_us), p90 $(kv "$r" rt_p90_us); $(kv "$r" rt_round_trips_per_run) requests, $(kv "$r" rt_bytes_up) B up, $(kv "$r" rt_bytes_down) B down)"
printf '  %-46s %s\n' "  GET /healthz (the transport alone)" "$(kv "$r" healthz_median_us) us"
sha=$(kv "$r" ref_sha256_gbps)
mc=$(kv "$r" ref_memcpy_gbps)
# x / the SHA-256 reference and / the memcpy one
ratio() {
	awk -v x="$1" -v s="$sha" -v m="$mc" 'BEGIN { printf "%.2f x SHA-256, %.2f x memcpy", x / s, x / m }'
}
up=$(kv "$r" up_run_gbps)
down=$(kv "$r" down_run_gbps)
printf '  %-46s %s\n' "upload $mib MiB f32, fresh (aim >= 2)" \
	"$up GB/s ($(kv "$r" up_run_ms) ms: hash, 409, PUT, run; $(ratio "$up"))"
printf '  %-46s %s\n' "  the first ones, into a fresh server" "$(kv "$r" up_cold_gbps) GB/s ($(kv "$r" up_cold_ms) ms; fresh pages: see bench/README.md)"
printf '  %-46s %s\n' "  CPU per upload, client + server" "$(kv "$r" up_cpu_client_ms) + $(kv "$r" up_cpu_server_ms) ms"
printf '  %-46s %s\n' "  its name: chunk list hashed on all CPUs" "$(kv "$r" up_hash_gbps) GB/s ($(kv "$r" up_hash_ms) ms)"
printf '  %-46s %s\n' "  PUT to tir serve (checked as it arrives)" "$(kv "$r" up_put_gbps) GB/s ($(kv "$r" up_put_ms) ms)"
printf '  %-46s %s\n' "  PUT to a sink (the client's side alone)" "$(kv "$s" up_put_gbps) GB/s ($(kv "$s" up_put_ms) ms)"
printf '  %-46s %s\n' "download $mib MiB f32 result (aim >= 2)" \
	"$down GB/s ($(kv "$r" down_run_ms) ms: request, run, results; $(ratio "$down"))"
printf '  %-46s %s\n' "  CPU per download, client + server" "$(kv "$r" down_cpu_client_ms) + $(kv "$r" down_cpu_server_ms) ms"
printf '  %-46s %s\n' "  reference: SHA-256, one core (OpenSSL)" "$sha GB/s"
printf '  %-46s %s\n' "  reference: memcpy of 256 MiB" "$mc GB/s"
printf '  %-46s %s\n' "samples/mlp.tir remote / local (aim <= 1.1)" \
	"$(kv "$r" mlp_ratio) ($(kv "$r" mlp_remote_ms) ms / $(kv "$r" mlp_local_ms) ms, in process, graph cached)"
