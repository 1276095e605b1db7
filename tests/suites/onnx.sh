#!/bin/sh
# tests/suites/onnx.sh — the ONNX conformance tests tir passes stay passed:
# tests/onnx/run.py runs exactly those listed in tests/onnx/pass.txt (from
# Debian's libonnx-testdata: import, run, outputs compared as ONNX's backend
# runner does) and fails if any of them is wrong, unsupported or missing.
# `make test-onnx` runs the whole suite and prints its counts.
set -u
. "$(dirname "$0")/../sh-suite.sh"
suite_begin onnx
if $py tests/onnx/run.py --tir "$tir" --list tests/onnx/pass.txt >"$tmp/out" 2>&1; then
	tail -n 1 "$tmp/out"
	exit 0
fi
grep -vE '^onnx: left out' "$tmp/out" | sed 's/^/    /'
tail -n 1 "$tmp/out"
exit 1
