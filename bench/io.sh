#!/bin/sh
# bench/io.sh — the io section of the benchmarks: loading many tensors of
# one checkpoint, the round trips of a fresh remote run (on loopback and
# through bench/delay.py, a proxy adding DELAY ms a round trip), and
# uploads on a CPU without SHA extensions (OpenSSL told so by
# OPENSSL_ia32cap, given to the bench's own processes only).  bench/run.sh
# runs it as a section; alone:
#     make build/bench/remote_bench && sh bench/io.sh
# DELAY (default 10) is the proxy's milliseconds a round trip; RUNS
# (default 5) the runs of each median; SHA_MASK=0 skips the masked uploads;
# TIR_BIN another build's tir to time (both client and server).
# Not a test.
set -u

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
BUILD=${BUILD:-build}
DELAY=${DELAY:-10}
RUNS=${RUNS:-5}
SHA_MASK=${SHA_MASK:-1}
tir=${TIR_BIN:-$root/$BUILD/tir}
py=/usr/bin/python3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tir-iobench.XXXXXX") || exit 1
spid=
ppid_=
cleanup() {
	[ -n "$spid" ] && kill "$spid" 2>/dev/null && wait "$spid" 2>/dev/null
	[ -n "$ppid_" ] && kill "$ppid_" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
unset TIR_TOKEN

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "?" }'; }
now_us() { echo $(($(date +%s%N) / 1000)); }

# start_server: a fresh `tir serve --port 0`; sets spid and port
start_server() {
	"$tir" serve --port 0 2>"$tmp/serve.log" &
	spid=$!
	port=
	i=0
	while [ $i -lt 200 ] && [ -z "$port" ]; do
		sleep 0.05
		port=$(sed -n 's|^tir serve: listening on http://127\.0\.0\.1:\([0-9]*\) .*|\1|p' "$tmp/serve.log")
		i=$((i + 1))
	done
	[ -n "$port" ]
}
stop_server() {
	kill "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	spid=
}

printf '  %-46s %s\n' "figure" "median"

# ---- 100 loads of one tensor of samples/gpt2.safetensors (152 tensors) ----
{
	echo "ck = \"$root/samples/gpt2.safetensors\""
	echo 'x = load(ck, "h.0.mlp.c_fc.weight")'
	i=1
	while [ $i -lt 100 ]; do
		echo 'x = x + load(ck, "h.0.mlp.c_fc.weight")'
		i=$((i + 1))
	done
	echo 'print sum(x)'
} >"$tmp/load100.tir"
: >"$tmp/parse"
: >"$tmp/run"
i=0
while [ $i -lt "$RUNS" ]; do
	"$tir" run --profile "$tmp/load100.tir" >/dev/null 2>"$tmp/err"
	sed -n 's/^parse \([0-9.]*\) ms .* run \([0-9.]*\) ms .*/\1/p' "$tmp/err" >>"$tmp/parse"
	sed -n 's/^parse \([0-9.]*\) ms .* run \([0-9.]*\) ms .*/\2/p' "$tmp/err" >>"$tmp/run"
	i=$((i + 1))
done
printf '  %-46s %s\n' "100 loads of one tensor of a 152-tensor file" \
	"parse $(median <"$tmp/parse") ms, run $(median <"$tmp/run") ms (header read once)"

# ---- a fresh remote run of samples/gpt2.tir: round trips, time ----
# fresh_runs PORT: RUNS first runs, each against a fresh server (reached
# at PORT's proxy when one is up); prints "round trips, median ms"
fresh_runs() {
	: >"$tmp/ms"
	rt=?
	i=0
	while [ $i -lt "$RUNS" ]; do
		start_server || { echo "the server did not start"; return 1; }
		to=$port
		if [ -n "${1:-}" ]; then
			: >"$tmp/proxy.port"
			$py bench/delay.py "$port" "$1" >"$tmp/proxy.port" &
			ppid_=$!
			j=0
			while [ $j -lt 100 ] && [ ! -s "$tmp/proxy.port" ]; do sleep 0.05; j=$((j + 1)); done
			to=$(head -n 1 "$tmp/proxy.port")
		fi
		t0=$(now_us)
		"$tir" run --profile samples/gpt2.tir --remote "127.0.0.1:$to" >/dev/null 2>"$tmp/err"
		t1=$(now_us)
		echo $(((t1 - t0) / 1000)) >>"$tmp/ms"
		rt=$(sed -n 's/.* · net [0-9.]* ms (\([0-9]*\) round trips, .*/\1/p' "$tmp/err")
		[ -n "$ppid_" ] && kill "$ppid_" 2>/dev/null && wait "$ppid_" 2>/dev/null
		ppid_=
		stop_server
		i=$((i + 1))
	done
	echo "${rt:-?} round trips, $(median <"$tmp/ms") ms"
}
printf '  %-46s %s\n' "gpt2 first remote run, loopback (aim <= 4 RT)" "$(fresh_runs)"
printf '  %-46s %s\n' "  through a proxy adding $DELAY ms a round trip" "$(fresh_runs "$DELAY")"

# ---- uploads without SHA extensions ----
# OPENSSL_ia32cap masks CPUID leaf 7 EBX bit 29 (SHA) for OpenSSL in the
# processes it is given to: the bench's client and server, not this shell
if [ "$SHA_MASK" != 0 ] && [ -x "$BUILD/bench/remote_bench" ]; then
	if OPENSSL_ia32cap=":~0x20000000" RUNS=20 BIG=${BIG:-5} sh bench/remote.sh >"$tmp/up" 2>&1; then
		sed -n 's/^  \(upload .*\)$/  SHA masked: \1/p; s/^  \(  the first ones.*\)$/  \1/p;
			s/^  \(  its name: .*\)$/  \1/p; s/^  \(  PUT to tir serve.*\)$/  \1/p;
			s/^  \(  reference: SHA-256.*\)$/  \1/p' "$tmp/up"
	else
		echo "  SHA masked: remote.sh FAILED"
		cat "$tmp/up"
	fi
	if OPENSSL_ia32cap=":~0x20000000" $py bench/first_upload.py "$tir" >"$tmp/first" 2>&1; then
		printf '  %-46s %s\n' "SHA masked: first PUT of 256 MiB, fresh server" \
			"$(sed -n 's/^first_gbs //p' "$tmp/first") GB/s ($(sed -n 's/^first_cpu_ms //p' "$tmp/first") ms server CPU), later $(sed -n 's/^later_gbs //p' "$tmp/first") GB/s ($(sed -n 's/^later_cpu_ms //p' "$tmp/first") ms)"
	else
		echo "  SHA masked: first_upload.py FAILED"
		cat "$tmp/first"
	fi
	if OPENSSL_ia32cap=":~0x20000000" $py bench/xfer.py "$tir" --runs 3 >"$tmp/xfer" 2>&1; then
		printf '  %-46s %s\n' "SHA masked: server to server, 64 MiB (aim >= 2)" \
			"$(sed -n 's/^import_gbs //p' "$tmp/xfer") GB/s import ($(sed -n 's/^import_ms //p' "$tmp/xfer") ms)"
	else
		echo "  SHA masked: xfer.py FAILED"
		cat "$tmp/xfer"
	fi
fi
