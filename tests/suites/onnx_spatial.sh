#!/bin/sh
# tests/suites/onnx_spatial.sh — the ONNX importer's spatial ops (Resize,
# Upsample, Einsum with '...', 3-D Conv, 3-D and dilated pools) on models
# made by tests/onnx/spatial.py, each checked against ONNX's reference
# generator, NumPy or PyTorch; bad attributes refused with their message.
set -u
. "$(dirname "$0")/../sh-suite.sh"
suite_begin onnx_spatial
if ! $py tests/onnx/spatial.py --tir "$tir" --dir "$tmp" >"$tmp/out" 2>"$tmp/err"; then
	bad "spatial.py failed: $(tail -n 3 "$tmp/err")"
fi
while read -r status rest; do
	case $status in
	ok) ok ;;
	*) bad "$status $rest" ;;
	esac
done <"$tmp/out"
[ "$pass" -ge 50 ] || bad "only $pass cases ran"
suite_end
