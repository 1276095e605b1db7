#!/bin/sh
# tests/suites/onnx_fuzz.sh — the ONNX importer's fuzz target builds and its
# seeds replay: $BUILD/tests/fuzz_onnx (tests/fuzz/fuzz_onnx.c with the
# plain main tests/fuzz/replay.c) runs on each file of tests/fuzz/onnx
# (well-formed models, and hostile ones: malformed, lying sizes, a cycle,
# huge dimensions, an escaping path).  `make fuzz` runs it under libFuzzer.
set -u
. "$(dirname "$0")/../sh-suite.sh"
suite_begin onnx_fuzz
bin=$BUILD/tests/fuzz_onnx
if [ ! -x "$bin" ]; then
	bad "$bin is missing: make builds it (FUZZ_ONNX)"
	suite_end
	exit 1
fi
n=0
for f in tests/fuzz/onnx/*; do
	[ -f "$f" ] || continue
	n=$((n + 1))
	if timeout 60 "$bin" "$f" >"$tmp/out" 2>&1; then ok; else
		bad "$f: the target failed (exit $?):"
		tail -n 5 "$tmp/out" | sed 's/^/    /'
	fi
done
[ "$n" -ge 10 ] && ok || bad "tests/fuzz/onnx holds $n files (10 at least expected)"
suite_end
