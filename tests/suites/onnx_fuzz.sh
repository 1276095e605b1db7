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
replay_each "$bin" tests/fuzz/onnx FUZZ_ONNX
suite_end
