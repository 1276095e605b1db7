#!/bin/sh
# tests/suites/onnx_misc.sh — ONNX models of tests/onnx/misc_models.py
# (the signal ops, opset 6's broadcast, BitShift, the unsigned types) run
# by `tir run MODEL.onnx` and checked against NumPy's results: the same
# dtype and shape, within rtol 1e-5 and atol 1e-5.
set -u
. "$(dirname "$0")/../sh-suite.sh"
suite_begin onnx_misc
m=$tmp/models
if ! $py tests/onnx/misc_models.py "$m" >"$tmp/make.out" 2>&1; then
	bad "misc_models.py failed: $(tail -n 1 "$tmp/make.out")"
	suite_end
	exit 1
fi
while read -r name ins; do
	args=
	for i in $ins; do
		args="$args --input $i=$m/$name.$i.npy"
	done
	# shellcheck disable=SC2086
	if $tir run "$m/$name.onnx" $args --save "y=$tmp/$name.npy" --quiet >/dev/null 2>"$tmp/err" &&
	   $py -c "import numpy as n, sys
a = n.load(sys.argv[1]); b = n.load(sys.argv[2])
ok = a.shape == b.shape and a.dtype == b.dtype and n.allclose(a, b, rtol=1e-5, atol=1e-5)
sys.exit(0 if ok else print(a.dtype, a.shape, b.dtype, b.shape, abs(a.astype(float) - b).max() if a.shape == b.shape else '') or 1)" \
		"$tmp/$name.npy" "$m/$name.expect.npy" >"$tmp/diff" 2>&1
	then ok; else bad "$name: $(cat "$tmp/err" "$tmp/diff")"; fi
done <"$m/cases"
suite_end
