#!/usr/bin/env python3
"""tests/numdiff.py EXPECTED GOT — compare a golden stdout with a run's, the
way every golden, sample and README or docs example is compared: the text exactly,
and the floating-point numbers within a stated tolerance.

Why: a value computed through OpenBLAS (matmul, conv2d, attention, and what
reads them) or through one of tir's vector paths (SLEEF's functions per ISA,
the vector sums) may differ in its last bits between machines, because
OpenBLAS and tir pick kernels by CPU (OPENBLAS_CORETYPE, TIR_VMATH).  The
digits printed at 6 significant digits then move in the last place.  So a
golden may not be compared byte for byte across machines; what tir promises
byte for byte holds on one machine and is compared exactly elsewhere
(fused vs --no-fuse, --threads 1 vs N, local vs --remote).

The rule (docs/commands.md's "Results across machines" says it for users):
  - the output is read as values: a header line `TEXT: DTYPE[SHAPE]`, then
    the lines that print it.  Every header line must be equal exactly;
  - the text between the numbers must be equal exactly, and so must the
    count of numbers, every `nan`/`inf`, and every number of an integer or
    bool value (i32, i64, u8, bool, ...);
  - a float number may differ by at most
        RTOL * max(|expected|, SCALE)
    where SCALE is the largest finite magnitude among the expected numbers
    of the same value (a value's small elements are as exact as its large
    ones, in absolute terms: a sum that cancels to 1e-8 on one machine may
    be -3e-9 on another), and RTOL is 1e-4: ten units in the sixth
    significant digit of the value's largest element.  The largest
    difference seen over the samples, goldens and docs examples between
    OpenBLAS's own choice, its Haswell, SkylakeX, Zen, Sandybridge and
    Prescott kernels and tir's scalar, sse2, avx2 and avx512 paths was
    4.2e-6 of that scale (--report prints it for one comparison).
  TIR_NUMDIFF_RTOL overrides RTOL (for measuring, never in a test).

Exit 0 when the outputs agree, 1 (with where and what on stdout) when they
do not, 2 on bad usage.  --report prints the largest relative difference
found (as a fraction of the bound's scale) even when they agree.
"""
import math
import os
import re
import sys

RTOL = float(os.environ.get("TIR_NUMDIFF_RTOL", "1e-4"))

HEADER = re.compile(r"^.*: (bool|[iuf][0-9]+|bf16)\[[0-9, ]*\]$")
INT_DTYPE = re.compile(r"^(bool|[iu][0-9]+)$")
# a number not glued to a name (f32, x1, t0) nor part of a longer token
NUMBER = re.compile(r"(?<![\w.])[-+]?(?:inf|nan|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)(?![\w.])")


def values(text):
    """[(header or None, [lines])]: the output cut at its header lines"""
    out = [(None, [])]
    for line in text.split("\n"):
        if HEADER.match(line):
            out.append((line, []))
        else:
            out[-1][1].append(line)
    return out


def split(line):
    """(texts between the numbers, the numbers as strings)"""
    return NUMBER.split(line), NUMBER.findall(line)


def as_float(s):
    try:
        return float(s)
    except ValueError:
        return None


def compare(want_text, got_text):
    """(None or a message, the largest |diff| / bound scale seen)"""
    want_vals, got_vals = values(want_text), values(got_text)
    worst = 0.0
    if len(want_vals) != len(got_vals):
        return (f"{len(want_vals) - 1} values expected, {len(got_vals) - 1} printed", worst)
    lineno = 0
    for (wh, wl), (gh, gl) in zip(want_vals, got_vals):
        if wh is not None:
            lineno += 1
            if wh != gh:
                return (f"line {lineno}: header differs:\n  expected: {wh}\n  got:      {gh}", worst)
        dtype = HEADER.match(wh).group(1) if wh else None
        exact = dtype is not None and INT_DTYPE.match(dtype) is not None
        if len(wl) != len(gl):
            return (f"line {lineno + 1}: {len(wl)} lines expected for this value, {len(gl)} printed", worst)
        nums = [as_float(n) for line in wl for n in NUMBER.findall(line)]
        scale = max([abs(v) for v in nums if v is not None and math.isfinite(v)] or [0.0])
        for wline, gline in zip(wl, gl):
            lineno += 1
            if wline == gline:
                continue
            wt, wn = split(wline)
            gt, gn = split(gline)
            if wt != gt or len(wn) != len(gn):
                return (f"line {lineno}: the text differs:\n  expected: {wline}\n  got:      {gline}", worst)
            for k, (a, b) in enumerate(zip(wn, gn)):
                if a == b:
                    continue
                va, vb = as_float(a), as_float(b)
                if exact or not (math.isfinite(va) and math.isfinite(vb)):
                    return (f"line {lineno}, number {k + 1}: expected {a}, got {b} (compared exactly)", worst)
                bound_scale = max(abs(va), scale)
                rel = abs(va - vb) / bound_scale if bound_scale > 0 else math.inf
                worst = max(worst, rel)
                if rel > RTOL:
                    return (f"line {lineno}, number {k + 1}: expected {a}, got {b}: differs by "
                            f"{abs(va - vb):.3g}, more than {RTOL:g} x {bound_scale:.6g}", worst)
    return (None, worst)


def main(argv):
    report = "--report" in argv
    args = [a for a in argv[1:] if a != "--report"]
    if len(args) != 2:
        print("usage: numdiff.py [--report] EXPECTED GOT", file=sys.stderr)
        return 2
    try:
        with open(args[0], encoding="utf-8", errors="surrogateescape") as f:
            want = f.read()
        with open(args[1], encoding="utf-8", errors="surrogateescape") as f:
            got = f.read()
    except OSError as e:
        print(f"numdiff: {e}", file=sys.stderr)
        return 2
    msg, worst = compare(want, got)
    if report:
        print(f"largest relative difference: {worst:.3g} (tolerance {RTOL:g})")
    if msg:
        print(f"{args[0]}: {msg}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
