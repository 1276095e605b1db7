#!/bin/sh
# tests/fuzz/run.sh SECONDS — build the libFuzzer target tests/fuzz/fuzz_parse.c
# with ASan and UBSan into build-fuzz/ and run it for SECONDS (default 60)
# on a copy of the seed corpus (build-fuzz/corpus, which keeps what earlier
# runs found; the repository's corpus stays small).  Exit 1 when the
# fuzzer finds a crash, a leak, undefined behaviour or a timeout; the
# reproducers are build-fuzz/artifacts/crash-* (or leak-, timeout-, oom-).
# Replay one with: build-fuzz/fuzz_parse FILE
# `make fuzz FUZZTIME=600` calls this.  Not a regression suite: the corpus
# files are replayed by `make fuzz` only.
set -eu

secs=${1:-60}
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=build-fuzz

sh tests/deps.sh clang libclang-rt-14-dev

CC=${FUZZ_CC:-clang}
pkgs="jansson openblas sleef"
mkdir -p "$out/artifacts" "$out/corpus"

# Rebuild when any source is newer than the binary.
bin=$out/fuzz_parse
srcs="$(ls lib/*/*.c 2>/dev/null | grep -v "^lib/net/") lib/net/door.c"  # the parser needs no network
stale=1
# shellcheck disable=SC2086
if [ -x "$bin" ] && [ -z "$(find $srcs lib/*.h lib/*/*.h lib/ir/ops.def \
	tests/fuzz/fuzz_parse.c -newer "$bin" 2>/dev/null | head -n 1)" ]; then
	stale=0
fi
if [ $stale = 1 ]; then
	echo "fuzz: building $bin"
	# shellcheck disable=SC2046,SC2086
	$CC -g -O1 -std=c11 -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=undefined -fno-omit-frame-pointer \
		-D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Ilib \
		$(pkg-config --cflags $pkgs) \
		-o "$bin" tests/fuzz/fuzz_parse.c $srcs \
		$(pkg-config --libs $pkgs) -lm -pthread
fi

cp tests/fuzz/corpus/* "$out/corpus/"
# Fork mode goes on after a crash, so one run finds every bug it can in the
# time given; each crash leaves a reproducer in $out/artifacts.
before=$(find "$out/artifacts" -type f | wc -l)
echo "fuzz: running $bin for ${secs}s on $out/corpus"
status=0
"$bin" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
	-max_total_time="$secs" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
	-dict=tests/fuzz/tir.dict -artifact_prefix="$out/artifacts/" \
	"$out/corpus" >"$out/fuzz.log" 2>&1 || status=$?
grep -E '^#[0-9]+: cov|DONE|INFO: exiting' "$out/fuzz.log" | tail -n 3
after=$(find "$out/artifacts" -type f | wc -l)
if [ "$after" -gt "$before" ]; then
	echo "fuzz: FAILED: $((after - before)) new reproducer(s); full log in $out/fuzz.log:"
	# shellcheck disable=SC2012 # the names are libFuzzer's hex hashes
	ls -1t "$out/artifacts/" | head -n $((after - before)) | sed "s|^|  $out/artifacts/|"
	exit 1
fi
if [ $status -ne 0 ]; then
	tail -n 20 "$out/fuzz.log"
	echo "fuzz: FAILED (exit $status); full log in $out/fuzz.log"
	exit 1
fi
echo "fuzz: no crash in ${secs}s"
