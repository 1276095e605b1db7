#!/bin/sh
# tests/suites/shift.sh — left_shift and right_shift against NumPy's
# np.left_shift and np.right_shift: every integer dtype, broadcasting,
# shifts past the width and negative counts and values; a float operand
# refused at check.
set -u
. "$(dirname "$0")/../sh-suite.sh"
suite_begin shift
for dt in i8 u8 i16 i32 i64; do
	$py - "$tmp" "$dt" <<'PY' || { bad "$dt: making the inputs failed"; continue; }
import sys
import numpy as np
tmp, dt = sys.argv[1], sys.argv[2]
t = {"i8": np.int8, "u8": np.uint8, "i16": np.int16, "i32": np.int32, "i64": np.int64}[dt]
info = np.iinfo(t)
rng = np.random.default_rng(3)
a = rng.integers(info.min, info.max, size=(4, 6), dtype=t, endpoint=True)
a[0, :3] = [info.min, info.max, 0]
width = np.dtype(t).itemsize * 8
b = rng.integers(0, width + 3, size=(6,)).astype(t)
if info.min < 0:
    b[0] = -1
b[1] = width
np.save("%s/a.npy" % tmp, a)
np.save("%s/b.npy" % tmp, b)
with np.errstate(all="ignore"):
    np.save("%s/l.npy" % tmp, np.left_shift(a, b))
    np.save("%s/r.npy" % tmp, np.right_shift(a, b))
with open("%s/s.tir" % tmp, "w") as f:
    f.write("input a: %s[4, 6]\ninput b: %s[6]\nl = left_shift(a, b)\nr = right_shift(a, b)\n" % (dt, dt))
PY
	if $tir run "$tmp/s.tir" --input "a=$tmp/a.npy" --input "b=$tmp/b.npy" --save "l=$tmp/lo.npy" \
		--save "r=$tmp/ro.npy" --quiet >/dev/null 2>"$tmp/err" &&
	   $py -c "import numpy as n, sys
for x, y in (('lo', 'l'), ('ro', 'r')):
    a = n.load(sys.argv[1] + '/' + x + '.npy'); b = n.load(sys.argv[1] + '/' + y + '.npy')
    if a.dtype != b.dtype or not n.array_equal(a, b):
        sys.exit('%s: %s %s\n%s\n%s' % (y, a.dtype, b.dtype, a, b))" "$tmp" 2>"$tmp/diff"
	then ok; else bad "$dt: $(cat "$tmp/err" "$tmp/diff")"; fi
done
# floats are refused where the program is checked
printf 'x = left_shift([1.5], [1])\nprint x\n' >"$tmp/f.tir"
if ! $tir run "$tmp/f.tir" >/dev/null 2>"$tmp/err" && grep -q 'left_shift: integer operands only, not f32' "$tmp/err"
then ok; else bad "a float operand: $(cat "$tmp/err")"; fi
suite_end
