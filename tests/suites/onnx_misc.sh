#!/bin/sh
# tests/suites/onnx_misc.sh — ONNX models of tests/onnx/misc_models.py
# (the signal ops, opset 6's broadcast, BitShift, the unsigned types, a
# bfloat16 input given as a uint16 .pb of its bits) run
# by `tir run MODEL.onnx` and checked against NumPy's results: the same
# dtype and shape, within rtol 1e-5 and atol 1e-5; then a uint64 input
# of 2^63 or more refused when it is read.
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
		f=$m/$name.$i.npy
		[ -f "$f" ] || f=$m/$name.$i.pb
		args="$args --input $i=$f"
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
$py -c "import numpy as n, sys; from onnx import numpy_helper as h
open(sys.argv[1], 'wb').write(h.from_array(n.array([2 ** 63, 1, 1], n.uint64), 'a').SerializeToString())" "$tmp/big.pb"
if ! $tir run "$m/mod_u64.onnx" --input "a=$tmp/big.pb" --input "b=$m/mod_u64.b.pb" --save "y=$tmp/big.npy" \
	>/dev/null 2>"$tmp/err" && grep -q "uint64 value 9223372036854775808 at 0 is 2^63 or more" "$tmp/err"
then ok; else bad "a uint64 input of 2^63: $(cat "$tmp/err")"; fi
suite_end
