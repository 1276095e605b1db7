#!/bin/sh
# tests/fuzz/run.sh SECONDS — build the libFuzzer target tests/fuzz/fuzz_parse.c
# with ASan and UBSan into build-fuzz/ (`make fuzz-parse`: the Makefile's own
# sources and flags, with clang) and run it for SECONDS (default 60) on a
# copy of the seed corpus (build-fuzz/corpus, which keeps what earlier runs
# found; the repository's corpus stays small).  Exit 1 when the fuzzer
# finds a crash, a leak, undefined behaviour or a timeout, or does not
# build; the reproducers are build-fuzz/artifacts/crash-* (or leak-,
# timeout-, oom-).  Replay one with: build-fuzz/tests/fuzz_parse FILE
# `make fuzz FUZZTIME=600` calls this.  The corpus itself is replayed by
# every `make test` (tests/suites/fuzz_parse.sh), without libFuzzer.
set -eu

secs=${1:-60}
# the target: fuzz_parse (the default; seeds tests/fuzz/corpus) or
# fuzz_onnx (the ONNX importer; seeds tests/fuzz/onnx, `make fuzz-onnx`)
target=${2:-fuzz_parse}
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=build-fuzz

sh tests/deps.sh clang libclang-rt-14-dev

seeds=tests/fuzz/corpus corpus=$out/corpus dict=-dict=tests/fuzz/tir.dict maxlen=4096
[ "$target" = fuzz_onnx ] && seeds=tests/fuzz/onnx corpus=$out/corpus-onnx dict= maxlen=65536
mkdir -p "$out/artifacts" "$corpus"
bin=$out/tests/$target
mk=$(echo "$target" | tr _ -)
if ! ${MAKE:-make} --no-print-directory "$mk"; then
	echo "fuzz: FAILED: $bin does not build (make $mk)"
	exit 1
fi

cp "$seeds"/* "$corpus/"
# Fork mode goes on after a crash, so one run finds every bug it can in the
# time given; each crash leaves a reproducer in $out/artifacts.
before=$(find "$out/artifacts" -type f | wc -l)
echo "fuzz: running $bin for ${secs}s on $corpus"
status=0
"$bin" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
	-max_total_time="$secs" -max_len=$maxlen -timeout=10 -rss_limit_mb=2048 \
	$dict -artifact_prefix="$out/artifacts/" \
	"$corpus" >"$out/fuzz.log" 2>&1 || status=$?
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
